"""Cgroups of a task (iowall.machine.cgroups): /proc/PID/cgroup and mountinfo parsed on v1, v2 and
hybrid systems; limits set on an ancestor; unlimited values; counters omitted when their file
is missing; the in-memory bed's refusal; how show and compare print the limits."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iowall.analysis.regress.cgroup_env import limits_text, paths_text
from iowall.analysis.regress.compare import Side, differences
from iowall.beds.room import MARGIN, refusal
from iowall.machine.cgroups import (
    Cgroups,
    MemoryRoom,
    counters,
    cpu_max,
    io_max,
    keyed,
    limits,
    locate,
    locate_from,
    memory_room,
    number,
    service_bytes,
    throttle_device,
)
from iowall.model import Point, Run
from iowall.report.cgroup import cgroup_lines

MIB = 1 << 20

#: This VM: v1 controllers each on its own mount, an empty cgroup2 at unified (hybrid).
HYBRID_MI = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
HYBRID_CG = """\
9:name=systemd:/
7:blkio:/b
4:memory:/process_api/abc
3:cpuset:/
2:cpuacct:/
1:cpu:/a
0::/
"""
#: A systemd distribution on cgroup v2 only.
V2_MI = """\
24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
"""
V2_CG = "0::/user.slice/user-1000.slice/session-3.scope\n"
#: Debian's old layout: cpu and cpuacct on one v1 hierarchy, net_cls,net_prio on another.
V1_MI = """\
25 20 0:23 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
26 20 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
27 20 0:25 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio
"""
V1_CG = "4:blkio:/x\n3:memory:/x\n2:cpu,cpuacct:/x\n1:net_cls,net_prio:/\n"


def test_hybrid_uses_v1_controllers_and_keeps_the_v2_path() -> None:
    cg = locate_from(HYBRID_CG, HYBRID_MI)
    assert cg.cpu == "/sys/fs/cgroup/cpu/a"
    assert cg.cpuacct == "/sys/fs/cgroup/cpuacct"
    assert cg.memory == "/sys/fs/cgroup/memory/process_api/abc"
    assert cg.io == "/sys/fs/cgroup/blkio/b"
    assert cg.version == {"cpu": 1, "memory": 1, "io": 1}
    assert cg.paths == {
        "blkio": "/b",
        "memory": "/process_api/abc",
        "cpuacct": "/",
        "cpu": "/a",
        "unified": "/",
    }
    assert cg.roots["memory"] == "/sys/fs/cgroup/memory"


def test_v2_only_and_its_enabled_controllers() -> None:
    leaf = "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"
    cg = locate_from(V2_CG, V2_MI)
    assert (cg.cpu, cg.memory, cg.io) == (leaf, leaf, leaf)
    assert cg.version == {"cpu": 2, "memory": 2, "io": 2} and cg.cpuacct is None
    assert cg.paths == {"unified": "/user.slice/user-1000.slice/session-3.scope"}
    # memory not enabled for this group: no memory dir; cpu.stat is there all the same
    only_io = locate_from(V2_CG, V2_MI, "cpuset io pids\n")
    assert (only_io.cpu, only_io.memory, only_io.io) == (leaf, None, leaf)
    assert only_io.version == {"cpu": 2, "io": 2}


def test_v1_only_with_comounted_cpu_and_cpuacct() -> None:
    cg = locate_from(V1_CG, V1_MI)
    assert cg.cpu == cg.cpuacct == "/sys/fs/cgroup/cpu,cpuacct/x"
    assert cg.memory == "/sys/fs/cgroup/memory/x" and cg.io == "/sys/fs/cgroup/blkio/x"
    assert cg.version == {"cpu": 1, "memory": 1, "io": 1}


def test_hybrid_does_not_take_v1_bound_controllers_from_v2() -> None:
    """On this VM's layout cpu, memory and blkio are bound to v1: the empty v2 tree gives
    none of them even when told its controllers include them."""
    cg = locate_from("0::/t\n", HYBRID_MI, "cpu memory io")
    assert (cg.cpu, cg.memory, cg.io) == (None, None, None)
    assert cg.paths == {"unified": "/t"}


def test_mount_root_below_the_hierarchy_root() -> None:
    """A container's bind mount of its own group: paths below the mount's root."""
    mi = "40 30 0:33 /docker/c1 /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
    cg = locate_from("5:memory:/docker/c1/sub\n", mi)
    assert cg.memory == "/sys/fs/cgroup/memory/sub"
    assert locate_from("5:memory:/docker/c1\n", mi).memory == "/sys/fs/cgroup/memory"


def test_nothing_mounted_or_nothing_parsed() -> None:
    cg = locate_from("", "")
    assert (cg.cpu, cg.memory, cg.io, cg.paths, cg.version) == (None, None, None, {}, {})
    assert limits(cg)["mem_limit_bytes"] is None and counters(cg) == {}
    assert locate(pid=1, proc="/nonexistent").paths == {}


def test_unlimited_values() -> None:
    assert number("9223372036854771712\n") is None  # v1 memory.limit_in_bytes, unlimited
    assert number("-1\n") is None  # v1 cpu.cfs_quota_us
    assert number("max\n") is None and number(None) is None and number("") is None
    assert number("314572800\n") == 300 * MIB
    assert cpu_max("max 100000\n") is None and cpu_max("50000 100000\n") == (50000, 100000)
    assert io_max("7:0 rbps=max wbps=1048576 riops=max wiops=200\n") == {
        "7:0": {"wbps": 1048576, "wiops": 200}
    }
    assert io_max("7:0 rbps=max wbps=max riops=max wiops=max\n") == {}
    assert throttle_device("7:0 1048576\n8:0 100\n") == {"7:0": 1048576, "8:0": 100}


def test_counter_parsers() -> None:
    assert keyed("nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n")["nr_throttled"] == 2
    text = "7:0 Read 4096\n7:0 Write 8192\n8:0 Read 1\n8:0 Total 9\nTotal 12289\n"
    assert service_bytes(text) == (4097, 8192)


def _tree(tmp_path: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _v1(tmp_path: Path) -> Cgroups:
    m = str(tmp_path / "memory")
    return Cgroups(
        cpu=str(tmp_path / "cpu/a/b"),
        memory=f"{m}/a/b",
        io=str(tmp_path / "blkio/a/b"),
        paths={"memory": "/a/b"},
        version={"cpu": 1, "memory": 1, "io": 1},
        cpuacct=str(tmp_path / "cpuacct/a/b"),
        roots={
            "cpu": str(tmp_path / "cpu"),
            "memory": m,
            "io": str(tmp_path / "blkio"),
            "cpuacct": str(tmp_path / "cpuacct"),
        },
    )


def test_v1_limits_on_an_ancestor_bind_the_leaf(tmp_path: Path) -> None:
    """The leaf is unlimited; its parent has the memory limit, the CPU quota and an I/O
    throttle; the root's own throttle on another key adds to it; the tightest wins."""
    big = "9223372036854771712\n"
    _tree(
        tmp_path,
        {
            "memory/memory.limit_in_bytes": big,
            "memory/a/memory.limit_in_bytes": f"{300 * MIB}\n",
            "memory/a/b/memory.limit_in_bytes": f"{400 * MIB}\n",
            "memory/a/memory.usage_in_bytes": f"{100 * MIB}\n",
            "memory/a/memory.stat": f"total_inactive_file {10 * MIB}\n",
            "memory/a/b/memory.usage_in_bytes": f"{50 * MIB}\n",
            "cpu/cpu.cfs_quota_us": "-1\n",
            "cpu/cpu.cfs_period_us": "100000\n",
            "cpu/a/cpu.cfs_quota_us": "50000\n",
            "cpu/a/cpu.cfs_period_us": "100000\n",
            "cpu/a/b/cpu.cfs_quota_us": "-1\n",
            "cpu/a/b/cpu.cfs_period_us": "100000\n",
            "blkio/blkio.throttle.read_iops_device": "7:0 500\n",
            "blkio/a/blkio.throttle.read_bps_device": "7:0 1048576\n",
            "blkio/a/b/blkio.throttle.read_bps_device": "7:0 4194304\n",
            "blkio/a/b/blkio.throttle.write_bps_device": "",
        },
    )
    cg = _v1(tmp_path)
    lim = limits(cg)
    assert lim["mem_limit_bytes"] == 300 * MIB and lim["mem_high_bytes"] is None
    assert lim["cpu_quota_cpus"] == 0.5 and lim["cpu_period_us"] == 100000
    assert lim["io_limits"] == [{"dev": "7:0", "rbps": 1048576, "wbps": None, "riops": 500, "wiops": None}]
    assert lim["paths"] == {"memory": "/a/b"}
    room = memory_room(cg)
    assert room == MemoryRoom("/a", 1, 300 * MIB, 100 * MIB, 10 * MIB)
    assert room.free_bytes == 210 * MIB


