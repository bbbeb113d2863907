"""Cgroups on this machine, for real: v1 groups made under /sys/fs/cgroup/{cpu,memory,blkio}
with a CPU quota, a memory limit on the parent of the task's group and a blkio throttle,
read back through locate/limits/counters of a child process moved into them; a private
cgroup2 mount (its controllers are bound to v1 here, so only membership and cpu.stat's usage
show); and the ram bed refused inside a 300 MiB memory group before anything is allocated.
Every group is removed and every mount unmounted afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from iowall.machine.cgroups import counters, limits, locate, locate_from, memory_room
from tests.conftest import iowall, leftovers, needs_root

pytestmark = [
    needs_root,
    pytest.mark.skipif(
        not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists(),
        reason="needs cgroup v1 cpu, memory and blkio hierarchies",
    ),
]

V1 = Path("/sys/fs/cgroup")
MIB = 1 << 20
#: A busy loop that waits for a line first (so that it is counted in its groups), then sleeps.
SPIN = "read x; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec sleep 120"


def _rmdir_tree(top: Path) -> None:
    """A cgroup directory and its child groups, deepest first (their files go with them)."""
    for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with suppress(OSError):
            d.rmdir()
    with suppress(OSError):
        top.rmdir()


@contextmanager
def groups(*dirs: Path) -> Iterator[None]:
    """``dirs`` made (parents first), removed on exit after their tasks have gone."""
    try:
        for d in dirs:
            d.mkdir(parents=True)
        yield
    finally:
        for d in sorted(dirs, key=lambda p: -len(p.parts)):
            for _ in range(50):  # a killed task leaves its group a moment after wait()
                try:
                    _rmdir_tree(d)
                    if not d.exists():
                        break
                except OSError:
                    pass
                time.sleep(0.1)


@contextmanager
def spinner() -> Iterator[subprocess.Popen[str]]:
    """A child ``sh`` that spins once it is sent a line, killed and reaped on exit."""
    child = subprocess.Popen(["sh", "-c", SPIN], stdin=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        child.kill()
        child.wait(10)


def move(pid: int, group: Path) -> None:
    (group / "cgroup.procs").write_text(f"{pid}\n")


def block_devno() -> str:
    """MAJ:MIN of a block device of this machine (a loop device when there is one)."""
    devs = sorted(p.read_text().strip() for p in Path("/sys/block").glob("*/dev"))
    return next((d for d in devs if d.startswith("7:")), devs[0])


def wait_for(check: object, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not callable(check) or not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_v1_groups_limits_on_parent_and_leaf() -> None:
    name = f"iowall-test-{uuid.uuid4().hex[:8]}"
    cpu, mem, blk = V1 / "cpu" / name, V1 / "memory" / name, V1 / "blkio" / name
    acct = V1 / "cpuacct" / name
    dev = block_devno()
    with groups(cpu, acct, mem, mem / "leaf", blk), spinner() as child:
        (cpu / "cpu.cfs_period_us").write_text("100000\n")
        (cpu / "cpu.cfs_quota_us").write_text("50000\n")
        (mem / "memory.limit_in_bytes").write_text(f"{300 * MIB}\n")  # on the parent only
        (blk / "blkio.throttle.read_bps_device").write_text(f"{dev} {10 * MIB}\n")
        (blk / "blkio.throttle.write_iops_device").write_text(f"{dev} 100\n")
        for g in (cpu, acct, mem / "leaf", blk):
            move(child.pid, g)
        cg = locate(child.pid)
        assert cg.cpu == str(cpu) and cg.memory == str(mem / "leaf") and cg.io == str(blk)
        assert cg.cpuacct == str(acct)
        assert cg.version == {"cpu": 1, "memory": 1, "io": 1}
        assert cg.paths["cpu"] == f"/{name}" and cg.paths["memory"] == f"/{name}/leaf"
        lim = limits(cg)
        assert lim["cpu_quota_cpus"] == 0.5 and lim["cpu_period_us"] == 100000
        assert lim["mem_limit_bytes"] == 300 * MIB and lim["mem_high_bytes"] is None
        assert lim["io_limits"] == [{"dev": dev, "rbps": 10 * MIB, "wbps": None, "riops": None, "wiops": 100}]
        room = memory_room(cg)
        assert room is not None and room.path == f"/{name}" and room.limit_bytes == 300 * MIB
        assert 0 < room.usage_bytes < 50 * MIB  # the sh in the leaf is charged to the parent
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        wait_for(lambda: counters(cg).get("cg_cpu_nr_throttled", 0) > 0)
        c = counters(cg)
        assert c["cg_cpu_nr_periods"] >= c["cg_cpu_nr_throttled"] > 0
        assert c["cg_cpu_throttled_s"] > 0
        assert 0 < c["cg_cpu_usage_s"] < 10  # the spinner's own, from its cpuacct group
        assert c["cg_mem_usage_bytes"] > 0 and c["cg_mem_max_events"] == 0
        assert c["cg_mem_oom_kill_events"] == 0 and "cg_mem_pgsteal" not in c
        assert c["cg_io_read_bytes"] >= 0 and c["cg_io_write_bytes"] >= 0
    assert not any(g.exists() for g in (cpu, acct, mem, blk))


def test_own_process_is_located_as_proc_says() -> None:
    cg = locate()
    text = Path("/proc/self/cgroup").read_text()
    for line in text.splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else ["unified"]:
            if c in ("cpu", "memory", "unified"):
                assert cg.paths[c] == path
    t0 = time.perf_counter()
    for _ in range(100):
        counters(cg)
    assert (time.perf_counter() - t0) / 100 < 0.005  # called every 100 ms during a run


@contextmanager
def cgroup2_mount(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "cg2"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "cgroup2", "none", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_cgroup2_membership_usage_and_absent_controllers(tmp_path: Path) -> None:
    name = f"iowall-test-{uuid.uuid4().hex[:8]}"
    with cgroup2_mount(tmp_path) as mnt, groups(mnt / name), spinner() as child:
        move(child.pid, mnt / name)
        cg_text = Path(f"/proc/{child.pid}/cgroup").read_text()
        assert f"0::/{name}" in cg_text.splitlines()
        assert locate(child.pid).paths["unified"] == f"/{name}"
        # v2 alone, as on a v2-only machine: this mount, the group's own controller list
        mi = next(
            line for line in Path("/proc/self/mountinfo").read_text().splitlines() if f" {mnt} " in line
        )
        enabled = (mnt / name / "cgroup.controllers").read_text()
        cg = locate_from(f"0::/{name}\n", mi + "\n", enabled)
        assert cg.cpu == str(mnt / name) and cg.version["cpu"] == 2
        assert cg.memory is None and cg.io is None  # bound to v1 here: absent in v2
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        wait_for(lambda: counters(cg).get("cg_cpu_usage_s", 0) > 0.05)
        c = counters(cg)
        assert not any(k.startswith(("cg_mem", "cg_io")) for k in c)
        assert "cg_cpu_nr_throttled" not in c  # no cpu controller: no throttling to count
        lim = limits(cg)
        assert (lim["cpu_quota_cpus"], lim["mem_limit_bytes"], lim["io_limits"]) == (None, None, [])
        assert lim["paths"] == {"unified": f"/{name}"}
    assert not (tmp_path / "cg2" / name).exists()
    assert str(tmp_path / "cg2") not in Path("/proc/self/mounts").read_text()


def _plan(tmp_path: Path, bed: str) -> str:
    p = tmp_path / "plan.toml"
    p.write_text(
        textwrap.dedent(f"""\
        label = "cg"
        repeat = 1
        probes = ["cpu"]
        [workload]
        kind = "fio"
        rw = "write"
        bs = "1M"
        size = "16M"
        {bed}
        """)
    )
    return str(p)


def in_groups(groups: list[Path], *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``iowall ARGS`` as a child process that first moves itself into each of ``groups``."""
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    moves = " && ".join(f"echo $$ > {g}/cgroup.procs" for g in groups)
    return subprocess.run(
        ["sh", "-c", moves + ' && exec "$@"', "sh", exe, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_ram_bed_refused_inside_a_300_mib_group(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    name = f"iowall-test-{uuid.uuid4().hex[:8]}"
    mem = V1 / "memory" / name
    before = leftovers()["images"]
    with groups(mem):
        (mem / "memory.limit_in_bytes").write_text(f"{300 * MIB}\n")
        plan = _plan(tmp_path, '[bed]\nkind = "ram"\nfs = "xfs"\nsize = "1G"')
        cp = in_groups([mem], "run", plan, "--wait", "10m", env=iowall_env)
        assert cp.returncode == 2, cp.stdout + cp.stderr
        err = cp.stderr.strip()
        assert len(err.splitlines()) == 1, err
        for part in ("ram bed needs 1.0 GiB", f"/{name}", "300.0 MiB", "in use"):
            assert part in err, err
        assert (mem / "memory.failcnt").read_text().strip() == "0"  # never hit the limit
        assert "oom_kill 0" in (mem / "memory.oom_control").read_text()
    assert leftovers()["images"] <= before
    assert not mem.exists()


@pytest.mark.slow
def test_run_records_its_cgroup_and_show_prints_it(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    """A run under a CPU quota and a memory limit: env["cgroup"] holds them, `show` prints
    them with the paths."""
    name = f"iowall-test-{uuid.uuid4().hex[:8]}"
    cpu, mem = V1 / "cpu" / name, V1 / "memory" / name
    bed = tmp_path / "bed"
    bed.mkdir()
    with groups(cpu, mem):
        (cpu / "cpu.cfs_quota_us").write_text("150000\n")
        (mem / "memory.limit_in_bytes").write_text(f"{1024 * MIB}\n")
        plan = _plan(tmp_path, "")
        cp = in_groups(
            [cpu, mem],
            "run",
            plan,
            "--bed",
            f"dir:{bed}",
            "--wait",
            "10m",
            "--format",
            "json",
            env=iowall_env,
        )
        assert cp.returncode == 0, cp.stderr
    rid = json.loads(cp.stdout)["run_ids"][0]
    doc = json.loads(iowall("show", str(rid), "--format", "json", env=iowall_env, check=True).stdout)
    cg = doc["env"]["cgroup"]
    assert cg["cpu_quota_cpus"] == 1.5 and cg["mem_limit_bytes"] == 1024 * MIB
    assert cg["paths"]["cpu"] == f"/{name}" and cg["paths"]["memory"] == f"/{name}"
    text = iowall("show", str(rid), env=iowall_env, check=True).stdout
    line = next(x for x in text.splitlines() if x.startswith("cgroup "))
    assert "cpu 1.5 CPUs" in line and "memory 1.0 GiB" in line
    assert f"memory /{name}" in text
    assert not cpu.exists() and not mem.exists()


def test_guest_memory_touch_stays_inside_a_memory_limited_group() -> None:
    """`hold_guest_memory`'s touch of "all free memory" is capped to the group's room: inside
    a 300 MiB group it touches less than that, and the group's OOM killer never fires."""
    name = f"iowall-test-{uuid.uuid4().hex[:8]}"
    mem = V1 / "memory" / name
    code = (
        "from iowall.tuning.guestmem import touch, touchable\n"
        "n, why = touchable(1 << 40)\ntouch(n)\nprint(n)\nprint(why)\n"
    )
    with groups(mem):
        (mem / "memory.limit_in_bytes").write_text(f"{300 * MIB}\n")
        cp = subprocess.run(
            ["sh", "-c", f'echo $$ > {mem}/cgroup.procs && exec "$@"', "sh", sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cp.returncode == 0, cp.stderr
        n, why = cp.stdout.splitlines()
        assert 64 * MIB <= int(n) < 300 * MIB
        assert f"memory cgroup /{name} is limited to 300.0 MiB" in why
        assert "oom_kill 0" in (mem / "memory.oom_control").read_text()
    assert not mem.exists()
