"""``reclaim``: CPU used by kswapd (background page reclaim), from /proc/<kswapd pid>."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Metric, Series
from .base import ProbeContext
from .sampling import SampledProbe, intervals, metric, series, span
from .threads import TaskTimes, scan, times


def is_kswapd(comm: str) -> bool:
    """kswapd0, kswapd1 … (one per NUMA node)."""
    return comm.startswith("kswapd") and comm[6:].isdigit()


def summarize(samples: Sequence[tuple[float, TaskTimes]]) -> tuple[list[Series], list[Metric]]:
    """``kswapd_cpu_share`` series (CPUs, all nodes' kswapd summed); mean and max."""
    pts: list[tuple[float, float]] = []
    total = 0.0
    for t, dt, a, b in intervals(samples):
        cpu = sum(max(0, rt - a[pid][1]) for pid, (_c, rt) in b.items() if pid in a) / 1e9
        total += cpu
        pts.append((t, cpu / dt))
    out = [series("reclaim", "kswapd_cpu_share", "CPUs", pts)]
    metrics: list[Metric] = []
    wall = span(samples)
    if wall > 0:
        metrics.append(metric("kswapd_cpu_share", total / wall, "CPUs"))
    metrics.append(metric("kswapd_cpu_share_max", max((v for _, v in pts), default=0.0), "CPUs"))
    metrics.append(metric("kswapd_cpu_s", total, "s"))
    return out, metrics


class ReclaimProbe(SampledProbe[TaskTimes]):
    """kswapd's CPU share: when it nears a full CPU, reclaim is what the run waits on."""

    name = "reclaim"
    summarize = staticmethod(summarize)

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self._pids: list[int] = []

    def unavailable(self) -> str | None:
        return None if scan(is_kswapd) else "no kswapd thread found in /proc"

    def start(self) -> None:
        self._pids = sorted(scan(is_kswapd))  # one per node, for the life of the system
        super().start()

    def read(self) -> TaskTimes:
        return times(self._pids)
