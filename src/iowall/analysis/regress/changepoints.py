"""Pure: change points in one metric's series of runs (a point's history in time or kernel order).

Method (chosen by measurement, benchmarks/changepoints.py, docs/statistics.md): binary
segmentation on ranks. In a segment, every allowed cut (a boundary between groups, at least
``min_size`` runs each side) gets the evidence of its Mann-Whitney rank sum, left vs right:
-log of its two-sided p-value, from the rank sum's exact null where the smaller side is short
(a subset-sum count) and from the normal tail beyond; the largest is tested against its
permutation distribution (the same maximum over the same cuts, runs shuffled), so the
p-value pays for searching every position (why the exact tail: ``ranksum.py``: with the
normal tail a short segment, however far out, could never be significant). Beside it, the
circular binary segmentation statistic (Olshen et al. 2004): every interior arc [a, b), inside
against outside, tested the same way, so that a short excursion and back, which no single cut
shows, is found; the stronger significant one splits the segment, and the parts are searched
again. A final pass re-tests each change point between its neighbours and drops the weakest
until all hold (Otava's merge step). The series' serial structure is read first
(``serial.py``): runs sharing a run effect are shuffled in blocks (a moving-block
permutation); a change point a drift explains (not significant once Sen's slope from the
pairs on either side is taken out) is dropped, as is one a moving level (``level.py``: a
random walk or AR(1)) or a move settling in over 10-25 results (``settling.py``) explains.
Ranks make one slow run (a neighbour's burst) or heavy tails count no more than any other
run; the permutation test assumes only that runs are exchangeable when nothing changed, or
with ``unit="group"`` that whole kernels are (each boot may land a little differently).
Each side's median comes with its exact order-statistic interval (``decide.median_ci``).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from ...vocab.units import plural
from .level import beyond_wander
from .ranksum import evidence, max_evidence
from .repeat_rule import median_ci
from .serial import block_length, drift_slope
from .settling import sudden

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Ranks: float (ties share a mean rank) or, for the nulls of untied runs, 32-bit integers.
Ranks = npt.NDArray[np.float64] | npt.NDArray[np.int32]

#: Per-test significance level: 0.002 was tuned in benchmarks/changepoints.py against Otava's
#: defaults; with the arc search beside the single cut, 0.001 keeps the replay corpus's false
#: alarms under 5 per 100 no-change series (benchmarks/replay.py, docs/benchmarks.md).
ALPHA = 0.001
#: Fewest runs on either side of a change point.
MIN_SIZE = 3
#: Longest segment searched for an interior arc: the arcs grow as the square of the length
#: (200 runs: 5 s for the first search on this machine's 2 CPUs); a longer one is searched by
#: single cuts until its parts are this short.
ARC_MAX_RUNS = 200
#: Confidence of the order-statistic interval of each side's median.
CONFIDENCE = 0.95

#: What the permutation test shuffles: single runs (most power), or whole groups (a kernel's
#: runs stay together, so an offset shared by one boot's runs is not taken for a change).
Unit = Literal["run", "group"]


@dataclass(frozen=True)
class ChangePoint:
    """One change: ``index`` is the first run after it (an index into the values as given,
    non-finite ones included), ``before``/``after`` the groups either side (last good and
    first bad: the bisect window), medians of the segments either side with their exact
    order-statistic intervals (``CONFIDENCE``; unbounded below 6 runs), the relative change
    of the medians, and the permutation p-value of the cut between its neighbours."""

    index: int
    before: str | None
    after: str | None
    n_before: int
    n_after: int
    median_before: float
    ci_before: tuple[float, float]
    median_after: float
    ci_after: tuple[float, float]
    rel_change: float
    p_value: float
    #: the smallest p-value the permutations can give (1 / (permutations + 1)): a p-value
    #: there means "at most this"
    p_floor: float = 0.0


@dataclass(frozen=True)
class Detection:
    """What ``analyse`` found: the change points, how many non-finite values were dropped,
    and why none could be searched for (``reason`` is empty when the search ran)."""

    points: tuple[ChangePoint, ...]
    n_used: int
    dropped: int
    reason: str
    method: str


def analyse(
    values: Sequence[float],
    groups: Sequence[str] | None = None,
    *,
    alpha: float = ALPHA,
    min_size: int = MIN_SIZE,
    unit: Unit = "run",
    permutations: int | None = None,
    seed: int = 0,
) -> Detection:
    """Find change points, with the count of dropped non-finite values and a reason when the
    series is too short. ``groups`` labels each run (kernel or commit); a change point falls
    only where the label changes. ``unit`` is what the permutation test shuffles (``Unit``).
    ``permutations`` defaults to enough for ``alpha`` (at least 20/alpha); ``seed`` makes
    the result reproducible."""
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1")
    if min_size < 1:
        raise ValueError("min_size must be at least 1")
    if groups is not None and len(groups) != len(values):
        raise ValueError(f"{len(groups)} group labels for {len(values)} values")
    raw = np.asarray(values, dtype=np.float64)
    keep = np.flatnonzero(np.isfinite(raw))
    x = raw[keep]
    labels = [str(groups[int(i)]) for i in keep] if groups is not None else None
    method = (
        f"binary segmentation, max Mann-Whitney evidence (exact tail) over cuts (then over arcs, "
        f"for an excursion and back), permutation (shuffling {unit}s) p <= {alpha:g}, "
        f">= {min_size} runs a side, then each against a moving level (AR(1), random walk) or a settling move"
    )
    dropped = int(raw.size - keep.size)
    cuts = _group_cuts(labels, x.size)
    reason = ""
    if x.size < 2 * min_size:
        reason = (
            f"{plural(int(x.size), 'finite value')}; at least {2 * min_size} are needed ({min_size} a side)"
        )
    elif not _allowed(cuts, 0, x.size, min_size).size:
        reason = f"no boundary between groups leaves {min_size} runs on each side"
    if reason:
        return Detection((), int(x.size), dropped, reason, method)
    b = permutations if permutations is not None else max(999, math.ceil(20.0 / alpha))
    step = block_length(x) if unit == "run" and groups is None else 1
    blocks_at = cuts if unit == "group" else np.arange(step, x.size, step, dtype=np.int64)
    search = _Search(x, cuts, blocks_at, min_size, b, seed)
    found = search.prune(search.segment(alpha), alpha)
    while len(kept := search.not_drift(found, alpha)) < len(found):  # until a drift explains none
        found = search.prune([c for c, _ in kept], alpha)
    while len(cut := sudden(x, beyond_wander(x, [c for c, _ in found], min_size))) < len(found):
        found = search.prune(cut, alpha)  # until neither a moving level nor a settling move explains one
    points = tuple(
        replace(_describe(x, keep, labels, found, i), p_floor=1.0 / (1.0 + b)) for i in range(len(found))
    )
    return Detection(points, int(x.size), dropped, "", method)


def _group_cuts(labels: Sequence[str] | None, n: int) -> IntArray:
    """Positions (1..n-1) where a run starts a new group: the only places a change may fall."""
    if labels is None:
        return np.arange(1, n, dtype=np.int64)
    return np.asarray([i for i in range(1, n) if labels[i] != labels[i - 1]], dtype=np.int64)


def _allowed(cuts: IntArray, lo: int, hi: int, min_size: int) -> IntArray:
    """Cuts in [lo, hi) with at least ``min_size`` runs on each side."""
    return cuts[(cuts >= lo + min_size) & (cuts <= hi - min_size)]


def _ranks(seg: FloatArray) -> FloatArray:
    """Average ranks (1-based, ties share their mean rank)."""
    order = np.argsort(seg, kind="mergesort")
    s = seg[order]
    ranks = np.empty(seg.size, dtype=np.float64)
    i = 0
    while i < s.size:
        j = i
        while j + 1 < s.size and s[j + 1] == s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


@dataclass(frozen=True)
class _Search:
    """One series' search: values, where changes may fall (``cuts``), where the shuffled
    blocks start (``blocks_at``: every run, or every group), and the permutation settings."""

    x: FloatArray
    cuts: IntArray
    blocks_at: IntArray
    min_size: int
    b: int
    seed: int

    def scan(
        self, lo: int, hi: int, at: int | None = None, alpha: float | None = None
    ) -> tuple[int, float, float] | None:
        """Best allowed cut in x[lo:hi] by its rank sum's evidence (or the cut ``at``),
        with its permutation p-value against the maximum over all allowed cuts there; with
        ``alpha``, a p-value above it may be a lower bound (``_Null``: only whether it is
        above ``alpha`` is used then)."""
        cut_at = _allowed(self.cuts, lo, hi, self.min_size)
        if not cut_at.size:
            return None
        seg = self.x[lo:hi]
        n = seg.size
        r = _ranks(seg)
        rel = tuple(int(c) for c in cut_at - lo)
        inner = self.blocks_at[(self.blocks_at > lo) & (self.blocks_at < hi)] - lo
        blocks = tuple(int(v) for v in np.diff(np.concatenate(([0], inner, [n]))))
        z = _cut_evidence(r[None, :], rel)[0]
        best = int(np.argmax(z)) if at is None else rel.index(at - lo)
        if len(blocks) == n and np.unique(seg).size == n:  # single runs, no ties: one null per shape
            exceed = _scan_null(n, rel, self.b, self.seed).exceed(float(z[best]), _most(alpha, self.b))
        else:
            stat = functools.partial(_scan_max, rel=rel)
            exceed = _exceed(r, blocks, rel, self.b, self.seed, stat, float(z[best]), _most(alpha, self.b))
        return int(cut_at[best]), (1.0 + exceed) / (1.0 + self.b), float(z[best])

    def arc(self, lo: int, hi: int, alpha: float | None = None) -> tuple[int, int, float, float] | None:
        """Best interior arc [a, b) of x[lo:hi] (both ends allowed cuts, ``min_size`` runs
        inside and outside on each side) by the evidence of the rank sum inside against
        outside, with its permutation p-value against the maximum over all such arcs: circular
        binary segmentation's statistic, which sees a short excursion that no single cut does."""
        cut_at = _allowed(self.cuts, lo, hi, self.min_size)
        if cut_at.size < 2 or hi - lo > ARC_MAX_RUNS:
            return None
        rel = cut_at - lo
        ia, ib = np.triu_indices(rel.size, 1)
        ok = rel[ib] - rel[ia] >= self.min_size
        a, b = rel[ia[ok]], rel[ib[ok]]
        if not a.size:
            return None
        seg = self.x[lo:hi]
        n = seg.size
        r = _ranks(seg)
        inner = self.blocks_at[(self.blocks_at > lo) & (self.blocks_at < hi)] - lo
        blocks = tuple(int(v) for v in np.diff(np.concatenate(([0], inner, [n]))))
        z = _arc_evidence(r[None, :], a, b)[0]
        best = int(np.argmax(z))
        key = (tuple(int(v) for v in a), tuple(int(v) for v in b))
        if len(blocks) == n and np.unique(seg).size == n:
            exceed = _arc_nulls(n, key, self.b, self.seed).exceed(float(z[best]), _most(alpha, self.b))
        else:
            stat = functools.partial(_arc_max, a=a, b=b)
            shape = (0, *key[0], 1, *key[1])
            exceed = _exceed(r, blocks, shape, self.b, self.seed, stat, float(z[best]), _most(alpha, self.b))
        return (int(a[best]) + lo, int(b[best]) + lo, (1.0 + exceed) / (1.0 + self.b), float(z[best]))

    def segment(self, alpha: float) -> list[int]:
        """Binary segmentation: split a segment at its best cut, or at both ends of its best
        interior arc (an excursion and back) when that is significant and stronger (smaller
        p-value, or more evidence at the same p); split again while either is significant."""
        found: list[int] = []
        todo = [(0, self.x.size)]
        while todo:
            lo, hi = todo.pop()
            one = self.scan(lo, hi, alpha=alpha)
            two = self.arc(lo, hi, alpha=alpha)
            if (
                two is not None
                and two[2] <= alpha
                and (one is None or one[1] > alpha or (two[2], -two[3]) < (one[1], -one[2]))
            ):
                found += [two[0], two[1]]
                todo += [(lo, two[0]), (two[0], two[1]), (two[1], hi)]
            elif one is not None and one[1] <= alpha:
                found.append(one[0])
                todo += [(lo, one[0]), (one[0], hi)]
        return sorted(found)

    def prune(self, found: list[int], alpha: float) -> list[tuple[int, float]]:
        """Re-test each change point between its neighbours (still paying for the search over
        every allowed cut there); drop the weakest until all hold."""
        pts = list(found)
        while pts:
            ps = []
            for i, cut in enumerate(pts):
                lo = pts[i - 1] if i > 0 else 0
                hi = pts[i + 1] if i + 1 < len(pts) else self.x.size
                res = self.scan(lo, hi, at=cut)
                ps.append(res[1] if res is not None else 1.0)
            worst = int(np.argmax(ps))
            if ps[worst] <= alpha:
                return list(zip(pts, ps, strict=True))
            del pts[worst]
        return []

    def not_drift(self, found: list[tuple[int, float]], alpha: float) -> list[tuple[int, float]]:
        """The change points a drift does not explain: each cut re-tested between its
        neighbours after taking out the drift slope (``serial.drift_slope``)."""
        out = []
        y = np.log(self.x) if np.all(self.x > 0) else self.x
        for i, (cut, p) in enumerate(found):
            lo = found[i - 1][0] if i > 0 else 0
            hi = found[i + 1][0] if i + 1 < len(found) else self.x.size
            slope = drift_slope(y[lo:hi], cut - lo)
            if slope != 0.0:
                flat = self.x.copy()
                flat[lo:hi] = y[lo:hi] - slope * np.arange(hi - lo)
                res = replace(self, x=flat).scan(lo, hi, at=cut, alpha=alpha)
                if res is None or res[1] > alpha:
                    continue
            out.append((cut, p))
        return out


