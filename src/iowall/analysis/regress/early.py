"""Pure: early detection, the newest one to three results of a series tested against the history
before them, so that a regression can be alarmed at its second bad result.

Method (chosen by measurement, benchmarks/replay.py, docs/statistics.md): an order-statistic
prediction test on log values. The baseline is the results since the last change point before
the window (at most ``MAX_BASE`` of them), its location the median; the noise's shape is read
from the whole history before the window, each result about its own segment's median
(``noise_of``), and makes the predictive distribution of one more result
(``predictive.predictive``: Student-t with df averaged over their likelihood, beside a two-mode
mixture when the noise has two modes and a model of counts when the baseline piles on a grain,
the effective sample size from the serial dependence). A window of the newest k results is
summarised by the order statistic that one stray result cannot move, always with the newest
result among the moved: for a fall, the better of the newest two; of the newest three, the
better of the newest and the median (the newest and one of the two before it are low). Under no
change each result is a draw from the predictive distribution, so that statistic's tail is
exact under it: with F = P(one result ≤ q), P(better of 2 ≤ q) = F², P(newest and one of two
before ≤ q) = 2F² - F³, a share of neighbours moving together counted as one result
(``predictive.window_tail``). The windows' p-values are Bonferroni-combined; the interval of
the shift inverts the same test. A one-result window can only say "suspect": one result far out
is a regression or an outlier, and the next result decides. Each window also carries how often
the history showed a move as far, for as many results, and came back (``episodes.shown``),
for the gate to weigh.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...vocab.units import plural
from .episodes import Shown, deviations, shown
from .predictive import predictive, step_of

#: Windows tested: the newest 1, 2 and 3 results.
WINDOWS = (1, 2, 3)
#: Fewest baseline results for a test; the most taken (the newest of the segment).
MIN_BASE = 8
MAX_BASE = 40
#: The verdict rests on the best window of two or three results when its combined p-value is
#: within this (the level it is judged at), even if the newest result alone is further out
#: (which can only be suspected).
PREFER_SEVERAL = 0.01
#: The noise's shape is read from the newest this many results before the window, each
#: about its own segment's median (segments of at least ``MIN_SEGMENT``).
MAX_NOISE = 120
MIN_SEGMENT = 6
#: Confidence of each window's interval (before the Bonferroni split over windows).
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Window:
    """One window's test: the newest ``k`` results against the ``n_base`` before them (from
    result ``base_from``), the shift of their median on the log scale with its interval, and
    the two-sided p-value of the window's order statistic (not yet combined over windows)."""

    k: int
    base_from: int
    n_base: int
    base_median: float
    new_median: float
    shift: float
    low: float
    high: float
    p_value: float
    #: how often the history showed a window as far out on the side it moved, and came back
    #: (``episodes.shown``); None when not looked for
    shown: Shown | None = None
    #: the step of the grain the values are stored on when the interval was widened to it
    #: (a move of one step may be any size up to it); 0 when the interval is the test's own
    grain: float = 0.0


@dataclass(frozen=True)
class Early:
    """The newest results' verdict: the window with the smallest p-value (one of two or three
    results when that is within the level it is judged at), its p-value Bonferroni-combined
    over the windows tested, and why nothing was tested (``reason``)."""

    window: Window | None
    p_value: float
    windows: tuple[Window, ...]
    reason: str = ""

    @property
    def ratio(self) -> float:
        return math.exp(self.window.shift) if self.window else 1.0


def _moved(y: np.ndarray, fall: bool) -> float:
    """The window's statistic, in time order: the value a fall (or a rise) must have moved."""
    pick = max if fall else min
    if y.size == 1:
        return float(y[0])
    if y.size == 2:
        return float(pick(y))
    return float(pick(y[-1], np.median(y)))


