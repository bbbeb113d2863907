"""Statistics for comparing runs: medians, spreads and the calibrated compare rule.

Pure functions over plain sequences of floats; nothing here touches the store, the disk or
the terminal. The methods, and why they were chosen, are explained in docs/statistics.md:

- ``ratio_ci`` / ``compare_samples``: the Hodges–Lehmann shift of log values (the median of
  all pairwise log ratios new/base), studentised by a standard error estimated per side
  (Welch-like), with Student t critical values at Welch's df times a multiplier calibrated
  by simulation (analysis/regress/calibration.py) so that the rule holds its level with 2–50 runs a
  side, unequal spreads and heavy tails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from .calibration import CAL_LEVELS, CAL_NOISES, CAL_SPREADS, kappa
from .samples import rel as _rel
from .tdist import t_quantile

Direction = Literal["higher", "lower"]
FloatArray = npt.NDArray[np.float64]


def _as_array(samples: Sequence[float], what: str) -> FloatArray:
    """Validate a sample: non-empty, finite; returned as a float64 array."""
    arr = np.asarray(samples, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError(f"{what}: no samples")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: samples must be finite numbers")
    return arr


@dataclass(frozen=True)
class Spread:
    """How far repeats of one point scatter.

    ``rel_range`` is (max - min) / median; ``iqr`` is the interquartile range (linearly
    interpolated quartiles, Hyndman–Fan type 7); ``rel_iqr`` is iqr / median.
    """

    rel_range: float
    iqr: float
    rel_iqr: float


def spread(samples: Sequence[float]) -> Spread:
    """Relative range and interquartile range (type-7 quartiles) of repeated measurements."""
    arr = _as_array(samples, "spread")
    med = float(np.median(arr))
    q1, q3 = (float(v) for v in np.percentile(arr, [25.0, 75.0]))
    rng = float(arr.max() - arr.min())
    return Spread(rel_range=_rel(rng, med), iqr=q3 - q1, rel_iqr=_rel(q3 - q1, med))


def geomean(ratios: Sequence[float]) -> float:
    """Geometric mean of positive ratios (exp of the mean log), the summary of many ratios."""
    arr = _as_array(ratios, "geomean")
    if np.any(arr <= 0):
        raise ValueError("geomean: ratios must be positive")
    return float(np.exp(np.mean(np.log(arr))))


# --------------------------------------------------------------------------- intervals


def hl_studentised(base: FloatArray, new: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Hodges–Lehmann shift, its per-side standard error and Welch degrees of freedom.

    ``base`` is (S, m), ``new`` is (S, n): S data sets at once (vectorised for the
    calibration). The shift is the median of the m*n differences new_j - base_i. Its
    standard error is the normal-theory asymptotic one with each side's own variance
    (Welch-like): with v_b, v_x each side's variance (``side_variance``) and
    w = v_b / (v_b + v_x),
    ``SE² = (v_b + v_x) · (asin(w) / m + asin(1 - w) / n)`` (π/3 times the variance of a
    difference of means when the spreads are equal). The degrees of freedom are
    Welch–Satterthwaite's. Needs m, n >= 2.
    """
    s, m = base.shape
    n = new.shape[1]
    est = np.median((new[:, None, :] - base[:, :, None]).reshape(s, m * n), axis=1)
    vb = side_variance(base)
    vx = side_variance(new)
    tot = vb + vx
    w = np.divide(vb, tot, out=np.full(s, 0.5), where=tot > 0)
    se = np.sqrt(tot * (np.arcsin(w) / m + np.arcsin(1.0 - w) / n))
    qb, qx = vb / m, vx / n
    den = qb**2 / (m - 1) + qx**2 / (n - 1)
    nu = np.divide((qb + qx) ** 2, den, out=np.full(s, float(m + n - 2)), where=den > 0)
    return est, se, nu


#: Runs a side from which its variance is guarded against outliers (``side_variance``).
ROBUST_FROM = 8


