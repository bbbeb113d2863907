"""Pure: when has a point been repeated enough? The exact order-statistic (binomial) interval of
the median, and the decision ``--repeat auto`` takes on it (see docs/statistics.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .samples import checked, median, rel


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Exact distribution-free interval of the median from order statistics (binomial).

    Returns (x_(k), x_(n-k+1)) for the largest k with P(Binomial(n, 1/2) < k) <= (1-c)/2,
    so coverage is at least ``confidence`` for any continuous distribution. When no such
    k exists (n <= 5 at 95%) the interval is unbounded: (-inf, inf).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    arr = sorted(checked(samples, "median_ci"))
    n = len(arr)
    alpha_half = (1.0 - confidence) / 2.0
    # P(Bin(n, 1/2) <= j) = sum C(n, i) / 2^n for i <= j, exact in integers (scipy's binom
    # gave the same and cost 1.2 s of import in every run that repeats, 15 s in an ab guest)
    k, below = 0, 0
    while k < n:
        below += math.comb(n, k)
        if below / 2**n > alpha_half + 1e-12:
            break
        k += 1
    if k == 0:
        return -math.inf, math.inf
    if k > n - k + 1:
        k = (n + 1) // 2
    return float(arr[k - 1]), float(arr[n - k])


def _halfwidth(samples: Sequence[float], confidence: float) -> tuple[float, float, float, float]:
    """(median, low, high, relative half-width) of the order-statistic interval."""
    med = median(samples)
    lo, hi = median_ci(samples, confidence)
    half = max(med - lo, hi - med)
    return med, lo, hi, rel(half, med)


def decided(samples: Sequence[float], *, rel_halfwidth: float = 0.02, confidence: float = 0.95) -> bool:
    """True when the exact order-statistic interval of the median is within ±rel_halfwidth.

    Method: ``median_ci`` (distribution-free binomial interval); at 95% it needs at least
    6 samples before it can be bounded at all.
    """
    return _halfwidth(samples, confidence)[3] <= rel_halfwidth


@dataclass(frozen=True)
class DecisionState:
    """Where "repeat until decided" stands, and a one-line reason a person can read.

    ``stop`` is true when no more repeats should run: decided, or ``max_repeats`` reached.
    ``achieved`` is the current relative half-width of the median's interval (inf while
    the interval is unbounded).
    """

    decided: bool
    stop: bool
    n: int
    median: float
    low: float
    high: float
    achieved: float
    target: float
    confidence: float
    reason: str


def _pct(x: float) -> str:
    """Format a fraction as a percentage for reasons."""
    return "unbounded" if math.isinf(x) else f"{x * 100:.1f}%"


def decision_state(
    samples: Sequence[float],
    *,
    max_repeats: int,
    rel_halfwidth: float = 0.02,
    confidence: float = 0.95,
) -> DecisionState:
    """Decide whether to repeat again; the reason names the method and the numbers.

    Method: ``decided`` (exact order-statistic interval of the median within
    ±rel_halfwidth); stops when decided or when ``max_repeats`` samples exist.
    """
    if max_repeats < 1:
        raise ValueError("max_repeats must be at least 1")
    med, lo, hi, achieved = _halfwidth(samples, confidence)
    n = len(samples)
    ok = achieved <= rel_halfwidth
    conf = f"{confidence * 100:g}%"
    target = f"±{rel_halfwidth * 100:g}%"
    if ok:
        reason = (
            f"decided after {n} runs: median {med:.6g} known to ±{_pct(achieved)} "
            f"({conf} order-statistic interval), target {target}"
        )
    elif math.isinf(achieved):
        need = _min_n_for(confidence)
        what = f"at least {need} runs are needed to bound a {conf} interval of the median"
        reason = (
            f"stopped at the maximum of {max_repeats} runs, undecided: {what}"
            if n >= max_repeats
            else f"undecided after {n} runs: {what}"
        )
    elif n >= max_repeats:
        reason = (
            f"stopped at the maximum of {max_repeats} runs, undecided: median {med:.6g} "
            f"known only to ±{_pct(achieved)} ({conf}), target {target}"
        )
    else:
        reason = (
            f"undecided after {n} runs: median {med:.6g} known to ±{_pct(achieved)} ({conf}), target {target}"
        )
    return DecisionState(
        decided=ok,
        stop=ok or n >= max_repeats,
        n=n,
        median=med,
        low=lo,
        high=hi,
        achieved=achieved,
        target=rel_halfwidth,
        confidence=confidence,
        reason=reason,
    )


def _min_n_for(confidence: float) -> int:
    """Smallest n whose order-statistic interval of the median is bounded."""
    n = 1
    while 2.0 * 0.5**n > 1.0 - confidence:
        n += 1
    return n
