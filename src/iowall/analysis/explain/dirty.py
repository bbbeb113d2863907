"""Pure: the dirty threshold the kernel applied during a batch's buffered writes, and why the
balance_dirty_pages tracepoint's ``limit`` can say something else.

Three figures name "the dirty threshold" and the kernel (mm/page-writeback.c) computes them
differently:

- ``nr_dirty_threshold`` / ``nr_dirty_background_threshold`` in /proc/vmstat are computed when
  the file is read (mm/vmstat.c ``vmstat_start`` calls ``global_dirty_limits``): dirtyable
  memory (``global_dirtyable_memory``: free pages − totalreserve_pages + file LRU pages, highmem
  aside) times vm.dirty_ratio, or vm.dirty_bytes (``domain_dirty_limits``). Memory that leaves
  the free and file pools (a tmpfs image filling up, anonymous memory) lowers it at once.
- the tracepoint's ``limit`` is the domain's smoothed hard limit ``dirty_limit``
  (``update_dirty_limit``): it follows the threshold up in one step but down by 1/32 of the
  gap per 200 ms update, and only while writers are throttled, so after the threshold fell it
  stays above it for a while; ``setpoint`` lies between the freerun ceiling
  (threshold + background) / 2 and it.
- the threshold a recipe sized its points from: a /proc/vmstat reading taken before the
  points ran.

The vmstat probe stores the first as a series and as min/max metrics over each run's window,
the throttle probe the second; this module reads both from stored runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...model import MEASURED_STATUSES, Run
from ...vocab.units import fmt_bytes

#: Two figures closer than this (relative) are called the same.
SAME = 0.05


@dataclass(frozen=True)
class Span:
    """A range of bytes seen over some runs' windows."""

    lo: float
    hi: float

    def text(self) -> str:
        """``3.4 GiB``, ``3.4–3.6 GiB`` or ``512.0 MiB–1.2 GiB``."""
        a, b = fmt_bytes(self.lo), fmt_bytes(self.hi)
        if a == b:
            return a
        (na, ua), ub = a.split(" "), b.split(" ")[1]
        return f"{na}–{b}" if ua == ub else f"{a}–{b}"

    def outside(self, x: float) -> str:
        """``above``/``below`` when ``x`` lies more than SAME beyond the range, else ''."""
        if x > self.hi and _apart(x, self.hi):
            return "above"
        if x < self.lo and _apart(x, self.lo):
            return "below"
        return ""


def _apart(a: float, b: float) -> bool:
    return abs(a - b) > SAME * min(a, b)


@dataclass(frozen=True)
class AppliedThreshold:
    """What the kernel applied during the buffered write runs of a batch.

    ``threshold``/``background``: /proc/vmstat over the runs' windows (None when no run had the
    vmstat probe); ``limit``/``setpoint``: the balance_dirty_pages events' range (None when no
    event came); ``throttle_probe``: whether any run had the throttle probe at all."""

    runs: int
    threshold: Span | None
    background: Span | None
    limit: Span | None
    setpoint: Span | None
    throttle_probe: bool
    #: the largest limit/threshold ratio of one run (both maxima), and that run's id
    worst_ratio: float = 0.0
    worst_run: int | None = None


def is_buffered_write(run: Run) -> bool:
    """A completed fio point that writes through the page cache (rw names a write, not direct)."""
    p = run.point.params
    rw = str(p.get("rw", ""))
    writes = "write" in rw or rw in ("rw", "randrw")
    return (
        run.status in MEASURED_STATUSES
        and writes
        and not p.get("direct")
        and not p.get("uncached")
        and p.get("mode", "buffered") == "buffered"
    )


def _series_span(run: Run, probe: str, name: str) -> Span | None:
    vals = [v for s in run.series if s.probe == probe and s.name == name for _, v in s.samples]
    return Span(min(vals), max(vals)) if vals else None


def _run_span(run: Run, lo: str, hi: str, probe: str, series: str) -> Span | None:
    """The run's range from its min/max metrics, else from its series (runs loaded with
    series, or stored before the metrics existed)."""
    a, b = run.metric(lo), run.metric(hi)
    if a is not None and b is not None and b > 0:
        return Span(a, b)
    return _series_span(run, probe, series)


def _union(spans: Sequence[Span | None]) -> Span | None:
    got = [s for s in spans if s is not None]
    return Span(min(s.lo for s in got), max(s.hi for s in got)) if got else None