def side_variance(a: FloatArray) -> FloatArray:
    """Variance of each row of (S, k): the sample variance, or with k >= ROBUST_FROM the
    smaller of it and the squared Shamos scale (1.0483 x the median of the pairwise
    distances, consistent for normal noise), so that one bad run does not inflate it."""
    v: FloatArray = a.var(axis=1, ddof=1)
    k = a.shape[1]
    if k < ROBUST_FROM:
        return v
    i, j = np.triu_indices(k, 1)
    shamos: FloatArray = 1.0483 * np.median(np.abs(a[:, i] - a[:, j]), axis=1)
    out: FloatArray = np.minimum(v, shamos**2)
    return out


def critical_value(n_base: int, n_new: int, confidence: float = 0.95, df: float | None = None) -> float:
    """Two-sided critical value for the studentised Hodges–Lehmann shift.

    Student's t quantile at ``df`` degrees of freedom (the data's Welch–Satterthwaite df;
    n_base + n_new - 2 when not given; ``tdist.t_quantile``, scipy's ``stdtrit`` to 1e-12)
    times the calibrated multiplier ``calibration.kappa(n_base, n_new, confidence)``.
    Infinite with one run on a side.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if min(n_base, n_new) < 2:
        return math.inf
    nu = float(n_base + n_new - 2) if df is None else max(1.0, df)
    return kappa(n_base, n_new, confidence) * t_quantile(nu, 0.5 + confidence / 2.0)


def null_noise(rng: np.random.Generator, noise: str, shape: tuple[int, int], sd: float) -> FloatArray:
    """Zero-centred noise of standard deviation ``sd``: "normal" or "t3" (Student t, 3 df)."""
    if noise == "t3":
        return rng.standard_t(3, shape) * (sd / math.sqrt(3.0))
    if noise == "normal":
        return rng.normal(0.0, sd, shape)
    raise ValueError(f"unknown noise {noise!r}")


def calibrate_kappa(n_base: int, n_new: int, *, sims: int = 40000, seed: int = 0) -> tuple[float, ...]:
    """Calibrated multipliers at CAL_LEVELS for (n_base, n_new), by Monte Carlo.

    For each noise in CAL_NOISES and spread ratio in CAL_SPREADS (new side's standard
    deviation over base's), simulates ``sims`` no-change pairs and takes the CAL_LEVELS
    quantiles of |shift / SE| / t(Welch df); returns the largest over those cells (the
    envelope), so the rule holds its level in each. Slow for large sizes; used offline.
    """
    from scipy.special import stdtrit  # heavy (0.2 s): offline and simulation use only

    rng = np.random.default_rng(seed)
    worst = np.zeros(len(CAL_LEVELS))
    chunk = max(1, min(sims, 4_000_000 // (n_base * n_new)))
    for noise in CAL_NOISES:
        for ratio in CAL_SPREADS:
            parts: list[FloatArray] = []
            for lo in range(0, sims, chunk):
                k = min(chunk, sims - lo)
                b = null_noise(rng, noise, (k, n_base), 1.0)
                x = null_noise(rng, noise, (k, n_new), ratio)
                est, se, nu = hl_studentised(b, x)
                parts.append(np.abs(est) / se)
                parts.append(nu)
            t = np.concatenate(parts[0::2])
            nu_all = np.concatenate(parts[1::2])
            for i, lvl in enumerate(CAL_LEVELS):
                q = float(np.quantile(t / stdtrit(nu_all, 0.5 + lvl / 2.0), lvl))
                worst[i] = max(worst[i], q)
    return tuple(round(float(v), 4) for v in worst)


@dataclass(frozen=True)
class RatioCI:
    """A ratio new/base with its confidence interval.

    ``ratio`` is the Hodges–Lehmann estimate (median of all pairwise ratios new_j/base_i);
    ``low``/``high`` bound it at the requested confidence; ``scale`` is "log" normally and
    "raw" when a zero forced the comparison onto differences (see ``ratio_ci``).
    """

    ratio: float
    low: float
    high: float
    scale: Literal["log", "raw"] = "log"
    method: str = "Hodges-Lehmann shift, per-side (Welch) SE, calibrated critical value"


def _to_ratio(x: float, ref: float) -> float:
    """Map a raw-scale shift x to a ratio relative to ref (>= 0; inf when ref is 0)."""
    if ref > 0:
        return max(0.0, 1.0 + x / ref)
    if x > 0:
        return math.inf
    return 1.0 if x == 0 else 0.0


def _shift_interval(
    base: FloatArray, new: FloatArray, confidence: float
) -> tuple[float, float, float, Literal["log", "raw"]]:
    """Shift estimate and interval (est, low, high) on the log scale, or raw if a zero."""
    scale: Literal["log", "raw"] = "log"
    if np.all(base > 0) and np.all(new > 0):
        b, x = np.log(base), np.log(new)
    else:
        b, x, scale = base, new, "raw"
    if min(b.size, x.size) < 2:
        est = float(np.median(x[None, :] - b[:, None]))
        return est, -math.inf, math.inf, scale
    est_a, se_a, nu_a = hl_studentised(b[None, :], x[None, :])
    est, se = float(est_a[0]), float(se_a[0])
    half = critical_value(b.size, x.size, confidence, df=float(nu_a[0])) * se
    return est, est - half, est + half, scale


def _check_nonneg(arr: FloatArray, what: str) -> None:
    """Metrics compared as ratios must be non-negative."""
    if np.any(arr < 0):
        raise ValueError(f"{what}: samples must be >= 0 to be compared as ratios")


def ratio_ci(
    base: Sequence[float],
    new: Sequence[float],
    *,
    confidence: float = 0.95,
    n_boot: int | None = None,
    seed: int = 0,
) -> RatioCI:
    """Ratio new/base with a calibrated confidence interval.

    Method: Hodges–Lehmann shift of log values (median of the pairwise log ratios), plus or
    minus a calibrated critical value (``critical_value``, at the data's Welch df) times its
    per-side standard error (``hl_studentised``), exponentiated. With a zero in either
    sample the same is done on raw differences and mapped to a ratio via the base median.
    A side with one run gives the unbounded interval (0, inf). Deterministic: ``n_boot``
    and ``seed`` are ignored, kept for callers of the former bootstrap rule.
    """
    b = _as_array(base, "base")
    x = _as_array(new, "new")
    _check_nonneg(b, "base")
    _check_nonneg(x, "new")
    del n_boot, seed
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    est, lo, hi, scale = _shift_interval(b, x, confidence)
    if scale == "log":
        return RatioCI(ratio=math.exp(est), low=math.exp(lo), high=math.exp(hi), scale="log")
    ref = float(np.median(b))
    return RatioCI(ratio=_to_ratio(est, ref), low=_to_ratio(lo, ref), high=_to_ratio(hi, ref), scale="raw")


@dataclass(frozen=True)
class Comparison:
    """Base vs new for one metric: medians, ratio new/base with its interval, and the call.

    ``significant`` is true only when the interval excludes 1 and |ratio - 1| > floor;
    ``better`` says which way (None when not significant). ``dropped_base`` and
    ``dropped_new`` count the non-finite values (NaN, inf) left out as missing.
    """

    base_median: float
    new_median: float
    n_base: int
    n_new: int
    ratio: float
    ci_low: float
    ci_high: float
    significant: bool
    better: bool | None
    direction: Direction = "higher"
    floor: float = 0.02
    confidence: float = 0.95
    dropped_base: int = 0
    dropped_new: int = 0
    #: invocations on each side when the row was judged by invocation (``invocations``: its
    #: runs came in invocations of several runs), else None (judged by run)
    invocations: tuple[int, int] | None = None

    @property
    def change_pct(self) -> float:
        """(ratio - 1) in percent."""
        return (self.ratio - 1.0) * 100.0


def judged(
    base: Sequence[float] | FloatArray,
    new: Sequence[float] | FloatArray,
    interval: tuple[float, float, float],
    *,
    direction: Direction,
    floor: float,
    confidence: float = 0.95,
    enough: bool = True,
    invocations: tuple[int, int] | None = None,
    dropped: tuple[int, int] = (0, 0),
) -> Comparison:
    """The comparison of ``base`` and ``new`` given the ratio new/base and its interval
    (``interval``: ratio, low, high): marked when the interval excludes 1, the ratio is beyond
    ``floor`` and there is ``enough`` (the caller's minimum of runs), better by ``direction``."""
    ratio, low, high = interval
    significant = bool((low > 1.0 or high < 1.0) and abs(ratio - 1.0) > floor and enough)
    better = ((ratio > 1.0) == (direction == "higher")) if significant else None
    return Comparison(
        base_median=float(np.median(base)),
        new_median=float(np.median(new)),
        n_base=len(base),
        n_new=len(new),
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        significant=significant,
        better=better,
        direction=direction,
        floor=floor,
        confidence=confidence,
        dropped_base=dropped[0],
        dropped_new=dropped[1],
        invocations=invocations,
    )


def compare_samples(
    base: Sequence[float],
    new: Sequence[float],
    *,
    direction: Direction,
    floor: float = 0.02,
    confidence: float = 0.95,
    seed: int = 0,
    n_boot: int | None = None,
) -> Comparison:
    """Compare two sets of repeats: calibrated interval plus a floor.

    Method: ``ratio_ci`` (Hodges–Lehmann ratio, per-side SE, calibrated interval); the
    difference is called significant when that interval excludes 1 AND the point estimate
    differs from 1 by more than ``floor`` (the floor applies to the estimate, not to the
    interval's edge; why is in docs/statistics.md). One run on either side is never
    significant. Non-finite values are left out as missing and counted; a side with no
    finite value is a ValueError. ``seed`` and ``n_boot`` are ignored (deterministic).
    """
    if direction not in ("higher", "lower"):
        raise ValueError("direction must be 'higher' or 'lower'")
    if floor < 0:
        raise ValueError("floor must be >= 0")
    del seed, n_boot
    b, drop_b = _finite_part(base, "base")
    x, drop_x = _finite_part(new, "new")
    ci = ratio_ci(b.tolist(), x.tolist(), confidence=confidence)
    return judged(
        b,
        x,
        (ci.ratio, ci.low, ci.high),
        direction=direction,
        floor=floor,
        confidence=confidence,
        enough=min(b.size, x.size) >= 2,
        dropped=(drop_b, drop_x),
    )


def _finite_part(samples: Sequence[float], what: str) -> tuple[FloatArray, int]:
    """The finite values of a sample and how many were not (NaN, inf: treated as missing)."""
    arr = np.asarray(samples, dtype=np.float64).ravel()
    ok = np.isfinite(arr)
    if not np.any(ok):
        raise ValueError(f"{what}: no finite samples")
    return arr[ok], int(arr.size - np.count_nonzero(ok))


def rule_calls(
    base_logs: FloatArray, new_logs: FloatArray, *, confidence: float = 0.95, floor: float = 0.02
) -> npt.NDArray[np.int64]:
    """``compare_samples``' call for S data sets at once, on log values: +1 new higher,
    -1 lower, 0 no call. ``base_logs`` is (S, m), ``new_logs`` (S, n), m, n >= 2; for
    simulations of the rule (benchmarks/stat_power.py, the rule's tests)."""
    from scipy.special import stdtrit  # heavy (0.2 s): simulations only, vectorised over S

    m, n = base_logs.shape[1], new_logs.shape[1]
    step = max(1, 4_000_000 // (m * n))  # bound the (S, m, n) differences held at once
    parts = [
        hl_studentised(base_logs[i : i + step], new_logs[i : i + step])
        for i in range(0, base_logs.shape[0], step)
    ]
    est, se, nu = (np.concatenate([p[k] for p in parts]) for k in range(3))
    crit = kappa(m, n, confidence) * stdtrit(np.maximum(nu, 1.0), 0.5 + confidence / 2.0)
    called = (np.abs(est) > crit * se) & (np.abs(np.expm1(est)) > floor)
    return np.where(called, np.sign(est), 0.0).astype(np.int64)
