"""Pure: the evidence of a Mann-Whitney rank sum, -log of its two-sided p-value: from its exact
null where the smaller side is short, from the normal tail of the standardised statistic
beyond. What the change-point search (``changepoints.py``) judges each cut and arc by.

Why exact: the normal tail is too heavy for a short side (of 60 runs, its p at the exact
1e-4 is 2.4 times too large with 12 runs on the short side, 36 times with 3), and a rank sum
is bounded: six results all below 54 others reach |z| = 4.0 at most, under the permutation
maximum that the long cuts set, so a short excursion or a change in the newest few results
could never be significant. Judged by its own exact tail, no length is favoured
(docs/statistics.md). The exact null is counted by the subset-sum recursion (how many
k-subsets of 1..n have each sum), once a segment length.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Rank sums: float (mid-ranks of ties) or, for the nulls of untied runs, 32-bit integers.
Sums = npt.NDArray[np.float64] | npt.NDArray[np.int32]

#: The smaller side, in runs, up to which a cut or arc is judged by its rank sum's exact tail
#: (beyond it, by the normal tail: within a factor 1.6 of the exact p at 1e-4 at 30 runs).
EXACT_SIDE = 30
#: Longest segment with exact tails (its table grows as the length squared times
#: ``EXACT_SIDE``: 1.3 MB and 0.05 s at 200 runs); a longer one is judged by the normal tail
#: throughout.
EXACT_MAX_RUNS = 200


def exact_tails(n: int) -> FloatArray:
    """-log of the two-sided exact p of the rank sum of k of n untied runs, row k (0 to
    ``EXACT_SIDE`` or n // 2), column the sum: Mann-Whitney's null, counted by the subset-sum
    recursion (how many k-subsets of 1..n have each sum). Sums no subset has are infinite and
    never looked up. Not kept: ``tail_table`` keeps what is read of it."""
    kmax = min(EXACT_SIDE, n // 2)
    top = kmax * n
    count = np.zeros((kmax + 1, top + 1))
    count[0, 0] = 1.0
    for i in range(1, n + 1):
        for j in range(min(i, kmax), 0, -1):
            count[j, i:] += count[j - 1, : top + 1 - i]
    dist = count / count.sum(axis=1, keepdims=True)
    below = np.cumsum(dist, axis=1)
    above = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(divide="ignore"):
        return np.asarray(-np.log(np.minimum(1.0, 2.0 * np.minimum(below, above))))


@functools.lru_cache(maxsize=32)
def tail_table(n: int) -> tuple[FloatArray, IntArray]:
    """The exact evidence of every rank sum of every left side of k runs of n untied runs
    whose smaller side has at most ``EXACT_SIDE`` runs (``exact_tails``), flat, and where
    row k starts less its least sum (sum s of k runs is at ``start[k] + s``; the other rows
    are empty). One lookup a rank sum: the permutation nulls read millions of them. At most
    1.3 MB (200 runs)."""
    exact = exact_tails(n)
    total = n * (n + 1) // 2
    least = np.asarray([k * (k + 1) // 2 for k in range(n + 1)], dtype=np.int64)
    size = np.asarray(
        [k * (n - k) + 1 if 0 < min(k, n - k) <= EXACT_SIDE else 0 for k in range(n + 1)], dtype=np.int64
    )
    begin = np.concatenate(([0], np.cumsum(size)[:-1]))
    flat = np.zeros(int(size.sum()))
    for k in np.flatnonzero(size):
        sums = np.arange(least[k], least[k] + size[k])
        flat[begin[k] : begin[k] + size[k]] = exact[min(k, n - k), sums if k <= n - k else total - sums]
    return flat, begin - least


def _sides(n: int, k: IntArray, sums: Sums) -> tuple[FloatArray | Sums, npt.NDArray[np.bool_]]:
    """The rank sums rounded toward their mean (a tied segment's mid-rank sums: ties never
    add evidence), and which columns are judged by the exact tail."""
    if sums.dtype.kind != "i":
        mean = k * (n + 1) / 2.0
        sums = np.where(sums < mean, np.ceil(sums - 1e-6), np.floor(sums + 1e-6))
    if n > EXACT_MAX_RUNS:
        return sums, np.zeros(k.size, dtype=bool)
    return sums, np.minimum(k, n - k) <= EXACT_SIDE


def _exact(n: int, k: IntArray, sums: FloatArray | Sums) -> FloatArray:
    flat, start = tail_table(n)
    return np.asarray(flat[start[k] + sums.astype(np.int64)])


def _normal_z(n: int, k: IntArray, sums: FloatArray | Sums) -> FloatArray:
    return np.asarray(np.abs(sums - k * (n + 1) / 2.0) / np.sqrt(k * (n - k) * (n + 1) / 12.0))


def _of_z(z: FloatArray) -> FloatArray:
    """The normal tail's evidence, -log 2Φ(-z), at least 0 (monotone in z)."""
    from scipy.special import log_ndtr  # here: 0.5 s to import, and only long segments need it

    return np.asarray(np.maximum(0.0, -(math.log(2.0) + log_ndtr(-z))))


def evidence(n: int, k: IntArray, sums: Sums) -> FloatArray:
    """-log of the two-sided p-value of each rank sum (rows) of the ``k`` runs left of a cut
    or inside an arc (columns) of n: exact where the smaller side has at most
    ``EXACT_SIDE`` runs and n at most ``EXACT_MAX_RUNS`` (``tail_table``), else the normal
    tail of the standardised statistic."""
    sums, exact = _sides(n, k, sums)
    if exact.all():
        return _exact(n, k, sums)
    out = np.empty(sums.shape)
    if exact.any():
        out[:, exact] = _exact(n, k[exact], sums[:, exact])
    out[:, ~exact] = _of_z(_normal_z(n, k[~exact], sums[:, ~exact]))
    return out


def max_evidence(n: int, k: IntArray, sums: Sums) -> FloatArray:
    """Each row's largest ``evidence``, the same numbers: the normal tail, monotone in |z|,
    taken once a row at its largest |z| instead of at every column."""
    sums, exact = _sides(n, k, sums)
    if exact.all():
        return np.asarray(_exact(n, k, sums).max(axis=1))
    best = _of_z(_normal_z(n, k[~exact], sums[:, ~exact]).max(axis=1))
    if exact.any():
        best = np.maximum(best, _exact(n, k[exact], sums[:, exact]).max(axis=1))
    return best
