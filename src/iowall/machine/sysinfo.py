"""Facts about the machine a run happens on: host, kernel, memory, the sysctls that matter."""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model import COMMIT_ENV
from .cgroups import limits, locate

#: sysctls recorded with every run: the dirty-page thresholds shape every buffered write.
SYSCTLS = (
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.vfs_cache_pressure",
    "vm.swappiness",
    "vm.min_free_kbytes",
)


def read(path: str, default: str = "") -> str:
    """A sysfs/procfs file, stripped, or ``default``."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out = {}
    for line in read("/proc/meminfo").splitlines():
        k, _, v = line.partition(":")
        parts = v.split()
        if parts:
            out[k] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def mem_total_bytes() -> int:
    """MemTotal in bytes."""
    return meminfo().get("MemTotal", 0)


def vmstat() -> dict[str, int]:
    """/proc/vmstat counters."""
    out = {}
    for line in read("/proc/vmstat").splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            out[k] = int(v)
    return out


def dirty_thresholds_bytes() -> tuple[int, int]:
    """The kernel's current global dirty limit and background limit, in bytes
    (``nr_dirty_threshold`` / ``nr_dirty_background_threshold`` of /proc/vmstat)."""
    vs = vmstat()
    page = os.sysconf("SC_PAGE_SIZE")
    return vs.get("nr_dirty_threshold", 0) * page, vs.get("nr_dirty_background_threshold", 0) * page


def sysctl(name: str) -> str:
    """Value of a sysctl (``vm.dirty_ratio``) or '' when absent."""
    return read("/proc/sys/" + name.replace(".", "/"))


def cpu_model() -> str:
    """The CPU's model name."""
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cpu_count() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


def host_facts() -> dict[str, Any]:
    """Host identity used in fingerprints: name, CPU model and count, memory."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": cpu_count(),
        "mem_total_bytes": mem_total_bytes(),
        "arch": platform.machine(),
    }


def environment(
    extra: dict[str, Any] | None = None, knobs: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Everything recorded with a run about where it ran (kernel is here, not in the
    fingerprint); ``knobs`` are the knobs in force, by name, as read back from the kernel."""
    thr, bg = dirty_thresholds_bytes()
    env: dict[str, Any] = {
        "host": host_facts(),
        "kernel": platform.release(),
        "kernel_version": read("/proc/version"),
        "cmdline": read("/proc/cmdline"),
        "sysctls": {k: sysctl(k) for k in SYSCTLS},
        "dirty_threshold_bytes": thr,
        "dirty_background_threshold_bytes": bg,
        "thp": read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "euid": os.geteuid(),
        "loadavg_1m": loadavg(),
        "cgroup": limits(locate()),  # the measuring process's groups (docs/cgroups.md)
    }
    if os.environ.get(COMMIT_ENV):
        env["commit"] = os.environ[COMMIT_ENV]
    if knobs:
        env["knobs"] = dict(knobs)
    if extra:
        env.update(extra)
    return env


def loadavg() -> float:
    """The 1-minute load average: other work sharing the CPUs shows up as spread."""
    try:
        return float(read("/proc/loadavg").split()[0])
    except (IndexError, ValueError):
        return 0.0


def _cpu_ticks() -> tuple[int, int]:
    """(busy, all) USER_HZ ticks of every CPU from /proc/stat's ``cpu`` line: busy is all but
    idle and iowait (guest time is inside user already)."""
    try:
        fields = [int(x) for x in read("/proc/stat").splitlines()[0].split()[1:9]]
    except (IndexError, ValueError):
        return 0, 0
    total = sum(fields)
    return total - fields[3] - fields[4], total


def busy_cpus(window_s: float = 0.5) -> float:
    """How many CPUs' worth of work ran over the next ``window_s`` (/proc/stat), the caller
    asleep meanwhile: what other work takes now. Not the load average, a one-minute decay
    that still counts what the set-up before a run (a build, an install) left behind."""
    b0, t0 = _cpu_ticks()
    time.sleep(window_s)
    b1, t1 = _cpu_ticks()
    if t1 <= t0:
        return 0.0
    return (b1 - b0) / (t1 - t0) * cpu_count()


def drop_caches() -> bool:
    """sync + ``echo 3 > /proc/sys/vm/drop_caches``; False when not permitted (not root)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True