def _cumsum(r: Ranks) -> Ranks:
    """Running sums of each row of ranks: in 32-bit integers when the ranks are whole (the
    nulls of untied runs: exact, the same numbers as in floats, in half the memory and time;
    n(n+1)/2 fits while n < 65,536), else in float64."""
    if r.dtype.kind == "i" and r.shape[1] < 65_536:
        return np.cumsum(r, axis=1, dtype=np.int32)
    return np.cumsum(r, axis=1, dtype=np.float64)


def _cut_sums(r: Ranks, rel: tuple[int, ...]) -> tuple[IntArray, Ranks]:
    """Runs left of each cut and their rank sums, each row of ranks."""
    k = np.asarray(rel, dtype=np.int64)
    return k, _cumsum(r)[:, k - 1]


def _cut_evidence(r: Ranks, rel: tuple[int, ...]) -> FloatArray:
    """The evidence (``ranksum.evidence``) of each row of ranks at each cut (runs before the cut)."""
    return evidence(r.shape[1], *_cut_sums(r, rel))


def _shuffled(r: Ranks, blocks: tuple[int, ...], rel: tuple[int, ...], b: int, seed: int) -> Iterator[Ranks]:
    """``b`` permutations of the ranks that move whole blocks, ``_Null.CHUNK`` rows at a time,
    from a generator seeded by the segment's shape only (a result does not depend on what was
    tested before it). Each chunk continues the generator's stream, so the rows are those one
    draw of all ``b`` gives, in the same order."""
    rng = np.random.default_rng([seed, *blocks, 0, *rel])
    sizes = np.asarray(blocks, dtype=np.int64)
    of = np.repeat(np.arange(sizes.size), sizes)  # block of each run
    within = np.arange(r.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    for done in range(0, b, _Null.CHUNK):
        k = min(_Null.CHUNK, b - done)
        if all(s == 1 for s in blocks):
            yield np.asarray(rng.permuted(np.broadcast_to(r, (k, r.size)), axis=1))
            continue
        order = np.argsort(rng.random((k, sizes.size)), axis=1)  # blocks in their new order
        placed = np.cumsum(sizes[order], axis=1) - sizes[order]  # where each slot starts
        start = np.empty_like(placed)
        np.put_along_axis(start, order, placed, axis=1)  # where each block now starts
        out = np.empty((k, r.size))
        np.put_along_axis(out, start[:, of] + within, np.broadcast_to(r, (k, r.size)), axis=1)
        yield out


def _exceed(
    r: Ranks,
    blocks: tuple[int, ...],
    shape: tuple[int, ...],
    b: int,
    seed: int,
    stat: Callable[[Ranks], FloatArray],
    z: float,
    most: int | None,
) -> int:
    """How many of ``_shuffled``'s permutations reach ``z`` by ``stat``: exact, or, past
    ``most``, a count above it (a sequential Monte Carlo p-value, as ``_Null`` draws: a cut
    far from significant is decided by its first chunk instead of all ``b``)."""
    count = 0
    for rs in _shuffled(r, blocks, shape, b, seed):
        count += _at_least(np.sort(stat(rs)), z)
        if most is not None and count > most:
            break
    return count


def _scan_max(rs: Ranks, rel: tuple[int, ...]) -> FloatArray:
    """The maximum single-cut statistic of each row of ranks."""
    return max_evidence(rs.shape[1], *_cut_sums(rs, rel))


def _arc_sums(r: Ranks, a: IntArray, b: IntArray) -> tuple[IntArray, Ranks]:
    """Runs inside each arc [a, b) and their rank sums, each row of ranks."""
    sums = _cumsum(r)
    c = np.concatenate((np.zeros((r.shape[0], 1), dtype=sums.dtype), sums), axis=1)
    return b - a, c[:, b] - c[:, a]


def _arc_evidence(r: Ranks, a: IntArray, b: IntArray) -> FloatArray:
    """The evidence (``ranksum.evidence``) of the rank sum inside [a, b) against outside, each row
    of ranks."""
    return evidence(r.shape[1], *_arc_sums(r, a, b))


def _whole_ranks(n: int) -> npt.NDArray[np.int32]:
    """The ranks 1..n of n untied runs, as integers: shuffled by the same generator they
    move exactly as the float ranks do (the draws do not depend on the dtype)."""
    return np.arange(1, n + 1, dtype=np.int32)


def _arc_max(rs: Ranks, a: IntArray, b: IntArray) -> FloatArray:
    """The maximum arc statistic of each row of ranks, 500 rows at a time (memory)."""
    n = rs.shape[1]
    return np.concatenate(
        [max_evidence(n, *_arc_sums(rs[i : i + 500], a, b)) for i in range(0, rs.shape[0], 500)]
    )


def _at_least(null: FloatArray, z: float) -> int:
    """How many of a sorted null reach ``z`` (less 1e-9: the observed statistic is one of
    the permutations' when nothing changed)."""
    return null.size - int(np.searchsorted(null, z - 1e-9, side="left"))


def _most(alpha: float | None, b: int) -> int | None:
    """The most permutations that may reach a statistic whose p-value (1 + k) / (1 + b) is
    still at most ``alpha``; None (count them all) without a level."""
    if alpha is None:
        return None
    k = math.floor(alpha * (1 + b)) - 1
    while (2 + k) / (1 + b) <= alpha:
        k += 1
    while k >= 0 and (1 + k) / (1 + b) > alpha:
        k -= 1
    return k


class _Null:
    """The permutation null of one untied shape's maximum statistic (``stat`` of each row of
    shuffled ranks), drawn CHUNK permutations at a time and only as far as a test needs:
    a sequential Monte Carlo p-value (Besag and Clifford 1991). Once more permutations than
    ``most`` reach the statistic, its p-value is above the level and the rest are not drawn
    (a cut far from significant is decided by its first 1,000 of 20,000). The permutations
    are those drawing all ``b`` at once gives, in the same order, so a count that runs to the
    end is the same count; thread-safe (history tests series on threads)."""

    CHUNK = 1000

    def __init__(self, n: int, key: tuple[int, ...], b: int, seed: int, stat: Callable[[Ranks], FloatArray]):
        self._rng = np.random.default_rng([seed, *((1,) * n), 0, *key])  # as _shuffled seeds it
        self._n, self._b, self._stat = n, b, stat
        self._parts: list[FloatArray] = []
        self._drawn = 0
        self._lock = threading.Lock()

    def exceed(self, z: float, most: int | None = None) -> int:
        """How many permutations reach ``z``: exact, or, past ``most``, a count above it."""
        with self._lock:
            count = sum(_at_least(p, z) for p in self._parts)
            while self._drawn < self._b and (most is None or count <= most):
                k = min(self.CHUNK, self._b - self._drawn)
                rs = self._rng.permuted(np.broadcast_to(_whole_ranks(self._n), (k, self._n)), axis=1)
                part = np.sort(self._stat(rs))
                self._parts.append(part)
                self._drawn += k
                count += _at_least(part, z)
            return count

    def full(self) -> FloatArray:
        """The whole sorted null (every permutation drawn)."""
        self.exceed(math.inf)
        with self._lock:
            return np.sort(np.concatenate(self._parts))


@functools.lru_cache(maxsize=256)
def _scan_null(n: int, rel: tuple[int, ...], b: int, seed: int) -> _Null:
    """The null of the maximum single-cut statistic for n untied single runs."""
    return _Null(n, rel, b, seed, lambda rs: _scan_max(rs, rel))


@functools.lru_cache(maxsize=128)
def _arc_nulls(n: int, key: tuple[tuple[int, ...], tuple[int, ...]], b: int, seed: int) -> _Null:
    """The null of the maximum arc statistic for n untied single runs."""
    a, e = np.asarray(key[0], dtype=np.int64), np.asarray(key[1], dtype=np.int64)
    return _Null(n, (0, *key[0], 1, *key[1]), b, seed, lambda rs: _arc_max(rs, a, e))


def _describe(
    x: FloatArray, keep: IntArray, labels: Sequence[str] | None, found: list[tuple[int, float]], i: int
) -> ChangePoint:
    """A change point with both sides' medians, intervals and groups."""
    cut, p = found[i]
    lo = found[i - 1][0] if i > 0 else 0
    hi = found[i + 1][0] if i + 1 < len(found) else x.size
    left, right = x[lo:cut], x[cut:hi]
    mb, ma = float(np.median(left)), float(np.median(right))
    rel = ma / mb - 1.0 if mb != 0.0 else math.nan
    return ChangePoint(
        index=int(keep[cut]),
        before=labels[cut - 1] if labels is not None else None,
        after=labels[cut] if labels is not None else None,
        n_before=int(left.size),
        n_after=int(right.size),
        median_before=mb,
        ci_before=median_ci(left.tolist(), CONFIDENCE),
        median_after=ma,
        ci_after=median_ci(right.tolist(), CONFIDENCE),
        rel_change=rel,
        p_value=p,
    )