def check_window(
    base_logs: Sequence[float] | npt.NDArray[np.float64],
    new_logs: Sequence[float] | npt.NDArray[np.float64],
    *,
    base_from: int = 0,
    split: int = 1,
    confidence: float = CONFIDENCE,
    noise: Sequence[float] | npt.NDArray[np.float64] | None = None,
    interval: bool = True,
    episodes: Sequence[float] | npt.NDArray[np.float64] | None = None,
    grain: float = 0.0,
) -> Window:
    """The order-statistic prediction test of one window (module docstring) against the
    baseline's predictive distribution (``predictive.predictive``); ``split`` is the number
    of windows the level is shared by (Bonferroni) for the interval; with ``episodes`` (the
    history's deviations, ``episodes.deviations``) how often it showed the window's move.
    With ``grain`` (the step of values stored on a grain, ``predictive.step_of``) the interval
    is at least a step either side of the shift: each median may sit anywhere within half a
    step of its stored figure, so the stored figures cannot show a move more exactly."""
    b = np.asarray(base_logs, dtype=np.float64)
    y = np.asarray(new_logs, dtype=np.float64)
    k, n = y.size, b.size
    m = float(np.median(b))
    down, up = _moved(y, True), _moved(y, False)
    med = float(np.median(y))
    pred = predictive(b, None if noise is None else np.asarray(noise, dtype=np.float64))
    p_down, p_up = pred.tail(down, k), pred.tail(up, k, upper=True)
    tail = (1.0 - confidence) / 2.0 / split
    low, high = -math.inf, math.inf
    wide = 0.0
    if interval:
        low, high = up - pred.quantile(tail, k, upper=True), down - pred.quantile(tail, k)
        step = grain * (1.0 + 1e-9)  # closed: a fall of one step reaches no change itself
        if grain > 0.0 and (low > med - m - step or high < med - m + step):
            low, high, wide = min(low, med - m - step), max(high, med - m + step), grain
    seen = None
    if episodes is not None:
        fall = med < m
        seen = shown(np.asarray(episodes, dtype=np.float64), (down if fall else up) - m, k, fall)
    p = min(1.0, 2.0 * min(p_down, p_up))
    return Window(k, base_from, n, m, med, med - m, low, high, p, seen, wide)


def noise_of(logs: npt.NDArray[np.float64], changes: Sequence[int], end: int) -> npt.NDArray[np.float64]:
    """The history's noise before ``end``: each result's deviation from its own segment's
    median (segments between ``changes`` of at least ``MIN_SEGMENT`` results), in time order,
    the newest ``MAX_NOISE`` of them. The level is the segment's; the noise's shape (its
    scale, tails, modes, dependence) is taken to be the series'."""
    return deviations(logs, changes, end, least=MIN_SEGMENT, most=MAX_NOISE, back=False)


def _baseline(end: int, changes: Sequence[int], min_base: int) -> tuple[int, int] | None:
    """The newest segment between change points that ends by ``end`` and holds ``min_base``
    results: the results since the last change, or, while too few results follow it, the
    segment before it (a change found in the newest few is still a change from that)."""
    bounds = sorted({0, *(c for c in changes if 0 < c < end)}, reverse=True)
    hi = end
    for lo in bounds:
        if hi - lo >= min_base:
            return lo, hi
        hi = lo
    return None


def early(
    values: Sequence[float],
    changes: Sequence[int] = (),
    *,
    windows: Sequence[int] = WINDOWS,
    min_base: int = MIN_BASE,
    max_base: int = MAX_BASE,
    prefer: float = PREFER_SEVERAL,
) -> Early:
    """Test the newest results of ``values`` (one value per result, oldest first, positive)
    against the results before them since the last of ``changes`` (indices of first results
    after a change point) that precedes the window (``_baseline``); see the module docstring.
    The verdict rests on the best window of several results when its combined p-value is
    within ``prefer`` (the level it will be judged at), else on the strongest window."""
    x = np.asarray(values, dtype=np.float64)
    if x.size and not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError("early detection needs positive finite values")
    logs = np.log(x) if x.size else x
    n = int(logs.size)
    done: list[Window] = []
    todo: list[Callable[..., Window]] = []  # each window's test, run again for the chosen one
    eligible = [k for k in windows if n - k >= min_base]
    for k in eligible:
        seg = _baseline(n - k, changes, min_base)
        if seg is None:
            continue
        lo, hi = max(seg[0], seg[1] - max_base), seg[1]
        test = functools.partial(
            check_window,
            logs[lo:hi],
            logs[n - k :],
            base_from=lo,
            split=len(eligible),
            noise=noise_of(logs, changes, n - k),
            grain=step_of(logs[lo:hi], logs),
        )
        done.append(test(interval=False))
        todo.append(test)
    if not done:
        return Early(
            None,
            1.0,
            (),
            f"{plural(n, 'result')}; at least {min_base + min(windows)} "
            f"are needed ({min_base} before the newest) since the last "
            "change",
        )
    best = min(done, key=lambda w: (w.p_value, -w.k))
    several = [w for w in done if w.k >= 2]
    if several:  # a change shown by two or three results, rather than one far out, if any
        multi = min(several, key=lambda w: (w.p_value, -w.k))
        if multi.p_value * len(done) <= prefer or multi.p_value <= best.p_value:
            best = multi
    i = done.index(best)  # the interval and the episodes, for the window decided on only
    seen = deviations(logs, changes, n - best.k, least=MIN_SEGMENT, most=MAX_NOISE)
    done[i] = best = todo[i](episodes=seen)
    return Early(best, min(1.0, best.p_value * len(done)), tuple(done))
