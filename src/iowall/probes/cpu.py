"""``cpu``: per-CPU user, sys, iowait and idle shares from /proc/stat."""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Metric, Series
from .sampling import SampledProbe, intervals, metric, read_text, series

#: /proc/stat columns in order (guest time is already inside user and nice).
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
#: Shares reported, each a sum of /proc/stat columns.
SHARES: dict[str, tuple[str, ...]] = {
    "user": ("user", "nice"),
    "sys": ("system",),
    "irq": ("irq", "softirq"),
    "iowait": ("iowait",),
    "idle": ("idle",),
    "steal": ("steal",),
}

Snapshot = dict[str, tuple[int, ...]]


def parse_stat(text: str) -> Snapshot:
    """The ``cpu`` and ``cpuN`` lines of /proc/stat: name → counters (USER_HZ ticks)."""
    out: Snapshot = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        parts = line.split()
        vals = [int(x) for x in parts[1 : 1 + len(FIELDS)]]
        vals += [0] * (len(FIELDS) - len(vals))
        out[parts[0]] = tuple(vals)
    return out


def shares(a: tuple[int, ...], b: tuple[int, ...]) -> dict[str, float]:
    """Share of time in each state between two counter snapshots of one CPU (or of all).

    Negative deltas (iowait can go backwards on NO_HZ kernels) count as zero.
    """
    d = dict(zip(FIELDS, (max(0, y - x) for x, y in zip(a, b, strict=False)), strict=False))
    total = sum(d.values())
    if total <= 0:
        return {k: 0.0 for k in SHARES}
    return {k: sum(d[f] for f in cols) / total for k, cols in SHARES.items()}


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """Per-CPU and all-CPU share series, and whole-run shares as metrics."""
    out: list[Series] = []
    metrics: list[Metric] = []
    if len(samples) < 2:
        return out, metrics
    cpus = sorted((k for k in samples[0][1] if k != "cpu"), key=lambda k: int(k[3:]))
    points: dict[str, list[tuple[float, float]]] = {}
    for t, _dt, a, b in intervals(samples):
        for name in ["cpu", *cpus]:
            if name not in a or name not in b:
                continue
            for k, v in shares(a[name], b[name]).items():
                if name != "cpu" and k == "steal":
                    continue
                points.setdefault(f"{name}_{k}_share", []).append((t, v))
    for name, pts in points.items():
        out.append(series("cpu", name, "share", pts))
    first, last = samples[0][1], samples[-1][1]
    if "cpu" in first and "cpu" in last:
        whole = shares(first["cpu"], last["cpu"])
        for k, v in whole.items():
            metrics.append(metric(f"cpu_{k}_share", v, "share", "higher" if k == "idle" else "lower"))
        n = len(cpus)
        metrics.append(metric("cpus", n, "CPUs", "higher"))
        metrics.append(metric("cpu_sys_cpus", whole["sys"] * n, "CPUs"))
        metrics.append(metric("cpu_kernel_share", whole["sys"] + whole["irq"], "share"))
        sys_pts = [v for _, v in points.get("cpu_sys_share", [])]
        if sys_pts:
            metrics.append(metric("cpu_sys_share_max", max(sys_pts), "share"))
        per_cpu = [shares(first[c], last[c])["sys"] for c in cpus if c in first and c in last]
        if per_cpu:
            metrics.append(metric("cpu_sys_share_busiest_cpu", max(per_cpu), "share"))
    return out, metrics


class CpuProbe(SampledProbe[Snapshot]):
    """Per-CPU time shares (user+nice, system, irq+softirq, iowait, idle, steal)."""

    name = "cpu"
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        return None if read_text("/proc/stat") else "/proc/stat cannot be read"

    def read(self) -> Snapshot:
        return parse_stat(read_text("/proc/stat"))
