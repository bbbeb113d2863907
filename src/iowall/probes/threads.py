"""CPU time of kernel threads found by name (flush kworkers, kswapd), for probes that
attribute CPU to a kernel thread: /proc/PID/comm to find them, /proc/PID/schedstat (ns of
CPU run) to time them, /proc/PID/stat utime+stime (USER_HZ ticks) when schedstat is missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from .sampling import CLK_TCK, read_text

#: pid → (comm, CPU time in ns) of the threads that matched.
TaskTimes = dict[int, tuple[str, int]]


def runtime_ns(pid: int) -> int | None:
    """CPU time a task has run, in ns (None when it is gone)."""
    text = read_text(f"/proc/{pid}/schedstat")
    if text:
        try:
            return int(text.split()[0])
        except (ValueError, IndexError):
            pass
    stat = read_text(f"/proc/{pid}/stat")
    if not stat:
        return None
    fields = stat.rpartition(")")[2].split()
    try:  # fields[0] is the state (field 3); utime and stime are fields 14 and 15
        ticks = int(fields[11]) + int(fields[12])
    except (ValueError, IndexError):
        return None
    return ticks * 1_000_000_000 // CLK_TCK


KTHREADD_CHILDREN = "/proc/2/task/2/children"


def kernel_thread_pids() -> list[str] | None:
    """pids of kernel threads (children of kthreadd), or None without CONFIG_PROC_CHILDREN."""
    text = read_text(KTHREADD_CHILDREN)
    return text.split() if text else None


def scan(
    match: Callable[[str], bool], *, kernel_only: bool = True, skip: set[str] | None = None
) -> TaskTimes:
    """Every kernel thread (or, ``kernel_only=False``, process) whose /proc/PID/comm
    satisfies ``match``, with its CPU time.

    Kernel threads (kworkers, kswapd) are processes of their own, so /proc/PID is enough:
    no /proc/PID/task walk over the threads of user processes; and they are kthreadd's
    children, so the scan reads ~100 comms instead of every process on the machine.
    ``skip``: pids known not to match (a caller's cache); pids found not matching are added.
    """
    out: TaskTimes = {}
    entries = kernel_thread_pids() if kernel_only else None
    if entries is None:
        try:
            entries = os.listdir("/proc")
        except OSError:
            return out
    for e in entries:
        if not e.isdigit() or (skip is not None and e in skip):
            continue
        comm = read_text(f"/proc/{e}/comm").rstrip("\n")
        if not comm:
            continue
        if not match(comm):
            if skip is not None:
                skip.add(e)
            continue
        rt = runtime_ns(int(e))
        if rt is not None:
            out[int(e)] = (comm, rt)
    return out


def times(pids: Iterable[int]) -> TaskTimes:
    """CPU time of known tasks (comm re-read); the ones that are gone are left out."""
    out: TaskTimes = {}
    for pid in pids:
        comm = read_text(f"/proc/{pid}/comm").rstrip("\n")
        rt = runtime_ns(pid)
        if comm and rt is not None:
            out[pid] = (comm, rt)
    return out
