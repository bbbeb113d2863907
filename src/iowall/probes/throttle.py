"""``throttle``: time writers spend paused in balance_dirty_pages (dirty-page throttling).

The ``writeback:balance_dirty_pages`` tracepoint is enabled in a private ftrace instance and
its ``trace_pipe`` drained by a thread. The event's ``pause``, ``paused``, ``period`` and
``think`` fields are milliseconds (``pause * 1000 / HZ`` in include/trace/events/writeback.h;
the format file gives no unit). An event with ``pause <= 0`` is a call that did not sleep;
``pause > 0`` is a sleep of that many ms (``io_schedule_timeout``). ``limit``, ``setpoint``,
``dirty`` and ``wb_dirty`` are pages.

``limit`` is not /proc/vmstat's ``nr_dirty_threshold``: it is the global domain's smoothed
hard limit ``global_wb_domain.dirty_limit`` (kernels that trace ``dtc->limit`` print
``hard_dirty_limit()``, the larger of it and the threshold). mm/page-writeback.c,
``update_dirty_limit``: it follows the threshold up at once and down by 1/32 of the gap per
200 ms update, and is updated only while writers are throttled. ``setpoint`` = (limit +
(threshold + background) / 2) / 2 lies between the freerun ceiling and it.
analysis/explain/dirty.py puts the two side by side.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field

from ..machine import sysinfo
from ..model import Artifact, Metric, Series
from ..vocab.errors import IowallError
from . import tracefs
from .base import Probe, ProbeContext, ProbeResult
from .bdi import bdi_names
from .sampling import PAGE_SIZE, metric, series

EVENT = "events/writeback/balance_dirty_pages"
#: ring buffer per CPU of the private instance; a throttled run emits ~100-10k events/s.
BUFFER_KB = 8192
#: raw trace lines kept as an artifact (the first ones of the run).
RAW_LINES = 500
#: fields the probe needs from the event (checked against the format file).
NEEDED_FIELDS = ("pause", "limit", "setpoint", "dirty")

LINE = re.compile(
    r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*\S+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"(?:\S+\s+)?(?P<ts>\d+\.\d+): balance_dirty_pages: bdi (?P<bdi>\S+?): "
    r"(?P<kv>.*)$"
)


@dataclass
class TaskPause:
    """One task's throttling."""

    comm: str
    pause_ms: int = 0
    sleeps: int = 0
    max_pause_ms: int = 0


@dataclass
class Bucket:
    """Events of one sampling interval."""

    pause_ms: int = 0
    sleeps: int = 0
    limit: int = 0
    setpoint: int = 0
    dirty: int = 0
    pids: set[int] = field(default_factory=set)


