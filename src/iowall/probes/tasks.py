"""``tasks``: where the point's CPU time went, per class of thread.

Every interval, the CPU time of every thread on the machine (``/proc/*/task/*/schedstat``,
ns) and ``/proc/stat`` are read; the deltas between the first and the last snapshot, thread
by thread, are summed per class: the workload's own threads (fio, the engine: every
descendant of this process), the workload's io_uring workers (``iou-wrk-*``, ``iou-sqp-*``),
the bed's loop workers, the flush kworkers of the bed's devices, kswapd, filesystem workers
(xfsaild, xfs-*, btrfs-*, jbd2, ext4-*, the direct-I/O completion workqueue ``dio/*``), other
kernel threads, iowall itself (the probes), other user processes (neighbours), and steal
(``/proc/stat``).

A thread that exits during the point keeps the CPU time of its last snapshot (so at most one
interval is lost), and the workload's processes, which exit before the probe stops, are
counted through this process's ``cutime + cstime`` once reaped: nothing the workload did is
lost. That reaped time holds every child's whole life, the probes' own tools too (perf is
stopped and reaped before this probe's last look), so what was already seen of each exited
child thread is taken out of it first. Other processes' children are counted the same way,
through the ``cutime + cstime`` their parents gain as they reap them: a build's compilers,
each shorter than one interval, are neighbours, not unattributed. What no class accounts for
(interrupts charged to no task, exited kernel threads, children not yet reaped) is reported
as ``unattributed``, never hidden.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from json import dumps

from ..model import Artifact, Metric, Series
from ..vocab.cpuclasses import CLASSES, UNATTRIBUTED
from .base import ProbeResult
from .cpu import FIELDS, parse_stat
from .sampling import CLK_TCK, SampledProbe, metric, read_text, series

#: a filesystem's own threads and workqueues; ``dio/`` is the per-filesystem workqueue
#: (``dio/SB``) that completes direct writes needing work after their I/O (unwritten extents
#: converted, the file's size updated)
_FS = re.compile(r"(^|[-+/])(xfsaild|xfs[-_]|btrfs[-_]|jbd2|ext4[-_]|dio/)")
_KTHREAD = 0x00200000  # PF_KTHREAD in /proc/PID/stat field 9 (flags)

#: Children of iowall that are its probes' tools, not the workload.
IOWALL_TOOLS = ("perf", "inferno-", "setpriv")

#: (pid, tid) → (comm, CPU ns, class)
Threads = dict[tuple[int, int], tuple[str, int, str]]
#: pid → (ppid, CPU ns of its reaped children: cutime + cstime, its own CPU ns: utime + stime,
#: exited threads' too) of other user processes
Reapers = dict[int, tuple[int, int, int]]


@dataclass(frozen=True)
class Snapshot:
    """One look at the machine: every thread's CPU time and class, /proc/stat, and the CPU
    time of this process's reaped children (ns)."""

    threads: Threads
    stat: dict[str, tuple[int, ...]]
    reaped_ns: int
    #: this process: its own threads are class ``iowall`` but, unlike its tools', never reaped
    self_pid: int = -1
    #: other user processes (class ``neighbours``): their parents, reaped children's and own time
    others: Reapers = field(default_factory=dict)


def _stat_fields(pid: str) -> list[str]:
    text = read_text(f"/proc/{pid}/stat")
    return text.rpartition(")")[2].split() if text else []


def _processes() -> dict[int, tuple[int, bool, int, int]]:
    """pid → (ppid, is a kernel thread, its reaped children's CPU ns, its own CPU ns) of every
    process."""
    out: dict[int, tuple[int, bool, int, int]] = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        f = _stat_fields(e)
        try:  # f[0] is field 3 (state): ppid field 4, flags 9, utime/stime 14/15, cutime/cstime 16/17
            own = (int(f[11]) + int(f[12])) * 1_000_000_000 // CLK_TCK
            reaped = (int(f[13]) + int(f[14])) * 1_000_000_000 // CLK_TCK
            out[int(e)] = (int(f[1]), bool(int(f[6]) & _KTHREAD), reaped, own)
        except (IndexError, ValueError):
            continue
    return out


def _descendants(procs: Mapping[int, tuple[int, bool, int, int]], root: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _, _) in procs.items():
        kids.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = list(kids.get(root, ()))
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo += kids.get(p, ())
    return out


def classify(
    comm: str, *, kthread: bool, workload: bool, self_: bool, devices: Sequence[str], devnos: Sequence[str]
) -> str:
    """The class of one thread from its name and whose it is (pure)."""
    if workload:
        if comm.startswith(IOWALL_TOOLS):  # the probes' own children: perf, its folding
            return "iowall"
        return "io_uring" if comm.startswith(("iou-wrk-", "iou-sqp-")) else "workload"
    if kthread and re.search(r"[-+]iou_", comm):  # kworkers on io_uring's own work (iou_exit)
        return "io_uring"
    if self_:
        return "iowall"
    if not kthread:
        return "neighbours"
    if comm.startswith("kswapd"):
        return "kswapd"
    if any(re.search(rf"[-+]flush-{re.escape(d)}$", comm) for d in devnos):
        return "flusher"
    if _FS.search(comm):
        return "fs"
    if any(re.search(rf"(^|[-+]){re.escape(d)}$", comm) for d in devices if d.startswith("loop")):
        return "loop"
    return "kthreads"


