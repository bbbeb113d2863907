"""``flusher``: CPU used by the writeback kworkers serving the bed's device.

A kworker running bdi writeback (``wb_workfn``) carries ``flush-MAJ:MIN`` in its comm
(``kworker/u8:3+flush-7:0`` while running it, ``-flush-7:0`` after, until it picks up other
work). The comm changes as the worker switches work items, so every sample rescans the
kworkers and an interval's CPU time is attributed to the device whose tag the worker
carried at the start or at the end of the interval. Seed 004: "the single biggest
performance limitation is the single threaded BDI flush worker".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import Metric, Series
from .base import ProbeResult
from .sampling import SampledProbe, intervals, metric, series, span
from .tasks import TaskTimes, scan

FLUSH_TAG = re.compile(r"[+-]flush-(\d+:\d+)$")


def flush_devno(comm: str) -> str | None:
    """``7:0`` from ``kworker/u8:3-flush-7:0``; None for any other comm."""
    m = FLUSH_TAG.search(comm)
    return m.group(1) if m else None


def attribute(samples: Sequence[tuple[float, TaskTimes]], devnos: Sequence[str] = ()
              ) -> tuple[list[tuple[float, float, dict[str, float]]], set[int]]:
    """Per interval ``(t_end, dt, {devno: CPU seconds})`` and the pids that flushed.

    ``devnos`` empty means every device's flusher.
    """
    rows: list[tuple[float, float, dict[str, float]]] = []
    workers: set[int] = set()
    for t, dt, a, b in intervals(samples):
        cpu: dict[str, float] = {d: 0.0 for d in devnos}
        for pid, (comm_b, rt_b) in b.items():
            if pid not in a:
                continue
            comm_a, rt_a = a[pid]
            dev = flush_devno(comm_b) or flush_devno(comm_a)
            if dev is None or (devnos and dev not in devnos):
                continue
            cpu[dev] = cpu.get(dev, 0.0) + max(0, rt_b - rt_a) / 1e9
            if rt_b > rt_a:
                workers.add(pid)
        rows.append((t, dt, cpu))
    return rows, workers


def summarize(samples: Sequence[tuple[float, TaskTimes]], devnos: Sequence[str] = ()
              ) -> tuple[list[Series], list[Metric]]:
    """``flusher_cpu_share`` series (CPUs: 1.0 is one full CPU) and its mean and max."""
    rows, workers = attribute(samples, devnos)
    out: list[Series] = []
    metrics: list[Metric] = []
    total_pts = [(t, sum(cpu.values()) / dt) for t, dt, cpu in rows]
    out.append(series("flusher", "flusher_cpu_share", "CPUs", total_pts))
    devs = sorted({d for _, _, cpu in rows for d in cpu})
    if len(devs) > 1:
        for d in devs:
            out.append(series("flusher", f"flush-{d}_cpu_share", "CPUs",
                              ((t, cpu.get(d, 0.0) / dt) for t, dt, cpu in rows)))
    wall = span(samples)
    total = sum(sum(cpu.values()) for _, _, cpu in rows)
    if wall > 0:
        metrics.append(metric("flusher_cpu_share", total / wall, "CPUs"))
    metrics.append(metric("flusher_cpu_share_max", max((v for _, v in total_pts), default=0.0),
                          "CPUs"))
    metrics.append(metric("flusher_cpu_s", total, "s"))
    metrics.append(metric("flusher_workers", len(workers), "threads"))
    return out, metrics


class FlusherProbe(SampledProbe[TaskTimes]):
    """CPU share of the bdi writeback kworkers of the bed's device(s)."""

    name = "flusher"

    def read(self) -> TaskTimes:
        return scan(lambda c: c.startswith("kworker/"))

    def result(self, samples: Sequence[tuple[float, TaskTimes]]) -> ProbeResult:
        s, m = summarize(samples, self.ctx.devnos)
        notes = () if self.ctx.devnos else ("no bed device: flushers of every device counted",)
        return ProbeResult(self.name, series=tuple(s), metrics=tuple(m), notes=notes)