@dataclass
class ThrottleStats:
    """Aggregates of balance_dirty_pages events, fed line by line (pure: no I/O).

    ``t0`` is the trace-clock time of the run's start (CLOCK_MONOTONIC with ``trace_clock``
    mono); ``bdis`` keeps only these devices (``MAJ:MIN``), all when empty.
    """

    t0: float = 0.0
    interval_s: float = 1.0
    bdis: tuple[str, ...] = ()
    calls: int = 0
    sleeps: int = 0
    pause_ms: int = 0
    max_pause_ms: int = 0
    tasks: dict[int, TaskPause] = field(default_factory=dict)
    buckets: dict[int, Bucket] = field(default_factory=dict)
    limit_max: int = 0
    limit_min: int = 0
    setpoint_max: int = 0
    setpoint_min: int = 0
    dirty_max: int = 0
    other_bdi: int = 0
    unparsed: int = 0

    def feed(self, line: str) -> None:
        """Account one line of trace_pipe text (other lines are counted as unparsed)."""
        m = LINE.match(line)
        if m is None:
            if "balance_dirty_pages" in line:
                self.unparsed += 1
            return
        if self.bdis and m["bdi"] not in self.bdis:
            self.other_bdi += 1
            return
        kv = dict(p.split("=", 1) for p in m["kv"].split() if "=" in p)
        try:
            pause = int(kv["pause"])
            limit, setpoint, dirty = int(kv["limit"]), int(kv["setpoint"]), int(kv["dirty"])
        except (KeyError, ValueError):
            self.unparsed += 1
            return
        self.calls += 1
        idx = int((float(m["ts"]) - self.t0) // self.interval_s)
        b = self.buckets.setdefault(idx, Bucket())
        b.limit, b.setpoint, b.dirty = limit, setpoint, dirty
        self.limit_max = max(self.limit_max, limit)
        self.limit_min = min(self.limit_min, limit) if self.limit_min else limit
        self.setpoint_max = max(self.setpoint_max, setpoint)
        self.setpoint_min = min(self.setpoint_min, setpoint) if self.setpoint_min else setpoint
        self.dirty_max = max(self.dirty_max, dirty)
        if pause <= 0:  # the task was let through without sleeping
            return
        pid = int(m["pid"])
        task = self.tasks.setdefault(pid, TaskPause(m["comm"].strip()))
        task.pause_ms += pause
        task.sleeps += 1
        task.max_pause_ms = max(task.max_pause_ms, pause)
        self.sleeps += 1
        self.pause_ms += pause
        self.max_pause_ms = max(self.max_pause_ms, pause)
        b.pause_ms += pause
        b.sleeps += 1
        b.pids.add(pid)

    def series(self) -> list[Series]:
        """Per interval: pause (s per s = tasks paused on average), sleeps/s, tasks paused,
        and the last dirty limit, setpoint and dirty level seen (bytes)."""
        if not self.buckets:
            return []
        iv = self.interval_s
        rows = [
            ((k + 1) * iv, self.buckets.get(k, Bucket()))
            for k in range(min(self.buckets), max(self.buckets) + 1)
        ]
        seen = [(t, b) for t, b in rows if b.limit]
        return [
            series(
                "throttle",
                "throttle_pause_s_per_s",
                "s_per_s",
                [(t, b.pause_ms / 1000 / iv) for t, b in rows],
            ),
            series(
                "throttle", "throttle_events_per_s", "events_per_s", [(t, b.sleeps / iv) for t, b in rows]
            ),
            series("throttle", "throttle_tasks", "tasks", [(t, len(b.pids)) for t, b in rows]),
            series("throttle", "dirty_limit_bytes", "bytes", [(t, b.limit * PAGE_SIZE) for t, b in seen]),
            series(
                "throttle", "dirty_setpoint_bytes", "bytes", [(t, b.setpoint * PAGE_SIZE) for t, b in seen]
            ),
            series("throttle", "dirty_bytes", "bytes", [(t, b.dirty * PAGE_SIZE) for t, b in seen]),
        ]

    def metrics(self, lost: int) -> list[Metric]:
        """Summary metrics: total pause, sleeps, tasks, the range of limits and setpoints seen
        (0 when no event came), lost events."""
        top = max((t.pause_ms for t in self.tasks.values()), default=0)
        return [
            metric("throttle_pause_s", self.pause_ms / 1000, "s"),
            metric("throttle_events", self.sleeps, "events"),
            metric("throttle_calls", self.calls, "events"),
            metric("throttle_tasks", len(self.tasks), "tasks"),
            metric("throttle_pause_max_s", self.max_pause_ms / 1000, "s"),
            metric("throttle_task_pause_max_s", top / 1000, "s"),
            metric("throttle_limit_bytes", self.limit_max * PAGE_SIZE, "bytes", "higher"),
            metric("throttle_limit_min_bytes", self.limit_min * PAGE_SIZE, "bytes", "higher"),
            metric("throttle_setpoint_bytes", self.setpoint_max * PAGE_SIZE, "bytes", "higher"),
            metric("throttle_setpoint_min_bytes", self.setpoint_min * PAGE_SIZE, "bytes", "higher"),
            metric("throttle_dirty_max_bytes", self.dirty_max * PAGE_SIZE, "bytes"),
            metric("throttle_lost_events", lost, "events"),
        ]

    def table(self) -> list[dict[str, object]]:
        """Per-task pause table, most paused first (JSON-able)."""
        return [
            {
                "pid": pid,
                "comm": t.comm,
                "pause_s": t.pause_ms / 1000,
                "sleeps": t.sleeps,
                "max_pause_ms": t.max_pause_ms,
            }
            for pid, t in sorted(self.tasks.items(), key=lambda kv: -kv[1].pause_ms)
        ]


def format_fields(format_text: str) -> set[str]:
    """Field names declared in a tracepoint's format file."""
    return set(re.findall(r"field:[^;]*?\b(\w+)(?:\[\d+\])?;", format_text))


class ThrottleProbe(Probe):
    """Dirty throttling pauses per task and in total, and the dirty limits the kernel used."""

    name = "throttle"

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self.t0: float | None = None
        self._inst: tracefs.Instance | None = None
        self._fd: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stats = ThrottleStats()
        self._buf = b""
        self._notes: list[str] = []
        self._acquired = False
        self._raw: list[str] = []

    def unavailable(self) -> str | None:
        if os.geteuid() != 0:
            return "needs root (tracefs)"
        if not tracefs.supported():
            return "the kernel has no tracefs"
        if tracefs.mounted() and not os.path.exists(f"{tracefs.TRACEFS}/{EVENT}"):
            return "no writeback:balance_dirty_pages tracepoint in this kernel"
        return None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        try:
            self._setup()
        except BaseException:
            self._teardown()
            raise

    def _setup(self) -> None:
        root = tracefs.acquire()
        self._acquired = True
        fields = format_fields(sysinfo.read(f"{root}/{EVENT}/format"))
        missing = [f for f in NEEDED_FIELDS if f not in fields]
        if missing:
            raise IowallError(f"balance_dirty_pages lacks field(s) {', '.join(missing)}")
        t0 = time.monotonic() if self.t0 is None else self.t0
        bdis = bdi_names(self.ctx.devices, self.ctx.devnos)
        self._stats = ThrottleStats(t0=t0, interval_s=self.ctx.interval_s, bdis=bdis)
        inst = self._inst = tracefs.Instance(root).create()
        inst.write("tracing_on", "0")
        inst.write("buffer_size_kb", str(BUFFER_KB))
        try:
            inst.write("trace_clock", "mono")  # timestamps comparable with time.monotonic()
        except OSError:
            self._notes.append("trace_clock mono refused: series times are approximate")
        if bdis:
            flt = " || ".join(f'bdi == "{d}"' for d in bdis)
            try:
                inst.write(f"{EVENT}/filter", flt)
            except OSError:
                self._notes.append("kernel-side bdi filter refused: filtered in iowall")
        inst.write(f"{EVENT}/enable", "1")
        self._fd = os.open(str(inst.path / "trace_pipe"), os.O_RDONLY | os.O_NONBLOCK)
        inst.write("tracing_on", "1")
        self._thread = threading.Thread(target=self._loop, name="iowall-throttle", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        if self._fd is None:
            return
        while True:
            try:
                chunk = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                return
            if not chunk:
                return
            data = self._buf + chunk
            *lines, self._buf = data.split(b"\n")
            for line in lines:
                text = line.decode(errors="replace")
                if len(self._raw) < RAW_LINES:
                    self._raw.append(text)
                self._stats.feed(text)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self._drain()
            except OSError as e:
                self._notes.append(f"reading trace_pipe failed: {e}")
                return

    def stop(self) -> ProbeResult:
        lost = 0
        try:
            if self._inst is not None:
                try:
                    self._inst.write(f"{EVENT}/enable", "0")
                except OSError:
                    pass
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._drain()
            if self._buf:
                self._stats.feed(self._buf.decode(errors="replace"))
                self._buf = b""
            if self._inst is not None:
                lost = self._inst.lost_events()
        finally:
            self._teardown()
        st = self._stats
        if lost:
            self._notes.append(
                f"{lost} events lost (ring buffer of {BUFFER_KB} KiB per CPU "
                "overran): pause totals are a lower bound"
            )
        if st.unparsed:
            self._notes.append(f"{st.unparsed} trace lines could not be parsed")
        arts = (
            Artifact("throttle_tasks.json", "application/json", json.dumps(st.table(), indent=1)),
            Artifact("throttle_trace_head.txt", "text/plain", "\n".join(self._raw)),
        )
        return ProbeResult(
            self.name,
            series=tuple(st.series()),
            metrics=tuple(st.metrics(lost)),
            artifacts=arts,
            notes=tuple(self._notes),
        )

    def _teardown(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None
        if self._inst is not None:
            try:
                self._inst.remove()
            finally:
                self._inst = None
        if self._acquired:
            self._acquired = False
            if not tracefs.release():
                self._notes.append("tracefs left mounted: busy (another user)")
