"""A session's notes: those told, then the host's steal read from the runs so far."""

from __future__ import annotations

import pytest

from iowall.analysis.explain.verdict import STEAL
from iowall.measure import session as session_mod
from iowall.model import Metric, Point, Run


def _run(steal: float) -> Run:
    return Run(Point("plan:s", {}), "s", "ok", 0.0, 1.0, metrics=(Metric(STEAL, steal, "share"),))


def test_the_steal_note_follows_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Told notes stay, once each; the steal note is read from the runs at each look, so a
    second batch of points replaces the first one's figures rather than adding a second note."""
    monkeypatch.setattr(session_mod, "fio_version", lambda: (3, 39))
    monkeypatch.setattr(session_mod, "memcopy_reference", lambda: None)
    s = session_mod.Session(store=None, label="s")  # type: ignore[arg-type]
    s.note("a", "a", "b")
    assert s.notes == ["a", "b"]
    s.schedule.runs += [_run(0.0), _run(0.12)]
    (told_a, told_b, steal) = s.notes
    assert (told_a, told_b) == ("a", "b") and "12.0% of the CPU time (steal) during 1 of 2 runs" in steal
    s.schedule.runs.append(_run(0.3))
    (steal,) = [n for n in s.notes if "(steal)" in n]
    assert "12.0%-30.0% of the CPU time (steal) during 2 of 3 runs" in steal and len(s.notes) == 3
