"""Pure: whether a change point is a step or a move that settles in over many results.

A step falls between two results, so a bisection can find the commit or kernel that made it.
A level that settles at a new one over 10-25 results (a setting rolled out, firmware or a
cache that warms in, a sag after a busy stretch) happened at no single result, and a change
point placed on it would send a bisection to an arbitrary one. Each change point is judged
on the results within ``REACH`` of it, between its neighbours (or the ends), by the Gaussian
log-likelihood ratio n log(RSS_step / RSS_move) on log values: the best single step within
``SLACK`` results of it (at any run: with groups, a change point can only lie on a
boundary, but the question is how fast the level moved, not where) against the best
logistic move whose 10%-90% span is 10-25 results (``SPANS``), centred within half a span
of it, each with an intercept, by least squares. The change point with the largest ratio
above ``RATIO`` is dropped and the rest are judged again.

Measured (docs/benchmarks.md, ``benchmarks/settling_limit.py``): a logistic move beats a
true step of 2-10% under white noise of CV 1-2% by more than 4 in 0-2.2% of steps, and
explains about half of the false steps the search finds on such moves; a settling move that
is not one logistic move (a thermal sag, a smooth curve) is mostly not caught.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Likelihood ratio above which a settling move explains a change point better than a step.
RATIO = 4.0
#: 10%-90% spans (results) of the settling moves tried.
SPANS = tuple(float(w) for w in np.geomspace(10.0, 25.0, 6))
#: How far (results) the step compared may lie from the change point.
SLACK = 3
#: How far (results) from the change point the comparison looks, between its neighbours: a
#: move elsewhere in a long segment is neither model's to explain.
REACH = 20


def _rss(seg: FloatArray, shapes: FloatArray) -> float:
    """Least residual sum of squares of ``seg`` on an intercept and any one of ``shapes``."""
    yc = seg - seg.mean()
    g = shapes - shapes.mean(axis=1, keepdims=True)
    nn = np.maximum(np.sum(g * g, axis=1), 1e-12)
    return max(float(np.min(np.sum(yc * yc) - (g @ yc) ** 2 / nn)), 1e-300)


def ratios(y: FloatArray, cuts: Sequence[int]) -> list[float]:
    """Each change point's log-likelihood ratio of the best settling move against the best
    step near it (module docstring)."""
    out = []
    for i, c in enumerate(cuts):
        lo = max(cuts[i - 1] if i else 0, c - REACH)
        hi = min(cuts[i + 1] if i + 1 < len(cuts) else y.size, c + REACH)
        near = range(max(lo + 1, c - SLACK), min(hi - 1, c + SLACK) + 1)
        t = np.arange(lo, hi, dtype=np.float64)
        steps = (t[None, :] >= np.asarray(near, dtype=np.float64)[:, None]).astype(np.float64)
        moves = np.asarray(
            [
                1.0 / (1.0 + np.exp(-(t - mid) / (w / (2.0 * math.log(9.0)))))
                for w in SPANS
                for mid in np.arange(c - w / 2.0, c + w / 2.0 + 1.0)
            ]
        )
        seg = y[lo:hi]
        out.append(seg.size * math.log(_rss(seg, steps) / _rss(seg, moves)))
    return out


def sudden(values: Sequence[float] | FloatArray, cuts: Sequence[int]) -> list[int]:
    """The change points (first runs after them) that no settling move explains better than a
    step (module docstring); all of them when a value is not positive and finite."""
    x = np.asarray(values, dtype=np.float64)
    kept = sorted(cuts)
    if not np.all(np.isfinite(x) & (x > 0.0)):
        return kept
    y = np.log(x)
    while kept:
        lr = ratios(y, kept)
        worst = int(np.argmax(lr))
        if lr[worst] <= RATIO:
            break
        del kept[worst]
    return kept
