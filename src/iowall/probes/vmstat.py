"""``vmstat``: reclaim, refault and THP counter rates, the rates pages are dirtied and written
back, and dirty-page levels from /proc/vmstat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..machine import sysinfo
from ..model import Metric, Series
from .sampling import PAGE_SIZE, SampledProbe, intervals, mean, metric, series, span

#: Counters whose rates are kept (a prefix match).
COUNTER_PREFIXES = ("pgscan", "pgsteal", "allocstall", "workingset", "thp")
#: Counters kept by their whole name: pages dirtied and pages whose writeback completed (the
#: whole machine's), the rate the page cache is dirtied at and the rate writeback cleans it.
COUNTERS = frozenset({"nr_dirtied", "nr_written"})
#: Gauges among the prefixed names (not counters: their differences mean nothing).
GAUGES = frozenset({"workingset_nodes"})
#: Levels (in pages) kept as levels, converted to bytes. The two thresholds are the kernel's
#: own figures, computed when /proc/vmstat is read (global_dirty_limits(): dirtyable memory,
#: i.e. free + file LRU pages − totalreserve_pages, times vm.dirty_ratio, or vm.dirty_bytes).
LEVELS = ("nr_dirty", "nr_writeback", "nr_dirty_threshold", "nr_dirty_background_threshold")
#: Aggregates that do not double count (pgscan_anon/_file split the same scans again).
AGGREGATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "pgscan": ("pages", ("pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged", "pgscan_proactive")),
    "pgsteal": ("pages", ("pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged", "pgsteal_proactive")),
    "allocstall": (
        "events",
        (
            "allocstall_dma",
            "allocstall_dma32",
            "allocstall_normal",
            "allocstall_movable",
            "allocstall_device",
        ),
    ),
    "workingset_refault": ("pages", ("workingset_refault_anon", "workingset_refault_file")),
}

Snapshot = dict[str, int]


def select(vmstat: Mapping[str, int]) -> Snapshot:
    """The counters and levels iowall keeps, out of all of /proc/vmstat."""
    return {
        k: v
        for k, v in vmstat.items()
        if (k.startswith(COUNTER_PREFIXES) and k not in GAUGES) or k in LEVELS or k in COUNTERS
    }


def _unit(counter: str) -> str:
    """pgscan/pgsteal, workingset refault/activate/restore and the dirtied and written
    counters count pages; the rest events."""
    if counter in COUNTERS:
        return "pages"
    if counter == "pgscan_direct_throttle":
        return "events"
    if counter.startswith(
        ("pgscan", "pgsteal", "workingset_refault", "workingset_activate", "workingset_restore")
    ):
        return "pages"
    return "events"


def _agg(snap: Snapshot, parts: tuple[str, ...]) -> int:
    return sum(snap.get(p, 0) for p in parts)


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """Rates of changed counters and of the aggregates; dirty/writeback levels in bytes."""
    out: list[Series] = []
    metrics: list[Metric] = []
    if not samples:
        return out, metrics
    first, last = samples[0][1], samples[-1][1]
    wall = span(samples)
    counters = sorted(k for k in last if k.startswith(COUNTER_PREFIXES) or k in COUNTERS)
    changed = [k for k in counters if last.get(k, 0) != first.get(k, 0)]
    for k in changed:
        out.append(
            series(
                "vmstat",
                f"{k}_per_s",
                f"{_unit(k)}_per_s",
                ((t, max(0, b.get(k, 0) - a.get(k, 0)) / dt) for t, dt, a, b in intervals(samples)),
            )
        )
        if wall > 0:
            metrics.append(metric(f"vm_{k}_per_s", (last[k] - first.get(k, 0)) / wall, f"{_unit(k)}_per_s"))
    for name, (unit, parts) in AGGREGATES.items():
        out.append(
            series(
                "vmstat",
                f"{name}_per_s",
                f"{unit}_per_s",
                ((t, max(0, _agg(b, parts) - _agg(a, parts)) / dt) for t, dt, a, b in intervals(samples)),
            )
        )
        delta = max(0, _agg(last, parts) - _agg(first, parts))
        metrics.append(metric(f"vm_{name}_{unit}", delta, unit))
        if wall > 0:
            metrics.append(metric(f"vm_{name}_{unit}_per_s", delta / wall, f"{unit}_per_s"))
    for lv in LEVELS:
        pts = [(t, s[lv] * PAGE_SIZE) for t, s in samples if lv in s]
        if not pts:
            continue
        base = lv.removeprefix("nr_")
        out.append(series("vmstat", f"{base}_bytes", "bytes", pts))
        vals = [v for _, v in pts]
        if lv in ("nr_dirty", "nr_writeback"):
            metrics.append(metric(f"vm_{base}_max_bytes", max(vals), "bytes"))
            metrics.append(metric(f"vm_{base}_mean_bytes", mean(vals), "bytes"))
        else:  # the kernel's thresholds: the mean, and the range it moved in over the run
            metrics.append(metric(f"vm_{base}_bytes", mean(vals), "bytes", "higher"))
            metrics.append(metric(f"vm_{base}_min_bytes", min(vals), "bytes", "higher"))
            metrics.append(metric(f"vm_{base}_max_bytes", max(vals), "bytes", "higher"))
    return out, metrics


class VmstatProbe(SampledProbe[Snapshot]):
    """Reclaim (pgscan, pgsteal, allocstall), refaults, THP events; pages dirtied and written
    back; dirty and writeback pages."""

    name = "vmstat"
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        return None if sysinfo.vmstat() else "/proc/vmstat cannot be read"

    def read(self) -> Snapshot:
        return select(sysinfo.vmstat())
