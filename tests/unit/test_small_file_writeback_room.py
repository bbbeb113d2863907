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
