"""Knobs only where iowall knows the effect: the allow-list, documented ranges and choices,
and the CLI refusing a plan that asks for anything else (exit 2, one line) before anything
is changed."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from iowall.tuning.knob_session import check_exists
from iowall.vocab.errors import UserError
from iowall.vocab.knob import RANGES, check_value, parse_knob
from tests.conftest import iowall

REFUSED = [
    ("sysfs:/sys/power/state", "only under /sys/kernel/mm/transparent_hugepage/"),
    ("sysfs:/sys/kernel/mm/transparent_hugepage/../../power/state", "only under"),
    ("sysfs:/sys/block/vda/queue/scheduler", "write it relative"),
    ("sysfs:/sys/class/bdi/7:0/max_ratio", "write it relative"),
    ("sysfs:/proc/sysrq-trigger", "only under"),
    ("sysfs:loop/backing_file", "queue/ATTR"),
    ("sysfs:device/delete", "queue/ATTR"),
    ("sysfs:bdi/power/control", "bdi/ATTR"),
    ("sysfs:queue/./x", "plain path"),
    ("sysctl:kernel.sysrq", "under vm. and fs."),
    ("sysctl:kernel.panic", "under vm. and fs."),
    ("sysctl:net.ipv4.ip_forward", "under vm. and fs."),
    ("sysctl:vm.drop_caches", "an action"),
    ("sysctl:vm.compact_memory", "an action"),
    ("sysctl:vm.panic_on_oom", "an action, a panic"),
    ("sysctl:vm.mmap_min_addr", "security"),
    ("sysctl:fs.binfmt_misc.register", "an action"),
    ("sysctl:fs.protected_symlinks", "security"),
]
ALLOWED = [
    "sysctl:vm.dirty_ratio",
    "sysctl:vm.swappiness",
    "sysctl:fs.nr_open",
    "sysctl:kernel.numa_balancing",
    "sysfs:queue/scheduler",
    "sysfs:queue/iosched/fifo_batch",
    "sysfs:bdi/max_ratio",
    "sysfs:/sys/kernel/mm/transparent_hugepage/enabled",
    "sysfs:/sys/kernel/mm/transparent_hugepage/khugepaged/defrag",
]


@pytest.mark.parametrize("name,why", REFUSED)
def test_refused_knobs(name: str, why: str) -> None:
    with pytest.raises(UserError, match="refusing knob|plain path") as e:
        parse_knob(name)
    assert why in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ALLOWED)
def test_allowed_knobs(name: str) -> None:
    assert str(parse_knob(name)) == name


def test_documented_ranges() -> None:
    check_value(parse_knob("sysctl:vm.dirty_ratio"), 0)
    check_value(parse_knob("sysctl:vm.dirty_ratio"), "100")
    for knob, bad, msg in [
        ("sysctl:vm.dirty_ratio", 101, "0..100"),
        ("sysctl:vm.dirty_ratio", -1, "0..100"),
        ("sysctl:vm.dirty_ratio", "ten", "whole number"),
        ("sysctl:vm.dirty_ratio", 1.5, "whole number"),
        ("sysctl:vm.dirty_bytes", 4096, "at least 8192"),
        ("sysctl:vm.swappiness", 201, "0..200"),
        ("sysctl:vm.watermark_scale_factor", 0, "1..3000"),
        ("sysfs:queue/nr_requests", 2, "at least 4"),
        ("sysfs:queue/rq_affinity", 3, "0..2"),
        ("sysfs:bdi/strict_limit", 2, "0..1"),
    ]:
        with pytest.raises(UserError, match=msg):
            check_value(parse_knob(knob), bad)
    assert all(lo is None or hi is None or lo <= hi for lo, hi in RANGES.values())


def test_choices_and_numbers_of_the_live_file() -> None:
    thp = parse_knob("sysfs:/sys/kernel/mm/transparent_hugepage/enabled")
    check_exists(thp, ["never", "madvise"])
    with pytest.raises(UserError, match=r"not one of its choices \(always, madvise, never\)"):
        check_exists(thp, ["sometimes"])
    with pytest.raises(UserError, match="whole number"):
        check_exists(parse_knob("sysctl:vm.min_free_kbytes"), ["lots"])
    with pytest.raises(UserError, match="read-only"):
        check_exists(parse_knob("sysfs:/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"), [1])


@pytest.mark.parametrize(
    "axis,value,msg",
    [
        ('"sysfs:/sys/power/state"', '"mem"', "refusing knob 'sysfs:/sys/power/state'"),
        ('"sysctl:kernel.sysrq"', "1", "refusing knob 'sysctl:kernel.sysrq'"),
        ('"sysctl:vm.dirty_ratio"', "150", "out of range (the kernel takes 0..100)"),
    ],
)
def test_a_plan_asking_for_more_is_refused_before_anything(
    tmp_path: Path, axis: str, value: str, msg: str
) -> None:
    """The plan the issue found suspending a machine: refused at load, one line, exit 2,
    nothing provisioned, no store written."""
    plan = tmp_path / "p.toml"
    plan.write_text(
        textwrap.dedent(f"""\
        [workload]
        kind = "fio"
        rw = "write"
        bs = "1M"
        size = "16M"
        [axes]
        {axis} = [{value}]
        """)
    )
    state = Path("/sys/power/state").read_text() if os.path.exists("/sys/power/state") else ""
    env = dict(
        os.environ,
        IOWALL_DB=f"sqlite:///{tmp_path / 'db'}",
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    cp = iowall("run", str(plan), env=env)
    assert cp.returncode == 2, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], cp.stderr
    assert not list((tmp_path / "state").glob("iowall/journal/*.json"))
    if state:
        assert Path("/sys/power/state").read_text() == state


def test_a_recipe_set_outside_the_list_is_refused(tmp_path: Path) -> None:
    env = dict(os.environ, IOWALL_DB=f"sqlite:///{tmp_path / 'db'}", XDG_STATE_HOME=str(tmp_path / "state"))
    cp = iowall("run", "buffered-wall", "--quick", "--set", "sysctl:kernel.sysrq=1", env=env)
    assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    assert "refusing knob 'sysctl:kernel.sysrq'" in cp.stderr
