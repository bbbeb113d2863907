"""Pure: the regression gate over another system's series, the newest result of each.

Each series becomes one gate row: the newest results (the window ``early.early`` chose, 1-3
results) against the results before them since the history's last change point
(``changepoints.analyse``, searched with the newest results and again without the newest 3,
on the 120 before them, so that a fall back from a recent shift up cannot hide that shift;
only the newest of them when the level wanders beyond chance, ``level.recent_window``), with
the early test's p-value, its interval of the shift and the floor standing for compare's call.
``gate.decide`` then decides as for stored runs: Benjamini-Hochberg over the series (every
series can fail the gate), a regression when the interval excludes no change, the estimate is
worse beyond the floor and the q-value is within the FDR; worse within the FDR from one
result only is inconclusive, and so is a regression whose move the history has shown before,
for as many results, and come back from (``episodes``: that episode again, or a regression).
A result with repeats (several rows with one index) counts as one result, the median of its
repeats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...vocab.units import plural
from .changepoints import analyse
from .compare import CompareResult, Row
from .early import MAX_BASE, MAX_NOISE, MIN_BASE, WINDOWS, Early, Window, early
from .gate import Accept, GateResult, Verdict, decide
from .level import recent_window
from .stats import judged

#: The FDR ``iowall gate --series`` uses unless told: the loosest level on the grid whose
#: replayed false alarms stayed within 0.77 per 100 gated results on each of corpora 1-3
#: alone (0.24, 0.28, 0.72; 0.01 gave 0.81 on corpus 3), then 0.35 on corpus 4, held out
#: (benchmarks/replay.py --rule each, docs/benchmarks.md); checked again with the second
#: search and the counts: 0.26, 0.30, 0.75 (0.01: 0.86 on corpus 3).
FDR_SERIES = 0.0075
METHOD = (
    "p-values from the early test: the newest 1-3 results against the history since its "
    "last change point (order-statistic prediction test, t with df from the data, "
    "two-mode mixture, counts on a coarse grain, serial dependence)"
)


@dataclass(frozen=True)
class SeriesResults:
    """One series as results in order: the index text of each, its value (the median of its
    repeats) and its repeats; the metric's name, unit and direction."""

    name: str
    metric: str
    unit: str
    direction: str
    at: tuple[str, ...]
    values: tuple[float, ...]
    repeats: tuple[tuple[float, ...], ...] = ()
    #: positions of the first results after the history's change points, when known (found
    #: on every repeat); else the gate finds them on the results
    changes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Tested:
    """What the early test saw for one series: the window and the baseline, by index."""

    name: str
    early: Early
    window: tuple[str, ...]
    base_from: str
    n_base: int


def _row(s: SeriesResults, e: Early, floor: float) -> Row:
    """The gate row of one tested series: medians, ratio and interval from the early test."""
    w = e.window
    assert w is not None
    n = len(s.values)
    base = s.values[w.base_from : n - w.k]
    new = s.values[n - w.k :]
    cmp = judged(
        base,
        new,
        (math.exp(w.shift), math.exp(w.low), math.exp(w.high)),
        direction="lower" if s.direction == "lower" else "higher",
        floor=floor,
        enough=w.k >= 2,
    )
    return Row(
        label=s.name,
        point={"series": s.name},
        point_text=s.name,
        metric=s.metric,
        unit=s.unit,
        direction=s.direction,
        cmp=cmp,
        base_samples=tuple(base),
        new_samples=tuple(new),
        base_batches=s.at[w.base_from : n - w.k],
        new_batches=s.at[n - w.k :],
    )


def newest_of(s: SeriesResults, level: float = FDR_SERIES) -> Tested:
    """The early test of one series' newest results, its baseline starting after the last
    change point the history's own detection finds; ``level`` is the level it is judged at."""
    vals = [v for v in s.values if math.isfinite(v) and v > 0]
    if len(vals) != len(s.values):
        bad = next(a for a, v in zip(s.at, s.values, strict=True) if not (math.isfinite(v) and v > 0))
        return Tested(s.name, Early(None, 1.0, (), f"result {bad} is not a positive number"), (), "", 0)
    changes = _changes(vals, s.changes)
    e = early(vals, changes, prefer=level, max_base=_max_base(vals, changes))
    if e.window is None:
        return Tested(s.name, e, (), "", 0)
    n = len(vals)
    return Tested(s.name, e, s.at[n - e.window.k :], s.at[e.window.base_from], e.window.n_base)