def applied_threshold(runs: Sequence[Run]) -> AppliedThreshold | None:
    """The range of the kernel's dirty threshold, background threshold, and the tracepoint's
    limit and setpoint over the buffered write runs among ``runs``; None when there are none."""
    writes = [r for r in runs if is_buffered_write(r)]
    if not writes:
        return None
    thr = [
        _run_span(
            r,
            "vm_dirty_threshold_min_bytes",
            "vm_dirty_threshold_max_bytes",
            "vmstat",
            "dirty_threshold_bytes",
        )
        for r in writes
    ]
    lim = [
        _run_span(r, "throttle_limit_min_bytes", "throttle_limit_bytes", "throttle", "dirty_limit_bytes")
        for r in writes
    ]
    pairs = [
        (ln.hi / t.hi, r.id)
        for r, t, ln in zip(writes, thr, lim, strict=True)
        if t is not None and ln is not None and t.hi > 0
    ]
    worst = max(pairs, key=lambda p: p[0], default=(0.0, None))
    return AppliedThreshold(
        runs=len(writes),
        threshold=_union(thr),
        background=_union(
            [
                _run_span(
                    r,
                    "vm_dirty_background_threshold_min_bytes",
                    "vm_dirty_background_threshold_max_bytes",
                    "vmstat",
                    "dirty_background_threshold_bytes",
                )
                for r in writes
            ]
        ),
        limit=_union(lim),
        setpoint=_union(
            [
                _run_span(
                    r,
                    "throttle_setpoint_min_bytes",
                    "throttle_setpoint_bytes",
                    "throttle",
                    "dirty_setpoint_bytes",
                )
                for r in writes
            ]
        ),
        throttle_probe=any(r.metric("throttle_calls") is not None for r in writes),
        worst_ratio=worst[0],
        worst_run=worst[1],
    )


def limit_sentence(a: AppliedThreshold) -> str:
    """One sentence on the tracepoint's limit against the threshold (update_dirty_limit)."""
    if a.limit is None:
        if not a.throttle_probe:
            return "the throttle probe did not run, so the kernel's hard limit was not recorded"
        return (
            "no balance_dirty_pages event came: dirty pages never passed the freerun "
            "ceiling, (threshold + background) / 2, so no writer was throttled"
        )
    if a.threshold is None:
        return f"the tracepoint's limit was {a.limit.text()} (no vmstat threshold to compare)"
    thr, lim = a.threshold, a.limit
    if a.worst_ratio > 1 + SAME or thr.outside(lim.hi) == "above":
        where = f" in run {a.worst_run}" if a.worst_run is not None else ""
        return (
            f"the tracepoint's limit ({lim.text()}) is the kernel's smoothed hard limit, "
            "which follows the threshold up at once but down by 1/32 of the gap every "
            "200 ms of throttling (update_dirty_limit), so it stays above a threshold that "
            f"fell: up to {a.worst_ratio - 1:.0%} above it{where}"
        )
    if thr.outside(lim.lo) == "below":
        return (
            f"the tracepoint's limit ({lim.text()}) lags below the threshold "
            f"({thr.text()}): the kernel updates it only every 200 ms while writers are "
            "throttled (update_dirty_limit), so a threshold that rose is not in it yet"
        )
    return f"the tracepoint's limit ({lim.text()}) agrees with the threshold within {SAME:.0%}"


def applied_threshold_note(runs: Sequence[Run], sized_from: int | None = None) -> str | None:
    """The report note: the threshold range the kernel applied during the buffered writes
    (/proc/vmstat), against the figure the points were sized from, and the tracepoint's
    limit with the reason they differ; None when there was no buffered write."""
    a = applied_threshold(runs)
    if a is None:
        return None
    n = f"{a.runs} buffered write run" + ("" if a.runs == 1 else "s")
    if a.threshold is None:
        head = f"the dirty threshold applied during the {n} was not recorded (no vmstat probe)"
    else:
        bg = f", background {a.background.text()}" if a.background else ""
        head = (
            f"during the {n} the kernel's dirty threshold (nr_dirty_threshold, "
            f"/proc/vmstat) was {a.threshold.text()}{bg}"
        )
        where = a.threshold.outside(sized_from) if sized_from else ""
        if sized_from and where:
            way = "fell" if where == "above" else "rose"
            head += (
                f"; it {way} from the {fmt_bytes(sized_from)} the points were sized "
                "from, as dirtyable memory (free + file LRU pages) changed"
            )
    return f"{head}; {limit_sentence(a)}"