def self_children_ns() -> int:
    """CPU time of this process's reaped descendants (cutime + cstime), in ns."""
    f = _stat_fields("self")
    try:  # cutime, cstime are fields 16 and 17
        return (int(f[13]) + int(f[14])) * 1_000_000_000 // CLK_TCK
    except (IndexError, ValueError):
        return 0


def snapshot(devices: Sequence[str], devnos: Sequence[str]) -> Snapshot:
    """Every thread on the machine, classified, with its CPU time."""
    me = os.getpid()
    procs = _processes()
    mine = _descendants(procs, me)
    threads: Threads = {}
    others: Reapers = {
        pid: (ppid, reaped, own)
        for pid, (ppid, kthread, reaped, own) in procs.items()
        if not kthread and pid != me and pid not in mine
    }
    for pid, (_, kthread, _, _) in procs.items():
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            text = read_text(f"/proc/{pid}/task/{tid}/schedstat")
            comm = read_text(f"/proc/{pid}/task/{tid}/comm").rstrip("\n")
            try:
                ns = int(text.split()[0])
            except (IndexError, ValueError):
                continue
            cls = classify(
                comm, kthread=kthread, workload=pid in mine, self_=pid == me, devices=devices, devnos=devnos
            )
            threads[(pid, int(tid))] = (comm, ns, cls)
    return Snapshot(threads, parse_stat(read_text("/proc/stat")), self_children_ns(), me, others)


def _busy_ns(a: Mapping[str, tuple[int, ...]], b: Mapping[str, tuple[int, ...]]) -> tuple[float, float]:
    """(busy ns, steal ns) of all CPUs between two /proc/stat snapshots."""
    d = dict(
        zip(
            FIELDS,
            (max(0, y - x) for x, y in zip(a.get("cpu", ()), b.get("cpu", ()), strict=False)),
            strict=False,
        )
    )
    tick = 1e9 / CLK_TCK
    busy = sum(v for k, v in d.items() if k not in ("idle", "iowait", "steal"))
    return busy * tick, d.get("steal", 0) * tick


def attribute(samples: Sequence[tuple[float, Snapshot]]) -> dict[str, float]:
    """CPU-seconds per class over the samples (pure), plus ``busy`` and ``unattributed``.

    Interval by interval, each thread's CPU time since the snapshot before (all of it for a
    thread first seen then: it began during the point) goes to the class its name has at the
    interval's end: a kworker is named after the work it last ran (``-loop0``, ``-flush-7:0``),
    so its time follows its work. A thread that exits between two snapshots keeps what was
    seen of it; the workload's processes, once reaped, are counted whole through
    ``reaped_ns`` instead, less all that was seen of their threads and of the probes' tools
    (perf: class ``iowall``), whose whole lives the reaped time also holds. Other user
    processes' children likewise: what their parents reaped (``others``' growth, all of it for
    a process first seen then), less all that was seen of the processes that exited under a
    parent among them (their threads and their own reaped children), is the neighbours'."""
    first, last = samples[0][1], samples[-1][1]
    out = {c: 0.0 for c in CLASSES}
    seen_of_exited = 0.0  # children's threads that exited: all of their time seen, ns
    prev = first
    for _, snap in samples[1:]:
        for key, (_, ns, cls) in snap.threads.items():
            before = prev.threads.get(key)
            out[cls] += max(0, ns - (before[1] if before else 0)) / 1e9
        for key, (comm, ns, cls) in prev.threads.items():
            if key not in snap.threads and _child(cls, comm, key[0], snap.self_pid):
                seen_of_exited += ns
        prev = snap
    reaped = max(0, last.reaped_ns - first.reaped_ns) / 1e9
    # reaped time holds the exited children's whole lives: what was not seen of them is the
    # workload's (its last interval, or processes too short to be seen)
    out["workload"] += max(0.0, reaped - seen_of_exited / 1e9)
    out["neighbours"] += sum(reaped_by_others(samples).values()) / 1e9
    busy, steal = _busy_ns(first.stat, last.stat)
    out["steal"] = steal / 1e9
    out["busy"] = busy / 1e9 + out["steal"]
    named = sum(out[c] for c in CLASSES)
    out[UNATTRIBUTED] = max(0.0, out["busy"] - named)
    return out


