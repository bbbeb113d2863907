"""The one sampling loop every procfs probe shares, and small helpers for their results.

A :class:`SampledProbe` reads a snapshot (``read()``) at start, every ``ctx.interval_s`` in a
background thread, and once more at stop; it then turns the timed snapshots into series and
metrics (``result()``). Snapshot times are seconds since the probe set's common start
(``t0``), so the series of different probes line up.
"""

from __future__ import annotations

import math
import os
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from ..model import Direction, Metric, Series
from .base import Probe, ProbeContext, ProbeResult

S = TypeVar("S")

#: USER_HZ: the unit of utime/stime in /proc/PID/stat.
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def read_text(path: str) -> str:
    """A procfs/sysfs file's text ('' when it vanished or cannot be read).

    Plain os.open/os.read: a quarter of the cost of open().read(), which matters for the
    kworker scans (hundreds of small files per second).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace")


class PeriodicSampler(Generic[S]):
    """Calls ``read`` now, every ``interval_s`` in a daemon thread (no drift: deadlines are
    absolute), and once more at ``stop``; keeps ``(t, snapshot)`` pairs.

    An exception in ``read`` is kept (first one) and the sample skipped; sampling goes on.
    """

    def __init__(
        self, read: Callable[[], S], interval_s: float, t0: float | None = None, name: str = "sampler"
    ) -> None:
        self._read = read
        self.interval_s = max(0.01, float(interval_s))
        self.t0 = time.monotonic() if t0 is None else t0
        self.samples: list[tuple[float, S]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"iowall-{name}", daemon=True)
        self._started = False

    def _take(self) -> None:
        try:
            snap = self._read()
        except Exception as e:  # one bad read must not end the series
            if self.error is None:
                self.error = e
            return
        with self._lock:
            self.samples.append((time.monotonic() - self.t0, snap))

    def _loop(self) -> None:
        deadline = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, deadline - time.monotonic())):
            self._take()
            deadline += self.interval_s
            now = time.monotonic()
            if deadline < now:  # we fell behind (suspended?): skip, do not burst
                deadline = now + self.interval_s

    def start(self) -> None:
        """First sample now, then the thread."""
        self._take()
        self._started = True
        self._thread.start()

    def stop(self) -> list[tuple[float, S]]:
        """Stop the thread, take the last sample, return all of them (idempotent)."""
        if self._started and not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=10 * self.interval_s + 5)
            self._take()
        with self._lock:
            return list(self.samples)


class SampledProbe(Probe, Generic[S]):
    """A probe whose data is periodic snapshots of kernel state (procfs, sysfs)."""

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        #: common start time of the probe set (``time.monotonic()``), set by ProbeSet.
        self.t0: float | None = None
        self._sampler: PeriodicSampler[S] | None = None

    @abstractmethod
    def read(self) -> S:
        """One snapshot of the state this probe watches."""

    #: the probe module's pure ``summarize(samples) -> (series, metrics)``
    summarize: Callable[[Sequence[tuple[float, S]]], tuple[list[Series], list[Metric]]]

    def result(self, samples: Sequence[tuple[float, S]]) -> ProbeResult:
        """Series and metrics from the timed snapshots (pure: tests feed recorded text)."""
        s, m = type(self).summarize(samples)
        return ProbeResult(self.name, series=tuple(s), metrics=tuple(m))

    def sample_interval_s(self) -> float:
        """How often ``read`` runs (``ctx.interval_s`` unless the probe needs finer)."""
        return self.ctx.interval_s

    def start(self) -> None:
        self._sampler = PeriodicSampler(self.read, self.sample_interval_s(), self.t0, self.name)
        self._sampler.start()

    def stop(self) -> ProbeResult:
        if self._sampler is None:
            return ProbeResult(self.name, skipped="not started")
        samples = self._sampler.stop()
        res = self.result(samples)
        if self._sampler.error is not None:
            note = f"a sample failed: {self._sampler.error}"
            res = ProbeResult(
                res.probe, res.series, res.metrics, res.artifacts, res.skipped, res.notes + (note,)
            )
        return res


# -- helpers for results ----------------------------------------------------------------------


def intervals(samples: Sequence[tuple[float, S]]) -> Iterable[tuple[float, float, S, S]]:
    """``(t_end, dt, previous, current)`` for each pair of consecutive snapshots."""
    for (t_a, a), (t_b, b) in zip(samples, samples[1:], strict=False):
        dt = t_b - t_a
        if dt > 0:
            yield t_b, dt, a, b


def rebucket(
    points: Iterable[tuple[float, float, float]], bucket_s: float
) -> list[tuple[float, float, float]]:
    """Fine ``(t_end, dt, amount)`` intervals summed into buckets of ``bucket_s`` seconds:
    ``(last t_end in the bucket, seconds covered, amount)``; amount / covered is the rate."""
    out: dict[int, list[float]] = {}
    for t, dt, amount in points:
        k = max(0, math.ceil(round(t / bucket_s, 6)) - 1)
        b = out.setdefault(k, [0.0, 0.0, 0.0])
        b[0] = max(b[0], t)
        b[1] += dt
        b[2] += amount
    return [(v[0], v[1], v[2]) for _, v in sorted(out.items())]


def series(probe: str, name: str, unit: str, points: Iterable[tuple[float, float]]) -> Series:
    """A Series with times and values rounded to sensible precision."""
    return Series(probe, name, unit, tuple((round(t, 3), float(v)) for t, v in points))


def metric(name: str, value: float, unit: str, direction: Direction = "lower") -> Metric:
    """A Metric (the default direction of a diagnostic quantity is lower-is-better)."""
    return Metric(name, float(value), unit, direction)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def span(samples: Sequence[tuple[float, object]]) -> float:
    """Seconds between the first and the last snapshot."""
    return samples[-1][0] - samples[0][0] if len(samples) >= 2 else 0.0
