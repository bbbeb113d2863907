"""``meminfo``: Dirty, Writeback and Cached page-cache levels from /proc/meminfo, in bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..machine import sysinfo
from ..model import Metric, Series
from .sampling import SampledProbe, mean, metric, series

#: /proc/meminfo field → series/metric stem.
FIELDS = {"Dirty": "dirty", "Writeback": "writeback", "Cached": "cached"}

Snapshot = dict[str, int]


def select(meminfo: Mapping[str, int]) -> Snapshot:
    """The fields iowall keeps (bytes), out of all of /proc/meminfo."""
    return {k: meminfo[k] for k in FIELDS if k in meminfo}


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """One series per field; max and mean of each, and how much Cached grew."""
    out: list[Series] = []
    metrics: list[Metric] = []
    for field, stem in FIELDS.items():
        pts = [(t, s[field]) for t, s in samples if field in s]
        if not pts:
            continue
        out.append(series("meminfo", f"{stem}_bytes", "bytes", pts))
        vals = [float(v) for _, v in pts]
        metrics.append(metric(f"mem_{stem}_max_bytes", max(vals), "bytes"))
        metrics.append(metric(f"mem_{stem}_mean_bytes", mean(vals), "bytes"))
        if field == "Cached":
            metrics.append(metric("mem_cached_growth_bytes", vals[-1] - vals[0], "bytes"))
    return out, metrics


class MeminfoProbe(SampledProbe[Snapshot]):
    """Page-cache levels: how much is dirty, under writeback and cached."""

    name = "meminfo"
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        return None if sysinfo.meminfo() else "/proc/meminfo cannot be read"

    def read(self) -> Snapshot:
        return select(sysinfo.meminfo())