def test_v1_counters_and_missing_files(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "cpu/a/b/cpu.stat": "nr_periods 10\nnr_throttled 4\nthrottled_time 2500000000\n",
            "cpuacct/a/b/cpuacct.usage": "1500000000\n",
            "memory/a/b/memory.usage_in_bytes": "4096\n",
            "memory/a/b/memory.failcnt": "3\n",
            "memory/a/b/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            "blkio/a/b/blkio.throttle.io_service_bytes": "7:0 Read 100\n7:0 Write 200\nTotal 300\n",
        },
    )
    c = counters(_v1(tmp_path))
    assert c == {
        "cg_cpu_nr_periods": 10,
        "cg_cpu_nr_throttled": 4,
        "cg_cpu_throttled_s": 2.5,
        "cg_cpu_usage_s": 1.5,
        "cg_mem_usage_bytes": 4096,
        "cg_mem_max_events": 3,
        "cg_mem_oom_events": 2,
        "cg_mem_oom_kill_events": 2,
        "cg_io_read_bytes": 100,
        "cg_io_write_bytes": 200,
    }
    (tmp_path / "cpuacct/a/b/cpuacct.usage").unlink()
    (tmp_path / "blkio/a/b/blkio.throttle.io_service_bytes").unlink()
    c = counters(_v1(tmp_path))
    assert "cg_cpu_usage_s" not in c and "cg_io_read_bytes" not in c and "cg_mem_pgscan" not in c


