"""Pure: what the change-point search (``changepoints.py``) reads of a series' serial structure
before trusting a run-by-run permutation test: runs that share a run effect, and drift.

- **Block length** (dependence): the runs' deviations from a running median (width
  ``WIDTH``, so that a step moves few of them) have their lag-k correlations estimated
  robustly (Gnanadesikan-Kettenring with Shamos' scale, ``predictive.lag_corr``), each less
  its one-sided 95% sampling allowance. Runs are exchangeable only in blocks as long as the
  leading run of positive lags, plus one: a permutation test that shuffles single runs of a
  series whose results come in groups sharing an offset finds changes at the groups' edges,
  one that shuffles blocks (a moving-block permutation) does not.
- **Drift slope**: the Theil-Sen slope from the pairs of runs on the same side of a cut
  (Sen's slope stratified by side, as the seasonal Kendall test stratifies by season): a
  step between the sides does not move it, a slow drift does. A cut that the drift explains
  (not significant once the slope is taken out) is not a change point.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .predictive import lag_corr

FloatArray = npt.NDArray[np.float64]
#: Width of the running median the deviations are taken from.
WIDTH = 9
#: Longest block: lags tested for positive correlation are 1 .. MAX_BLOCK - 1.
MAX_BLOCK = 4
#: Fewest runs for the dependence to be read (fewer: single runs).
MIN_RUNS = 20
#: Most runs in a span whose drift slope is estimated (the pairs grow as the square).
MAX_SLOPE_RUNS = 600


def block_length(x: FloatArray) -> int:
    """How many consecutive runs a permutation test should move together (module docstring):
    1 unless the deviations from a running median show positive serial correlation."""
    n = x.size
    if n < MIN_RUNS:
        return 1
    y = np.log(x) if np.all(x > 0) else x
    h = WIDTH // 2
    pad = np.concatenate((np.full(h, y[0]), y, np.full(h, y[-1])))
    windows = np.lib.stride_tricks.sliding_window_view(pad, WIDTH)
    r = y - np.median(windows, axis=1)
    length = 1
    for lag in range(1, MAX_BLOCK):
        if lag_corr(r, lag) - 1.645 / math.sqrt(n - lag) <= 0.0:
            break
        length += 1
    return length


def drift_slope(y: FloatArray, cut: int) -> float:
    """Sen's slope of ``y`` per run from the pairs on the same side of ``cut`` (0 when too
    few pairs, or more than ``MAX_SLOPE_RUNS`` runs)."""
    if y.size > MAX_SLOPE_RUNS:
        return 0.0
    slopes = []
    for part in (y[:cut], y[cut:]):
        i, j = np.triu_indices(part.size, 1)
        slopes.append((part[j] - part[i]) / (j - i))
    s = np.concatenate(slopes)
    return float(np.median(s)) if s.size >= 3 else 0.0