def reaped_by_others(samples: Sequence[tuple[float, Snapshot]]) -> dict[int, int]:
    """pid → CPU ns of children another user process reaped during the samples and that no
    look saw: its ``cutime + cstime`` growth (all of it for a process first seen then), less
    all that was seen of each child that exited under it, whose whole life that growth holds
    (the child's threads and its own reaped children). A child of a kernel thread (a usermode
    helper) is reaped where no look reaches: what was seen of it stays where it was. A thread
    that exits before its process is held as seen until the process goes (its time is in
    what the parent reaps, and was counted while it ran); a process seen at the first look
    had run before the point, its threads that had already exited too (its own time then,
    less its threads', none of it the point's)."""
    out: dict[int, int] = {}
    first = samples[0][1]
    # pid → what was seen of its threads that are gone (ns); at first, the time before the
    # point of the threads no look saw (its own time at the first look less its threads')
    held: dict[int, int] = {pid: own for pid, (_, _, own) in first.others.items()}
    for (pid, _), (_, ns, _) in first.threads.items():
        if pid in held:
            held[pid] -= ns
    held = {pid: max(0, ns) for pid, ns in held.items()}
    prev = first
    for _, snap in samples[1:]:
        for pid, (_, ns, _) in snap.others.items():
            grew = ns - (prev.others[pid][1] if pid in prev.others else 0)
            if grew > 0:
                out[pid] = out.get(pid, 0) + grew
        for (pid, tid), (_, ns, _) in prev.threads.items():
            if pid in prev.others and (pid, tid) not in snap.threads:
                held[pid] = held.get(pid, 0) + ns
        for pid, (ppid, reaped, _) in prev.others.items():
            if pid in snap.others:
                continue
            seen = held.pop(pid, 0)
            if ppid in prev.others:
                out[ppid] = out.get(ppid, 0) - seen - reaped
        prev = snap
    return {pid: ns for pid, ns in out.items() if ns > 0}


def _child(cls: str, comm: str, pid: int, self_pid: int) -> bool:
    """Whether a thread is a child's, reaped into ``cutime``: the workload's (not the kworkers
    on io_uring's work, also class ``io_uring``) or a probe's tool's (not this process's)."""
    if cls == "io_uring":
        return comm.startswith(("iou-wrk-", "iou-sqp-"))
    return cls == "workload" or (cls == "iowall" and pid != self_pid)


def top_threads(samples: Sequence[tuple[float, Snapshot]], n: int = 12) -> list[tuple[str, str, float]]:
    """The ``n`` threads with most CPU time during the samples: (class, comm, seconds); another
    process's children no look saw are one entry, ``COMM (children)`` (``reaped_by_others``)."""
    first = samples[0][1]
    best: dict[tuple[int, int], tuple[str, str, float]] = {}
    for _, snap in samples:
        for key, (comm, ns, cls) in snap.threads.items():
            start = first.threads[key][1] if key in first.threads else 0
            best[key] = (cls, comm, max(0, ns - start) / 1e9)
    names = {
        pid: comm for _, snap in samples for (pid, tid), (comm, _, _) in snap.threads.items() if pid == tid
    }
    for pid, ns in reaped_by_others(samples).items():
        best[(pid, -1)] = ("neighbours", f"{names.get(pid, pid)} (children)", ns / 1e9)
    return sorted(best.values(), key=lambda x: -x[2])[:n]


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """Per class: CPU-seconds and share of the busy CPU time; a series of CPUs per class."""
    if len(samples) < 2:
        return [], []
    cpu = attribute(samples)
    busy = cpu["busy"]
    metrics = [
        metric("tasks_busy_cpu_s", busy, "s"),
        metric("tasks_window_s", samples[-1][0] - samples[0][0], "s"),
    ]
    for c in (*CLASSES, UNATTRIBUTED):
        metrics.append(metric(f"tasks_{c}_cpu_s", cpu[c], "s"))
        if busy > 0:
            metrics.append(metric(f"tasks_{c}_share", cpu[c] / busy, "share"))
    out: list[Series] = []
    for c in CLASSES:
        if c == "steal":
            continue
        pts = []
        for (t0, a), (t1, b) in zip(samples, samples[1:], strict=False):
            dt = t1 - t0
            if dt <= 0:
                continue
            ns = sum(
                max(0, v[1] - a.threads[k][1]) for k, v in b.threads.items() if v[2] == c and k in a.threads
            )
            ns += sum(v[1] for k, v in b.threads.items() if v[2] == c and k not in a.threads)
            pts.append((t1, ns / 1e9 / dt))
        if any(v for _, v in pts):
            out.append(series("tasks", f"{c}_cpus", "CPUs", pts))
    return out, metrics


class TasksProbe(SampledProbe[Snapshot]):
    """CPU time per class of thread: workload, io_uring, loop, flusher, kswapd, fs, …"""

    name = "tasks"
    innermost = True
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        if not read_text("/proc/self/schedstat"):
            return "/proc/PID/schedstat is missing (kernel without CONFIG_SCHED_INFO)"
        return None

    def read(self) -> Snapshot:
        return snapshot(self.ctx.devices, self.ctx.devnos)

    def result(self, samples: Sequence[tuple[float, Snapshot]]) -> ProbeResult:
        res = super().result(samples)
        if len(samples) < 2:
            return res
        doc = [{"class": c, "comm": comm, "cpu_s": round(s, 4)} for c, comm, s in top_threads(samples)]
        return ProbeResult(
            res.probe, res.series, res.metrics, (Artifact("tasks_top.json", "application/json", dumps(doc)),)
        )