def _v2(tmp_path: Path) -> Cgroups:
    leaf, root = str(tmp_path / "a/b"), str(tmp_path)
    return Cgroups(
        cpu=leaf,
        memory=leaf,
        io=leaf,
        paths={"unified": "/a/b"},
        version={"cpu": 2, "memory": 2, "io": 2},
        roots={"cpu": root, "memory": root, "io": root},
    )


def test_v2_limits_on_an_ancestor_and_high(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "cpu.stat": "usage_usec 1\n",  # the root has no cpu.max / memory.max / io.max
            "a/cpu.max": "150000 100000\n",
            "a/b/cpu.max": "max 100000\n",
            "a/memory.max": f"{512 * MIB}\n",
            "a/memory.high": "max\n",
            "a/memory.current": f"{200 * MIB}\n",
            "a/memory.stat": "inactive_file 0\n",
            "a/b/memory.max": "max\n",
            "a/b/memory.high": f"{256 * MIB}\n",
            "a/b/memory.current": f"{100 * MIB}\n",
            "a/b/memory.stat": f"inactive_file {MIB}\n",
            "a/io.max": "7:0 rbps=max wbps=2097152 riops=max wiops=max\n",
            "a/b/io.max": "7:0 rbps=max wbps=4194304 riops=max wiops=100\n8:16 rbps=1 wbps=max"
            " riops=max wiops=max\n",
        },
    )
    cg = _v2(tmp_path)
    lim = limits(cg)
    assert lim["cpu_quota_cpus"] == 1.5 and lim["cpu_period_us"] == 100000
    assert lim["mem_limit_bytes"] == 512 * MIB and lim["mem_high_bytes"] == 256 * MIB
    assert lim["io_limits"] == [
        {"dev": "7:0", "rbps": None, "wbps": 2097152, "riops": None, "wiops": 100},
        {"dev": "8:16", "rbps": 1, "wbps": None, "riops": None, "wiops": None},
    ]
    # the leaf's high (256 MiB, 100 in use) leaves less than the parent's max (512, 200)
    assert memory_room(cg) == MemoryRoom("/a/b", 2, 256 * MIB, 100 * MIB, MIB)


