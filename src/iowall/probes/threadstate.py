"""``threadstate``: where each workload thread's wall-clock time goes, sampled from procfs.

For every thread of the workload (this process's descendants, less the probes' own tools):
every ``BUCKET_S`` the exact counters (``schedstat``: ns on a CPU and ns runnable but waiting;
``stat``: user and system ticks; ``io``: read/write syscalls and bytes), and ``HZ`` times a
second (jittered, so a periodic workload is not aliased; fewer with more than
``LOOKS_PER_S / HZ`` threads) the thread's kernel stack (``/proc/TID/stack``: empty while it
runs). The cgroups of the workload's
processes are read every bucket too (CPU throttling, memory events, I/O bytes).

Open file descriptors are re-read with ``pread``, so one sample of one thread costs a few
microseconds of syscalls and more of Python: the probe's own CPU is measured by
``benchmarks/threadstate_cost.py`` (docs/benchmarks.md; docs/design-notes.md, "Thread-state
sampling"). The probe only records; which
reason a stack stands for and what the budget says is decided later, from the stored samples,
by ``iowall.analysis.explain.budget`` (a better table then applies to old runs too).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..machine import cgroups
from ..model import Artifact
from .base import Probe, ProbeContext, ProbeResult
from .sampling import CLK_TCK, metric, read_text
from .tasks import IOWALL_TOOLS

ARTIFACT = "threadstate.json"
#: The columns of each thread's rows, in order (the document carries them: ``row_fields``)
ROW_FIELDS = (
    "t",
    "exec_ns",
    "delay_ns",
    "utime",
    "stime",
    "syscr",
    "syscw",
    "rchar",
    "wchar",
    "samples",
    "running",
)
VERSION = 1
#: stack samples per second per thread (jittered ±50%): 100 looks a thread over a 2 s window
HZ = 50
#: at most this many looks a second over all threads: with more than LOOKS_PER_S / HZ
#: threads each is looked at less often, so the probe's cost does not grow with the thread
#: count (the sample count over the workload stays the same)
LOOKS_PER_S = 400
#: how often the exact counters (and the cgroups) are read
BUCKET_S = 0.25
#: how often new threads are looked for
DISCOVER_S = 0.25
_COUNTERS = ("stat", "schedstat", "io", "stack")
#: The leaf frame added to the stack of a look that found the thread runnable (state R) off
#: its CPU: preempted, or woken and waiting for a CPU (``analysis.explain.offcpu.PREEMPTED``).
RUNNABLE = "[runnable]"


@dataclass
class _Thread:
    pid: int
    tid: int
    comm: str
    cg: int
    fds: dict[str, int]
    rows: list[list[float]] = field(default_factory=list)
    blocked: dict[tuple[int, int], int] = field(default_factory=dict)
    samples: int = 0
    running: int = 0
    alive: bool = True
    #: at the last look: schedstat's count of arrivals on a CPU, and the stack found off it
    #: (None: running, or not looked at yet)
    pcount: bytes = b""
    last_sid: int | None = None
    #: the CPUs it may run on, as last read (fio sets a job's affinity after it starts)
    allowed: list[int] = field(default_factory=list)

    def read(self, what: str) -> str:
        try:
            return os.pread(self.fds[what], 16384, 0).decode(errors="replace")
        except (OSError, KeyError):
            return ""

    def close(self) -> None:
        for fd in self.fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = {}
        self.alive = False


def _open(pid: int, tid: int) -> dict[str, int] | None:
    fds: dict[str, int] = {}
    for name in _COUNTERS:
        try:
            fds[name] = os.open(f"/proc/{pid}/task/{tid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            if name in ("stat", "schedstat", "stack"):
                for fd in fds.values():
                    os.close(fd)
                return None
    return fds


def parse_row(stat: str, schedstat: str, io: str) -> list[float] | None:
    """``[exec_ns, delay_ns, utime, stime, syscr, syscw, rchar, wchar]`` from one thread's
    files, or None when it is gone (pure)."""
    fields = stat.rpartition(")")[2].split()
    sched = schedstat.split()
    try:
        utime, stime = int(fields[11]), int(fields[12])
        exec_ns, delay_ns = int(sched[0]), int(sched[1])
    except (IndexError, ValueError):
        return None
    iod: dict[str, int] = {}
    for line in io.splitlines():
        k, _, v = line.partition(":")
        if v.strip().isdigit():
            iod[k.strip()] = int(v)
    return [
        exec_ns,
        delay_ns,
        utime,
        stime,
        iod.get("syscr", 0),
        iod.get("syscw", 0),
        iod.get("rchar", 0),
        iod.get("wchar", 0),
    ]


def parse_stack(text: str) -> str:
    """``/proc/TID/stack`` (leaf first, ``[<0>] fn+0x1/0x2``) as one folded line, root first
    and without offsets (pure); '' for an empty stack (the task was running)."""
    frames = []
    for line in text.splitlines():
        fn = line.split("]", 1)[-1].strip().split("+", 1)[0]
        if fn:
            frames.append(fn)
    return ";".join(reversed(frames))


#: cgroup counters whose change over the point a run keeps as metrics (docs/cgroups.md)
CGROUP_METRICS = {
    "cg_cpu_nr_periods": "periods",
    "cg_cpu_nr_throttled": "periods",
    "cg_cpu_throttled_s": "s",
    "cg_mem_max_events": "events",
    "cg_mem_high_events": "events",
    "cg_mem_oom_events": "events",
    "cg_mem_oom_kill_events": "events",
    "cg_mem_pgscan": "pages",
    "cg_mem_pgsteal": "pages",
    "cg_io_read_bytes": "bytes",
    "cg_io_write_bytes": "bytes",
}


def cgroup_metrics(rows: list[list[Any]]) -> list[Any]:
    """The change of each counter of ``CGROUP_METRICS`` between the first and last row of
    the measuring process's cgroups (pure); counters its cgroups lack are left out."""
    if len(rows) < 2:
        return []
    a, b = rows[0][1], rows[-1][1]
    return [
        metric(k, float(b[k]) - float(a[k]), unit) for k, unit in CGROUP_METRICS.items() if k in a and k in b
    ]