def _changes(vals: Sequence[float], given: Sequence[int] | None) -> list[int]:
    """The history's change points: those found with the newest results (``given``, or the
    search's on ``vals``), and those the search finds without the newest ``max(WINDOWS)``, on
    the newest ``MAX_NOISE`` results before them (the early test's baseline is at most
    ``MAX_BASE`` of them, its noise those), so that a long history pays one search of its
    length, not two.
    Why both: a fall in the newest results can hide the change before it from a search that
    sees them (the fall back from a shift up reads as one excursion, or as noise), and then the
    baseline holds the level before the shift, the level the fall returns to."""
    found = list(given) if given is not None else [c.index for c in analyse(vals).points]
    end = len(vals) - max(WINDOWS)
    if end <= 0:
        return found
    lo = max(0, end - MAX_NOISE)
    return sorted({*found, *(lo + c.index for c in analyse(vals[lo:end]).points if lo + c.index < end)})


def _max_base(vals: Sequence[float], changes: Sequence[int]) -> int:
    """The most baseline results: the early test's own, or, when the history before the
    newest ``max(WINDOWS)`` results has a level that wanders beyond chance, the span the
    level of now can be read from (``level.recent_window``), at least ``MIN_BASE``."""
    end = len(vals) - max(WINDOWS)
    span = recent_window(vals[:end], [c for c in changes if c < end]) if end > 0 else None
    return MAX_BASE if span is None else min(MAX_BASE, max(MIN_BASE, span))


def gate_series(
    series: Sequence[SeriesResults],
    *,
    fdr: float = FDR_SERIES,
    floor: float = 0.02,
    accept: Sequence[Accept] = (),
    today: str = "",
    source: str = "series",
) -> tuple[GateResult, list[Tested]]:
    """The gate's decision on the newest result of every series (module docstring), and what
    each series' test saw (untested series carry their reason)."""
    tested = [newest_of(s, fdr) for s in series]
    rows = [
        _row(s, t.early, floor) for s, t in zip(series, tested, strict=True) if t.early.window is not None
    ]
    tests = [
        (t.early.p_value, t.early.window.n_base, t.early.window.k)
        for t in tested
        if t.early.window is not None
    ]
    res = CompareResult(
        base=f"{source}: the history before the newest results",
        news=(f"{source}: the newest results",),
        compared="index",
        differences=(),
        common={},
        rows=tuple(rows),
        geomean={},
        floor=floor,
    )
    gated = decide(res, fdr=fdr, accept=accept, today=today, fail_on=["*"], tests=tests, method=METHOD)
    return _seen_before(gated, [t.early.window for t in tested if t.early.window is not None]), tested


def _seen_before(res: GateResult, windows: Sequence[Window]) -> GateResult:
    """A regression whose move the history has shown before and come back from
    (``episodes.shown``) is inconclusive: from the results alone it is that episode again or
    a regression. A row inconclusive because its interval is a grain's step wide says so."""
    out = []
    for v, w in zip(res.verdicts, windows, strict=True):
        seen = w.shown
        if v.status == "inconclusive" and w.grain > 0.0 and w.low <= 0.0 <= w.high:
            v = replace(
                v,
                reason=(
                    f"q = {v.q_value:.2g}, but the figures are stored on a grain "
                    f"(about {math.expm1(w.grain):.0%} a step): a move of one step may be of any "
                    "size up to a step; store exact figures (fio's JSON, not its rounded text)"
                ),
            )
        if v.status == "regression" and seen is not None and seen.count:
            v = replace(
                v,
                status="inconclusive",
                reason=(
                    f"q = {v.q_value:.2g}, but the history moved this far for {plural(seen.k, 'result')} "
                    f"and came back {plural(seen.episodes, 'time')} before: an episode it has had, "
                    "or a regression; more results or a rerun beside the last good one decide"
                ),
            )
        out.append(v)
    return replace(res, verdicts=tuple(out))


def gate_newest(
    values: Sequence[float], *, fdr: float = FDR_SERIES, floor: float = 0.02, direction: str = "higher"
) -> Verdict | Tested:
    """One series of single results gated at its newest: the verdict, or what was tested
    when nothing could be (too short). For replaying a history one result at a time."""
    s = SeriesResults(
        "series", "value", "", direction, tuple(str(i) for i in range(len(values))), tuple(values)
    )
    res, (t,) = gate_series([s], fdr=fdr, floor=floor)
    return res.verdicts[0] if res.verdicts else t