def test_v2_counters(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "a/b/cpu.stat": "usage_usec 2000000\nuser_usec 1\nnr_periods 5\nnr_throttled 1\n"
            "throttled_usec 250000\n",
            "a/b/memory.current": "8192\n",
            "a/b/memory.events": "low 0\nhigh 7\nmax 2\noom 1\noom_kill 1\noom_group_kill 0\n",
            "a/b/memory.stat": "anon 1\npgscan 40\npgsteal 30\n",
            "a/b/io.stat": "7:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n"
            "8:0 rbytes=1 wbytes=2 rios=1 wios=1 dbytes=0 dios=0\n",
        },
    )
    assert counters(_v2(tmp_path)) == {
        "cg_cpu_nr_periods": 5,
        "cg_cpu_nr_throttled": 1,
        "cg_cpu_throttled_s": 0.25,
        "cg_cpu_usage_s": 2.0,
        "cg_mem_usage_bytes": 8192,
        "cg_mem_max_events": 2,
        "cg_mem_high_events": 7,
        "cg_mem_oom_events": 1,
        "cg_mem_oom_kill_events": 1,
        "cg_mem_pgscan": 40,
        "cg_mem_pgsteal": 30,
        "cg_io_read_bytes": 11,
        "cg_io_write_bytes": 22,
    }


def test_v2_group_without_controllers_reads_as_absent(tmp_path: Path) -> None:
    """Only cpu.stat's usage (no cpu controller): no throttling keys, no limits, no zeros."""
    _tree(tmp_path, {"a/b/cpu.stat": "usage_usec 3000000\nuser_usec 2\nsystem_usec 1\n"})
    cg = _v2(tmp_path)
    assert counters(cg) == {"cg_cpu_usage_s": 3.0}
    lim = limits(cg)
    assert (lim["cpu_quota_cpus"], lim["mem_limit_bytes"], lim["io_limits"]) == (None, None, [])
    assert memory_room(cg) is None


def test_refusal_names_group_limit_usage_and_need() -> None:
    room = MemoryRoom("/iowall-test", 1, 300 * MIB, 20 * MIB, 0)
    text = refusal("ram", 1024 * MIB, room)
    assert text is not None and "\n" not in text
    for part in (
        "ram bed needs 1.0 GiB",
        "/iowall-test",
        "300.0 MiB",
        "20.0 MiB in use",
        "at most 216.0 MiB",
    ):
        assert part in text, text
    assert refusal("ram", room.free_bytes - MARGIN, room) is None
    assert "outside" in (refusal("tmpfs", 1024 * MIB, MemoryRoom("/x", 2, MIB, MIB, 0)) or "")
    below_least = refusal("ram", 1024 * MIB, room, least=256 * MIB) or ""
    assert "at most" not in below_least and "outside that cgroup" in below_least


def _run(cgroup: Mapping[str, Any] | None, label: str = "a") -> Run:
    env: dict[str, Any] = {"kernel": "6.18", "host": {"hostname": "box"}}
    if cgroup is not None:
        env["cgroup"] = cgroup
    return Run(
        point=Point("limits", {"jobs": 1}), label=label, status="ok", started_at=1.0, finished_at=2.0, env=env
    )


LIMITED: dict[str, Any] = {
    "cpu_quota_cpus": 1.5,
    "cpu_period_us": 100000,
    "mem_limit_bytes": 300 * MIB,
    "mem_high_bytes": None,
    "paths": {"memory": "/t", "cpu": "/"},
    "io_limits": [{"dev": "7:0", "rbps": 10 * MIB, "wbps": None, "riops": None, "wiops": 100}],
}
UNLIMITED: dict[str, Any] = {
    "cpu_quota_cpus": None,
    "cpu_period_us": None,
    "mem_limit_bytes": None,
    "mem_high_bytes": None,
    "io_limits": [],
    "paths": {"memory": "/other"},
}


def test_show_and_compare_texts() -> None:
    text = limits_text(LIMITED)
    assert text == ("cpu 1.5 CPUs (period 100000 us), memory 300.0 MiB, io 7:0 rbps 10MiB/s wiops 100/s")
    assert limits_text(UNLIMITED) == "" and limits_text(None) == ""
    assert paths_text(LIMITED) == "memory /t  cpu /"
    assert cgroup_lines({"cgroup": LIMITED}) == [f"cgroup    {text}", "          in memory /t  cpu /"]
    assert cgroup_lines({"cgroup": UNLIMITED}) == [] and cgroup_lines({}) == []


def test_compare_lists_a_differing_limit_not_a_differing_path() -> None:
    diff = {
        d.field: d.values
        for d in differences([Side("a", [_run(LIMITED)]), Side("b", [_run(UNLIMITED, "b")])])
    }
    assert diff["cgroup limits"] == (limits_text(LIMITED), "-")
    same = {d.field for d in differences([Side("a", [_run(UNLIMITED)]), Side("b", [_run(None, "b")])])}
    assert "cgroup limits" not in same  # unlimited reads like a run recorded before cgroups