class ThreadStateProbe(Probe):
    """Per workload thread: on-CPU, runnable-waiting and blocked time, blocked stacks sampled."""

    name = "threadstate"

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self.t0: float | None = None
        self._me = os.getpid()
        self._threads: dict[int, _Thread] = {}
        self._seen_pids: dict[int, int] = {}
        self._cgroups: list[dict[str, Any]] = []
        self._cg_index: dict[tuple[str | None, ...], int] = {}
        self._stacks: dict[str, int] = {}
        self._raw_stacks: dict[bytes, int] = {}
        self._runnable: dict[int, int] = {}  # stack id → the id of it with the RUNNABLE leaf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ticks = 0
        self._busy_s = 0.0
        self.error: BaseException | None = None

    def unavailable(self) -> str | None:
        if os.geteuid() != 0:
            return "reading the workload's kernel stacks (/proc/PID/task/TID/stack) needs root"
        if not read_text("/proc/self/schedstat"):
            return "/proc/PID/schedstat is missing (kernel without CONFIG_SCHED_INFO)"
        if not read_text(f"/proc/{self._me}/task/{self._me}/children") and not os.path.exists(
            f"/proc/{self._me}/task/{self._me}/children"
        ):
            return "/proc/PID/task/TID/children is missing (kernel without CONFIG_PROC_CHILDREN)"
        return None

    # -- discovery -------------------------------------------------------------------------

    def _descendants(self) -> list[int]:
        out: list[int] = []
        todo = [self._me]
        while todo:
            pid = todo.pop()
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                kids = read_text(f"/proc/{pid}/task/{tid}/children").split()
                for k in kids:
                    if k.isdigit():
                        out.append(int(k))
                        todo.append(int(k))
        return out

    def _cgroup_of(self, pid: int) -> int:
        try:
            cg = cgroups.locate(pid)
        except (OSError, ValueError):
            return -1
        key = (cg.cpu, cg.memory, cg.io)
        if key not in self._cg_index:
            self._cg_index[key] = len(self._cgroups)
            self._cgroups.append(
                {"paths": dict(cg.paths), "limits": cgroups.limits(cg), "where": cg, "rows": []}
            )
        return self._cg_index[key]

    def _discover(self) -> None:
        for pid in self._descendants():
            if pid in self._seen_pids:
                cg = self._seen_pids[pid]
            else:
                comm = read_text(f"/proc/{pid}/comm").strip()
                if not comm or comm.startswith(IOWALL_TOOLS):
                    self._seen_pids[pid] = -2
                    continue
                cg = self._seen_pids[pid] = self._cgroup_of(pid)
            if cg == -2:
                continue
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for t in tids:
                tid = int(t)
                if tid in self._threads:
                    continue
                fds = _open(pid, tid)
                if fds is None:
                    continue
                comm = read_text(f"/proc/{pid}/task/{tid}/comm").strip()
                th = _Thread(pid, tid, comm, cg, fds)
                self._threads[tid] = th
                self._row(th, self._now())

    # -- sampling --------------------------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic() - (self.t0 or 0.0)

    def _row(self, th: _Thread, t: float) -> None:
        stat = th.read("stat")
        row = parse_row(stat, th.read("schedstat"), th.read("io"))
        if row is None or stat.rpartition(")")[2][1:2] in ("Z", "X"):
            th.close()  # gone, or a zombie its parent has not reaped: its time has ended
            return
        th.rows.append([round(t, 4), *row, th.samples, th.running])
        try:
            th.allowed = sorted(os.sched_getaffinity(th.tid))
        except OSError:
            pass

    def _sample(self, th: _Thread) -> None:
        """One look at one thread: its state (``stat``) and kernel stack (empty while it
        runs). A task off its CPU in state R is runnable, not blocked: its stack (where it was
        preempted, or woken and not yet run) is kept with the leaf ``RUNNABLE``, which the
        analysis counts as running. /proc/TID/stack leaves out the scheduler's functions, so
        a task preempted in ``cond_resched`` shows only its caller (iomap_file_buffered_write)
        and only its state says it was not blocked. A thread found off its CPU that has not
        arrived on one since (schedstat's third field unchanged) is still where it was: its
        stack cannot have changed, so it is not read again. The stack read is the look's
        cost (the kernel symbolises every frame: ~50 us a look here against a few for
        schedstat); the state is read only off the CPU; raw stacks are parsed once each."""
        try:
            sched = os.pread(th.fds["schedstat"], 256, 0)
            pcount = sched.split()[2]
            sid = th.last_sid if pcount == th.pcount else None
            text = b"" if sid is not None else os.pread(th.fds["stack"], 16384, 0)
            off = sid is not None or bool(text)
            stat = os.pread(th.fds["stat"], 1024, 0) if off else b""  # read only off its CPU
        except (OSError, KeyError, IndexError):
            th.close()
            return
        th.samples += 1
        th.pcount = pcount
        if not off:
            th.running += 1
            th.last_sid = None
            return
        if sid is None:
            sid = self._raw_stacks.get(text)
            if sid is None:
                stack = parse_stack(text.decode(errors="replace"))
                sid = self._raw_stacks[text] = self._stacks.setdefault(stack, len(self._stacks))
        th.last_sid = sid
        if stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"R":
            sid = self._runnable_sid(sid)
        key = (len(th.rows), sid)
        th.blocked[key] = th.blocked.get(key, 0) + 1

    def _runnable_sid(self, sid: int) -> int:
        """The id of stack ``sid`` with the leaf ``RUNNABLE``: the same place, not blocked."""
        out = self._runnable.get(sid)
        if out is None:
            stack = next(s for s, i in self._stacks.items() if i == sid)
            out = self._runnable[sid] = self._stacks.setdefault(f"{stack};{RUNNABLE}", len(self._stacks))
        return out

    def _cgroup_rows(self, t: float) -> None:
        for cg in self._cgroups:
            try:
                cg["rows"].append([round(t, 4), cgroups.counters(cg["where"])])
            except (OSError, ValueError):
                pass

    def _loop(self) -> None:
        rng = random.Random(self._me)
        next_bucket = next_discover = time.monotonic()
        live: list[_Thread] = []
        try:
            while True:
                tick = max(1.0 / HZ, len(live) / LOOKS_PER_S)
                if self._stop.wait(rng.uniform(0.5, 1.5) * tick):
                    break
                start = time.monotonic()
                if start >= next_discover:
                    self._discover()
                    next_discover = start + DISCOVER_S
                live = [th for th in self._threads.values() if th.alive]
                for th in live:
                    self._sample(th)
                if start >= next_bucket:
                    t = self._now()
                    for th in live:
                        if th.alive:
                            self._row(th, t)
                    self._cgroup_rows(t)
                    next_bucket = start + BUCKET_S
                self._ticks += 1
                self._busy_s += time.monotonic() - start
        except Exception as e:  # keep what was sampled; say so
            self.error = e

    def start(self) -> None:
        if self.t0 is None:
            self.t0 = time.monotonic()
        self._cgroup_of(self._me)
        self._cgroup_rows(self._now())
        self._thread = threading.Thread(target=self._loop, name="iowall-threadstate", daemon=True)
        self._thread.start()

    def stop(self) -> ProbeResult:
        if self._thread is None:
            return ProbeResult(self.name, skipped="not started")
        self._stop.set()
        self._thread.join(timeout=10)
        t = self._now()
        for th in self._threads.values():
            if th.alive:
                self._row(th, t)
                th.close()
        self._cgroup_rows(t)
        doc = self.document()
        notes = [f"a sample failed: {self.error}"] if self.error else []
        wall = max(1e-9, t)
        return ProbeResult(
            self.name,
            metrics=(
                metric("threadstate_threads", len(self._threads), "threads"),
                metric("threadstate_ticks", self._ticks, "samples"),
                metric("threadstate_probe_cpu_share", self._busy_s / wall, "share"),
                *cgroup_metrics(self._cgroups[0]["rows"] if self._cgroups else []),
            ),
            artifacts=(Artifact(ARTIFACT, "application/json", json.dumps(doc, separators=(",", ":"))),),
            notes=tuple(notes),
        )

    def document(self) -> dict[str, Any]:
        """The artifact: threads with their counter rows and blocked-stack counts, the
        distinct stacks, and the cgroups with their counter rows (docs/explain.md)."""
        threads = []
        for th in sorted(self._threads.values(), key=lambda x: x.tid):
            if len(th.rows) < 1:
                continue
            threads.append(
                {
                    "pid": th.pid,
                    "tid": th.tid,
                    "comm": th.comm,
                    "cgroup": th.cg,
                    "allowed_cpus": th.allowed,
                    "rows": th.rows,
                    "blocked": [[r, s, n] for (r, s), n in sorted(th.blocked.items())],
                }
            )
        stacks = [s for s, _ in sorted(self._stacks.items(), key=lambda kv: kv[1])]
        cgs = [{"paths": c["paths"], "limits": c["limits"], "rows": c["rows"]} for c in self._cgroups]
        return {
            "version": VERSION,
            "hz": HZ,
            "bucket_s": BUCKET_S,
            "clk_tck": CLK_TCK,
            "row_fields": list(ROW_FIELDS),
            "threads": threads,
            "stacks": stacks,
            "cgroups": cgs,
        }
