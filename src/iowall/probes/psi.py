"""``psi``: share of time tasks stalled on I/O, memory and CPU, from /proc/pressure.

The ``total=`` counters (µs stalled, cumulative) are differenced: avg10 is a 10 s
exponential average, too coarse for a run of a few seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Metric, Series
from .sampling import SampledProbe, intervals, metric, read_text, series, span

RESOURCES = ("io", "memory", "cpu")

Snapshot = dict[str, int]


def parse_pressure(resource: str, text: str) -> Snapshot:
    """``{"io_some": total_us, "io_full": total_us}`` from one /proc/pressure file."""
    out: Snapshot = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for field in rest.split():
            k, _, v = field.partition("=")
            if k == "total":
                out[f"{resource}_{kind}"] = int(v)
    return out


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """Stall share per interval (µs stalled / µs elapsed) and over the whole run, and the max."""
    out: list[Series] = []
    metrics: list[Metric] = []
    if len(samples) < 2:
        return out, metrics
    first, last = samples[0][1], samples[-1][1]
    wall = span(samples)
    for key in sorted(k for k in last if k in first):
        pts = [
            (t, min(1.0, max(0, b[key] - a[key]) / (dt * 1e6)))
            for t, dt, a, b in intervals(samples)
            if key in a and key in b
        ]
        out.append(series("psi", f"{key}_share", "share", pts))
        if wall > 0:
            metrics.append(
                metric(f"psi_{key}_share", min(1.0, max(0, last[key] - first[key]) / (wall * 1e6)), "share")
            )
        if pts:
            metrics.append(metric(f"psi_{key}_share_max", max(v for _, v in pts), "share"))
    return out, metrics


class PsiProbe(SampledProbe[Snapshot]):
    """Pressure stall information: some (at least one task stalled) and full (all stalled)."""

    name = "psi"
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        if not read_text("/proc/pressure/io"):
            return "/proc/pressure is missing (kernel without CONFIG_PSI or booted with psi=0)"
        return None

    def read(self) -> Snapshot:
        snap: Snapshot = {}
        for r in RESOURCES:
            snap.update(parse_pressure(r, read_text(f"/proc/pressure/{r}")))
        return snap
