"""``flusher``: CPU used by the writeback kworkers serving the bed's device.

A kworker running bdi writeback (``wb_workfn``) carries ``flush-MAJ:MIN`` in its comm
(``kworker/u8:3+flush-7:0`` while running it, ``-flush-7:0`` after, until it picks up other
work). The comm changes as the worker switches work items, so every sample rescans the
kworkers and an interval's CPU time is attributed to the device whose tag the worker
carried at the start or at the end of the interval; the kworkers are sampled every 0.25 s
(cheap: only kthreadd's children are read) and the series summed per ``ctx.interval_s``.
Seed 004: "the single biggest performance limitation is the single threaded BDI flush
worker". btrfs flushes through its own bdi (``flush-btrfs-N``, see bdi.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import Metric, Series
from .base import ProbeContext, ProbeResult
from .bdi import bdi_names
from .sampling import SampledProbe, intervals, metric, rebucket, series, span
from .threads import TaskTimes, scan

#: the flusher's own sampling interval (its series are still per ``ctx.interval_s``).
SAMPLE_S = 0.25
FLUSH_TAG = re.compile(r"[+-]flush-(\S+)$")


def flush_bdi(comm: str) -> str | None:
    """The bdi a kworker flushes: ``7:0`` from ``kworker/u8:3-flush-7:0``, ``btrfs-2`` from
    ``kworker/u8:1+flush-btrfs-2``; None for any other comm."""
    m = FLUSH_TAG.search(comm)
    return m.group(1) if m else None


def may_flush(comm: str) -> bool:
    """Writeback runs on the unbound ``writeback`` workqueue: unbound kworkers
    (``kworker/u8:3``) or its rescuer (``kworker/R-writeback``), never per-CPU ones."""
    return comm.startswith(("kworker/u", "kworker/R-writeback"))


def attribute(
    samples: Sequence[tuple[float, TaskTimes]], bdis: Sequence[str] = ()
) -> tuple[list[tuple[float, float, dict[str, float]]], set[int]]:
    """Per interval ``(t_end, dt, {bdi: CPU seconds})`` and the pids that flushed.

    ``bdis`` (``7:0``, ``btrfs-2``) empty means every device's flusher.
    """
    rows: list[tuple[float, float, dict[str, float]]] = []
    workers: set[int] = set()
    for t, dt, a, b in intervals(samples):
        cpu: dict[str, float] = {d: 0.0 for d in bdis}
        for pid, (comm_b, rt_b) in b.items():
            if pid not in a:
                continue
            comm_a, rt_a = a[pid]
            dev = flush_bdi(comm_b) or flush_bdi(comm_a)
            if dev is None or (bdis and dev not in bdis):
                continue
            cpu[dev] = cpu.get(dev, 0.0) + max(0, rt_b - rt_a) / 1e9
            if rt_b > rt_a:
                workers.add(pid)
        rows.append((t, dt, cpu))
    return rows, workers


def summarize(
    samples: Sequence[tuple[float, TaskTimes]], bdis: Sequence[str] = (), bucket_s: float = 1.0
) -> tuple[list[Series], list[Metric]]:
    """``flusher_cpu_share`` per ``bucket_s`` (CPUs: 1.0 is one full CPU), its mean and max."""
    rows, workers = attribute(samples, bdis)
    out: list[Series] = []
    metrics: list[Metric] = []
    buckets = rebucket(((t, dt, sum(cpu.values())) for t, dt, cpu in rows), bucket_s)
    total_pts = [(t, cpu / dt) for t, dt, cpu in buckets if dt > 0]
    out.append(series("flusher", "flusher_cpu_share", "CPUs", total_pts))
    devs = sorted({d for _, _, cpu in rows for d in cpu})
    if len(devs) > 1:
        for d in devs:
            per = rebucket(((t, dt, cpu.get(d, 0.0)) for t, dt, cpu in rows), bucket_s)
            out.append(
                series("flusher", f"flush-{d}_cpu_share", "CPUs", ((t, c / dt) for t, dt, c in per if dt > 0))
            )
    wall = span(samples)
    total = sum(sum(cpu.values()) for _, _, cpu in rows)
    if wall > 0:
        metrics.append(metric("flusher_cpu_share", total / wall, "CPUs"))
    metrics.append(metric("flusher_cpu_share_max", max((v for _, v in total_pts), default=0.0), "CPUs"))
    metrics.append(metric("flusher_cpu_s", total, "s"))
    metrics.append(metric("flusher_workers", len(workers), "threads"))
    return out, metrics


class FlusherProbe(SampledProbe[TaskTimes]):
    """CPU share of the bdi writeback kworkers of the bed's device(s)."""

    name = "flusher"

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self.bdis: tuple[str, ...] = ()
        #: kernel threads that can never flush (a per-CPU kworker stays per-CPU)
        self._not_kworkers: set[str] = set()

    def sample_interval_s(self) -> float:
        # A kworker switches work items; finer samples attribute its CPU more exactly.
        return min(self.ctx.interval_s, SAMPLE_S)

    def start(self) -> None:
        self.bdis = bdi_names(self.ctx.devices, self.ctx.devnos)
        super().start()

    def read(self) -> TaskTimes:
        return scan(may_flush, skip=self._not_kworkers)

    def result(self, samples: Sequence[tuple[float, TaskTimes]]) -> ProbeResult:
        s, m = summarize(samples, self.bdis, self.ctx.interval_s)
        notes = (
            [f"bdi: {', '.join(self.bdis)}"]
            if self.bdis
            else ["no bed device: flushers of every device counted"]
        )
        return ProbeResult(self.name, series=tuple(s), metrics=tuple(m), notes=tuple(notes))
