"""A plan's caveats (``plan.caveats``): time-based buffered writes under fio's default
invalidate are named before they run, in the dry run and in the plan's notes; what turns
the caveat off (invalidate = 0, direct, reads, not time-based) is not named."""

from __future__ import annotations

from typing import Any

from iowall.plan import plan_from_doc, preview
from iowall.plan.caveats import fio_caveats

WRITE = {"rw": "write", "bs": "1M", "size": "64M", "time_based": 1, "runtime": "5s"}


def _caveats(workload: dict[str, Any], axes: dict[str, Any] | None = None) -> tuple[str, ...]:
    plan = plan_from_doc({"label": "t", "workload": workload, "axes": axes or {}})
    return fio_caveats(plan.expand(), plan.workload)


def test_time_based_buffered_writes_are_told_of_fios_invalidate() -> None:
    (note,) = _caveats(WRITE)
    assert note.startswith("point 1: time-based buffered writes with fio's invalidate on")
    assert "fadvise(DONTNEED)" in note and "invalidate = 0 measures the writes alone" in note
    # by point number, where an axis turns it on and off
    axes = {"mode": ["buffered", "direct"], "rw": ["write", "randread", "randrw"]}
    (note,) = _caveats(WRITE, axes)
    assert note.startswith("points 1, 3:")


def test_what_turns_the_caveat_off() -> None:
    assert _caveats({**WRITE, "invalidate": 0}) == ()
    assert _caveats({**WRITE, "options": {"invalidate": 0}}) == ()
    assert _caveats({**WRITE, "direct": 1}) == ()
    assert _caveats({**WRITE, "options": {"buffered": 0}}) == ()
    assert _caveats({**WRITE, "mode": "uncached"}) == ()
    assert _caveats({**WRITE, "rw": "randread"}) == ()
    assert _caveats({k: v for k, v in WRITE.items() if k != "time_based"}) == ()


def test_the_dry_run_says_it() -> None:
    plan = plan_from_doc({"label": "t", "workload": WRITE})
    notes = preview(plan).notes
    assert any("fio's invalidate on" in n for n in notes)
    plan = plan_from_doc({"label": "t", "workload": {**WRITE, "invalidate": 0}})
    assert not any("invalidate" in n for n in preview(plan).notes)
