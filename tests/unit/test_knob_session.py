"""Knobs: syntax, read-back, journaled apply and restore (sysctl, sysfs on a real loop device,
the scheduler's bracketed read-back, the XFS extent size hint), and recovery after SIGKILL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.beds import Bed, BedSpec, provision
from iowall.machine import journal
from iowall.tuning.knob_session import (
    Knob,
    KnobSession,
    check_exists,
    knob_path,
    looks_like_knob,
    parse_knob,
    read_extsize,
    read_value,
    selected,
)
from iowall.vocab.errors import UserError
from tests.conftest import killed_after_setting_dirty_ratio, needs_root

DIRTY = "/proc/sys/vm/dirty_ratio"


def read(path: str) -> str:
    return Path(path).read_text().strip()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private journal for the test."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "iowall" / "journal"


# ------------------------------------------------------------------------------------------
# syntax


def test_parse_knob() -> None:
    assert parse_knob("sysctl:vm.dirty_ratio") == Knob("sysctl", "vm.dirty_ratio")
    assert parse_knob("sysfs:queue/max_sectors_kb") == Knob("sysfs", "queue/max_sectors_kb")
    thp = parse_knob("sysfs:/sys/kernel/mm/transparent_hugepage/enabled")
    assert not thp.needs_bed and thp.path() == "/sys/kernel/mm/transparent_hugepage/enabled"
    assert parse_knob("sysfs:queue/scheduler").needs_bed
    assert parse_knob("xfs:extsize").needs_bed
    assert parse_knob("mkfs").shapes_bed and parse_knob("mount").shapes_bed
    assert str(parse_knob("sysctl:vm.dirty_ratio")) == "sysctl:vm.dirty_ratio"
    assert parse_knob("sysctl:vm.dirty_ratio").path() == DIRTY
    assert looks_like_knob("sysctl:x") and looks_like_knob("mount")
    assert not looks_like_knob("jobs") and not looks_like_knob("nope:x")
    for bad, msg in [
        ("nope:x", "unknown knob"),
        ("sysctl:", "needs a name"),
        ("sysctl:vm/../x", "sysctl name"),
        ("sysfs:/etc/passwd", "only under"),
        ("sysfs:/sys/../etc/passwd", "only under"),
        ("sysfs:queue/../../x", "plain path"),
        ("xfs:nope", "xfs:extsize"),
    ]:
        with pytest.raises(UserError, match=msg):
            parse_knob(bad)


def test_check_exists() -> None:
    check_exists(parse_knob("sysctl:vm.dirty_ratio"))
    check_exists(parse_knob("sysfs:queue/anything"))  # relative: checked on the bed
    with pytest.raises(UserError, match="does not exist"):
        check_exists(parse_knob("sysctl:vm.no_such_thing"))
    with pytest.raises(UserError, match="does not exist"):
        check_exists(parse_knob("sysfs:/sys/kernel/mm/transparent_hugepage/no_such_thing"))


def test_selected() -> None:
    assert selected("[none] mq-deadline kyber bfq\n") == "none"
    assert selected("always [madvise] never") == "madvise"
    assert selected(" 20\n") == "20"
    assert selected("4096\t87380   6291456\n") == "4096 87380 6291456"


# ------------------------------------------------------------------------------------------
# real knobs (root)


@needs_root
def test_sysctl_applied_read_back_journaled_and_restored(state: Path) -> None:
    old = read(DIRTY)
    new = "7" if old != "7" else "8"
    with KnobSession() as ks:
        assert ks.set(parse_knob("sysctl:vm.dirty_ratio"), int(new)) == new
        assert read(DIRTY) == new
        assert ks.in_force == {"sysctl:vm.dirty_ratio": new}
        entries = list(state.glob("*.json"))
        assert len(entries) == 1 and f'"value": "{old}"' in entries[0].read_text()
    assert read(DIRTY) == old
    assert not list(state.glob("*.json"))


@needs_root
def test_restored_on_error(state: Path) -> None:
    old = read(DIRTY)
    with pytest.raises(RuntimeError):
        with KnobSession() as ks:
            ks.set(parse_knob("sysctl:vm.dirty_ratio"), 9 if old != "9" else 11)
            raise RuntimeError("boom")
    assert read(DIRTY) == old


@needs_root
def test_refused_value_is_a_user_error_naming_knob_and_value(state: Path) -> None:
    """Out of the documented range: refused by iowall before the write; a value only the
    kernel can judge (percpu_pagelist_high_fraction takes 0 or at least 8): the kernel's
    refusal, with nothing left changed or journaled."""
    old = read(DIRTY)
    frac = "/proc/sys/vm/percpu_pagelist_high_fraction"
    old_frac = read(frac)
    with KnobSession() as ks:
        with pytest.raises(UserError, match=r"sysctl:vm.dirty_ratio = 101: out of range"):
            ks.set(parse_knob("sysctl:vm.dirty_ratio"), 101)
        with pytest.raises(UserError, match=r"refused sysctl:vm.percpu_pagelist_high_fraction = 1"):
            ks.set(parse_knob("sysctl:vm.percpu_pagelist_high_fraction"), 1)
    assert read(DIRTY) == old and read(frac) == old_frac
    assert not list(state.glob("*.json"))


@needs_root
def test_dirty_bytes_setting_is_restored_through_its_partner(state: Path) -> None:
    """Writing dirty_ratio zeroes dirty_bytes; when dirty_bytes was the setting in force, it
    is what gets restored (restoring dirty_ratio=0 would set a zero limit)."""
    old_ratio, old_bytes = read(DIRTY), read("/proc/sys/vm/dirty_bytes")
    try:
        Path("/proc/sys/vm/dirty_bytes").write_text(str(512 << 20))
        assert read(DIRTY) == "0"
        with KnobSession() as ks:
            ks.set(parse_knob("sysctl:vm.dirty_ratio"), 15)
            assert read("/proc/sys/vm/dirty_bytes") == "0"
        assert read("/proc/sys/vm/dirty_bytes") == str(512 << 20)
    finally:
        if old_bytes != "0":
            Path("/proc/sys/vm/dirty_bytes").write_text(old_bytes)
        else:
            Path(DIRTY).write_text(old_ratio)
    assert read(DIRTY) == old_ratio


@needs_root
def test_sigkill_is_undone_by_the_next_start(state: Path, tmp_path: Path) -> None:
    old = read(DIRTY)
    new = "6" if old != "6" else "12"
    killed_after_setting_dirty_ratio(new, tmp_path / "state")
    assert read(DIRTY) == new  # nobody restored it …
    undone = journal.recover()  # … until the next start
    assert read(DIRTY) == old
    assert [a["path"] for a in undone if a.get("path") == DIRTY] == [DIRTY]


@pytest.fixture(scope="module")
def ram_bed() -> Iterator[Bed]:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, mkfs, mount)")
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=512 << 20) as bed:
        yield bed


@needs_root
def test_max_sectors_kb_on_the_loop_device(ram_bed: Bed, state: Path) -> None:
    assert ram_bed.device is not None
    attr = f"/sys/class/block/{os.path.basename(ram_bed.device)}/queue/max_sectors_kb"
    old = read(attr)
    knob = parse_knob("sysfs:queue/max_sectors_kb")
    assert knob_path(knob, ram_bed) == attr
    want = "64" if old != "64" else "128"
    with KnobSession(ram_bed) as ks:
        assert ks.set(knob, int(want)) == want
        assert read(attr) == want and read_value(knob, ram_bed) == want
    assert read(attr) == old
    with KnobSession(ram_bed) as ks:
        with pytest.raises(UserError, match=r"sysfs:queue/max_sectors_kb = 1: out of range"):
            ks.set(knob, 1)  # below one page: the kernel would say EINVAL
        hw = int(read(attr.replace("max_sectors_kb", "max_hw_sectors_kb")))
        with pytest.raises(UserError, match=f"at most max_hw_sectors_kb = {hw}"):
            ks.set(knob, hw * 2)
    assert read(attr) == old
    with pytest.raises(UserError, match="does not exist"):
        KnobSession(ram_bed).set(parse_knob("sysfs:queue/no_such_attr"), 1)


@needs_root
def test_scheduler_is_restored_by_its_bracketed_name(ram_bed: Bed, state: Path) -> None:
    knob = parse_knob("sysfs:queue/scheduler")
    path = knob_path(knob, ram_bed)
    raw = read(path)
    old = selected(raw)
    other = next(s.strip("[]") for s in raw.split() if s.strip("[]") != old)
    with KnobSession(ram_bed) as ks:
        assert ks.set(knob, other) == other
        assert selected(read(path)) == other and f"[{other}]" in read(path)
        entry = next(state.glob("*.json")).read_text()
        assert f'"value": "{old}"' in entry and "[" not in entry.split('"value"')[1]
    assert selected(read(path)) == old
    with KnobSession(ram_bed) as ks:
        with pytest.raises(
            UserError,
            match=r"scheduler = 'no-such-elevator': not one of its "
            r"choices \(none, mq-deadline",
        ):
            ks.set(knob, "no-such-elevator")
    assert selected(read(path)) == old


@needs_root
def test_xfs_extsize_on_the_bed_root(ram_bed: Bed, state: Path) -> None:
    old = read_extsize(ram_bed.path)
    with KnobSession(ram_bed) as ks:
        assert ks.set(parse_knob("xfs:extsize"), "64k") == str(64 << 10)
        sub = os.path.join(ram_bed.path, "child")
        os.mkdir(sub)
        try:
            assert read_extsize(sub) == 64 << 10  # inherited by what is created below
        finally:
            os.rmdir(sub)
    assert read_extsize(ram_bed.path) == old


@needs_root
def test_thp_absolute_sysfs(state: Path) -> None:
    path = "/sys/kernel/mm/transparent_hugepage/enabled"
    if not os.path.exists(path):
        pytest.skip("no THP")
    old = selected(read(path))
    other = "never" if old != "never" else "madvise"
    with KnobSession() as ks:
        ks.set(parse_knob(f"sysfs:{path}"), other)
        assert selected(read(path)) == other
    assert selected(read(path)) == old


@needs_root
def test_an_image_too_small_for_its_filesystem_is_refused_before_anything() -> None:
    """mkfs.xfs refuses images under 300 MiB (xfsprogs 5.19 on): a 280 MiB XFS bed is a bad
    input (exit 2, saying the least), not mkfs's own failure after the bed is half made."""
    with pytest.raises(UserError, match=r"too small for an image of xfs \(at least 300\.0 MiB\)"):
        with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=280 << 20):
            pass
    with pytest.raises(UserError, match=r"too small for an image of ext4 \(at least 256\.0 MiB\)"):
        with provision(BedSpec.parse("loop"), fs="ext4", size_bytes=200 << 20):
            pass
