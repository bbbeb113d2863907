"""small-file-writeback's dirty limits and room: the --set dirty_bytes axis, its conflict with
a sysctl knob, and how many files a stream may create on a bed."""

from __future__ import annotations

import pytest

from iowall.recipes import small_file_writeback as sfw
from iowall.recipes.options import RecipeOptions
from iowall.vocab.errors import UserError
from iowall.vocab.units import GIB, MIB


def _opts(*sets: tuple[str, tuple[object, ...]], knobs: tuple[tuple[str, str], ...] = ()) -> RecipeOptions:
    return RecipeOptions(quick=True, sets=tuple(sets), knobs=knobs)


def test_room_keeps_the_dirty_files_hold_aside() -> None:
    # 3 GiB free, 128 MiB dirty limit held six times over: 80% of the rest, 4.5 KiB a file
    free, held = 3 * GIB, sfw.HELD_PER_DIRTY * 128 * MIB
    n = sfw.room_files(free, held)
    assert n == int((free - held) * 0.8) // (4096 + 512)
    assert n * sfw.FILE_BYTES + held < free
    assert sfw.room_files(free, 0) > n
    assert sfw.room_files(MIB, 2 * MIB) == 1  # no room left: one file, never zero or negative


def test_dirty_axis() -> None:
    assert sfw._options(_opts()).dirty is None  # a 32nd of the bed, decided once it exists
    assert sfw._options(_opts(("dirty_bytes", ("kernel",)))).dirty == sfw.KERNEL
    assert sfw._options(_opts(("dirty_bytes", ("256M",)))).dirty == 256 * MIB
    with pytest.raises(UserError, match="at least 2M"):
        sfw._options(_opts(("dirty_bytes", ("1M",))))
    with pytest.raises(UserError, match="dirty_bytes"):
        sfw._options(_opts(("dirty_bytes", ("lots",))))


def test_a_dirty_knob_holds_and_conflicts_with_the_axis() -> None:
    knobs = (("sysctl:vm.dirty_bytes", "268435456"),)
    assert sfw._options(_opts(knobs=knobs)).dirty_knob == knobs[0]
    with pytest.raises(UserError, match="both set the dirty limits"):
        sfw._options(_opts(("dirty_bytes", ("64M",)), knobs=knobs))


def test_the_limit_set_is_the_points_knob_and_compare_pairs_it_with_the_kernels() -> None:
    # `--set dirty_bytes=kernel` against the default: the same stream, the limit its treatment
    from types import SimpleNamespace
    from typing import Any

    from iowall.analysis.regress.compare import Side, compare
    from iowall.model import Metric, Run

    bed: Any = SimpleNamespace(path="/nonexistent")
    set_ = sfw._stream_task(None, bed, "default", 2, 10, 128 * MIB).point  # type: ignore[arg-type]
    kept = sfw._stream_task(None, bed, "default", 2, 10, sfw.KERNEL).point  # type: ignore[arg-type]
    assert set_.params[sfw.DIRTY_KNOB] == 128 * MIB and sfw.DIRTY_KNOB not in kept.params
    assert set_.key() != kept.key()  # history keeps them apart
    # the run's ceiling carries the knob too: a knob on some points only is no treatment
    session: Any = SimpleNamespace(drop_caches=None)
    ceilings = [sfw._ceiling_task(session, bed, 2, 10, GIB, d).point for d in (sfw.KERNEL, 128 * MIB)]

    def runs(point: Any, label: str, rate: float) -> list[Run]:
        return [
            Run(point, label, "ok", 0.0, 1.0, (Metric("files_per_s", rate + i, "files/s"),), repeat_index=i)
            for i in range(3)
        ]

    base = Side("kernel", runs(ceilings[0], "kernel", 1e5) + runs(kept, "kernel", 6e4))
    new = Side("scaled", runs(ceilings[1], "scaled", 1e5) + runs(set_, "scaled", 6.6e4))
    r = compare(base, [new])
    assert len(r.rows) == 2 and not r.unpaired


def test_where_one_flusher_would_hold_the_stream() -> None:
    # figures of the --quick run of 2026-12-02 02:15: 36.4k files/s, the flusher 34% busy,
    # 32.8k pages written a second; then a flusher busy 95% of a CPU: the wall
    from iowall.model import Metric, Point, Run
    from iowall.recipes.tables import Columns

    def stream(variant: str, files: float, busy: float, written: float) -> Run:
        p = Point(sfw.NAME, {"kind": "smallfiles", "variant": variant, "threads": 2})
        ms = (
            Metric("files_per_s", files, "files/s"),
            Metric("flusher_cpu_share", busy, "CPUs"),
            Metric("vm_nr_written_per_s", written, "pages_per_s"),
        )
        return Run(p, "a", "ok", 0.0, 1.0, ms)

    runs = [stream("default", 36400.0, 0.34, 32800.0), stream("extsize", 90000.0, 0.95, 88000.0)]
    runs.append(stream("idle", 30000.0, 0.02, 900.0))  # under FLUSHER_FLOOR: nothing said
    cols = Columns(("a",), {(r.point.key(), "a"): [r] for r in runs})
    notes = sfw._flusher_notes(cols, runs, "a")
    assert len(notes) == 2
    assert "96.5k pages per second of its CPU" in notes[0] and "2.7x the 36.4k files/s" in notes[0]
    assert "not this point's wall" in notes[0]
    assert notes[1].startswith("extsize, 2 threads") and "the flusher is this point's wall" in notes[1]
