"""Pure: the predictive distribution of the next result given a baseline of log values, for
the early test (``early.py``): what the noise may look like, estimated from the baseline.

Method: a location-scale Student-t whose degrees of freedom come from the data, by Bayesian
model averaging over a grid of df (1, 2, 3, 5, 10, normal) with each model's scale its
maximum-likelihood value (iteratively reweighted, location the median) and its weight the
profile likelihood (flat prior): heavy-tailed baselines (t with 2 df, Cauchy contamination)
get heavy predictive tails, normal ones keep the normal's. Beside it, when the baseline
splits into two modes (the 2-means split of the sorted values, each side at least
``MIN_MODE`` of the results, medians ``MODES_APART`` pooled within-mode scales apart) the
mixture of the two modes' t's with the modes' shares as weights; each tail is the larger of
the two models' (a two-mode history's predictive is a mixture, so a result in the minor mode
is not far out). Repeats that share a run effect make neighbouring results correlated: the
residuals' lag 1-3 correlations (Gnanadesikan-Kettenring with Shamos' scale, less their
sampling allowance) set the effective number of independent results n / (1 + 2 Σ ρ_k),
which sets the estimate's share of the predictive spread and the normal model's df, and the
lag-1 one the share of neighbouring pairs the early test counts as one result (``joint``),
or, when larger, the share of far-out results followed by another on the same side beyond
chance (``clustered``: slow results that come in bursts). A baseline where one stored value
piles up (``on_grain``: a harness that stores 1.1 GiB/s, whole microseconds or a histogram's
bin, on a grain coarser than the noise) adds a model of counts (``Counts``): a result one
step away is then not far out merely because the continuous models have no mass between the
steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .tdist import upper_tail

#: The degrees of freedom averaged over (``math.inf``: the normal, with n_eff - 1 df).
DFS = (1.0, 2.0, 3.0, 5.0, 10.0, math.inf)
#: Lags whose correlation sets the effective sample size (repeats in groups of up to 4).
LAGS = 3
#: Fewest results in each of two modes (share of the baseline, and at least 3).
MIN_MODE = 0.15
#: Two modes are taken when their medians are this many within-mode scales apart (an equal
#: two-normal mixture is bimodal from 2; a unimodal sample split in two gives 2-3).
MODES_APART = 3.0
#: A result is far out when it lies this many Shamos scales from the noise's median (a
#: normal's 0.27%): the results whose clustering ``clustered`` reads.
FAR_OUT = 3.0

FloatArray = npt.NDArray[np.float64]


def shamos(logs: Sequence[float] | FloatArray) -> float:
    """Shamos' scale: 1.0483 × the median of |x_i - x_j| over pairs (consistent for the normal
    standard deviation, 86% efficient, breakdown 29%)."""
    a = np.asarray(logs, dtype=np.float64)
    i, j = np.triu_indices(a.size, 1)
    return 1.0483 * float(np.median(np.abs(a[i] - a[j]))) if i.size else 0.0


def _abs_t(z: float, df: int) -> float:
    """P(|T| <= z) for Student's t with integer ``df`` (A&S 26.7.3 and 26.7.4: finite series
    in θ = atan(z/√df))."""
    th = math.atan(z / math.sqrt(df))
    c2, s = math.cos(th) ** 2, math.sin(th)
    term, total = 1.0, 1.0
    if df % 2 == 0:
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    if df == 1:
        return 2.0 * th / math.pi
    for j in range(1, (df - 1) // 2):
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2.0 / math.pi * (th + s * math.cos(th) * total)


def _t_cdf(z: float, df: float) -> float:
    """P(T <= z): the finite series for integer df while |z| < 8 (fast), else the continued
    fraction (``tdist.upper_tail``: accurate far in the tail); the normal for infinite df."""
    if math.isinf(df):
        return 0.5 * math.erfc(-z / math.sqrt(2.0))
    if abs(z) < 8.0 and df == int(df) and df < 200:
        a = _abs_t(abs(z), int(df))
        return 0.5 + a / 2.0 if z >= 0 else 0.5 - a / 2.0
    return upper_tail(-z, df) if z < 0 else 1.0 - upper_tail(z, df)


def _fit_t(r: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per df in ``DFS``: the maximum-likelihood scale of residuals ``r`` (location fixed) and
    the posterior weight of that df (profile likelihood, flat prior)."""
    r2 = np.maximum(r * r, 1e-24)
    nu = np.asarray([d if math.isfinite(d) else 1e12 for d in DFS])
    s2 = np.full(nu.size, float(np.mean(r2)))
    for _ in range(25):  # EM for the t scale: weights (ν+1)/(ν + r²/σ²)
        w = (nu[:, None] + 1.0) / (nu[:, None] + r2[None, :] / s2[:, None])
        s2 = np.maximum(np.mean(w * r2[None, :], axis=1), 1e-24)
    ll = np.asarray(
        [
            r.size * (math.lgamma((v + 1) / 2) - math.lgamma(v / 2) - 0.5 * math.log(v * math.pi))
            if math.isfinite(d)
            else -0.5 * r.size * math.log(2 * math.pi)
            for v, d in zip(nu, DFS, strict=True)
        ]
    )
    ll = (
        ll
        - 0.5 * r.size * np.log(s2)
        - np.sum(
            np.where(
                np.isfinite(np.asarray(DFS))[:, None],
                (nu[:, None] + 1) / 2 * np.log1p(r2[None, :] / (nu[:, None] * s2[:, None])),
                r2[None, :] / (2 * s2[:, None]),
            ),
            axis=1,
        )
    )
    post = np.exp(ll - ll.max())
    return np.sqrt(s2), post / post.sum()


def lag_corr(r: FloatArray, lag: int) -> float:
    """Robust lag-``lag`` correlation of ``r`` (Gnanadesikan-Kettenring: from Shamos' scales
    of the sums and differences of the pairs)."""
    if r.size - lag < 4:
        return 0.0
    a, b = r[lag:], r[:-lag]
    plus, minus = shamos(a + b) ** 2, shamos(a - b) ** 2
    return (plus - minus) / (plus + minus) if plus + minus > 0 else 0.0


def dependence(r: FloatArray) -> tuple[float, float]:
    """How far neighbouring results share their noise: the lag-1 to ``LAGS`` correlations,
    each less its one-sided 95% sampling allowance (1.645/√pairs: only what the data show
    beyond chance, at least 0); returns the lag-1 one and the effective sample size
    n / (1 + 2 Σ ρ_k) (the variance inflation of a mean under that autocorrelation)."""
    rho = [max(0.0, lag_corr(r, k) - 1.645 / math.sqrt(max(r.size - k, 1))) for k in range(1, LAGS + 1)]
    return rho[0], r.size / (1.0 + 2.0 * sum(rho))


def clustered(r: FloatArray) -> float:
    """How far results far out (``FAR_OUT``) come in runs: of the far-out results on one side
    that have a successor, the share whose successor is far out on the same side, beyond the
    chance share p of that side, as (share - p) / (1 - p), less its one-sided 95% binomial
    allowance; the larger side's, at least 0. A neighbour slowing two or three results in a
    row shows here while a lag correlation, read from the whole body of the noise, stays
    within chance; it is the share of neighbouring pairs that move together in the tail, where
    the early test's windows look."""
    if r.size < 4:
        return 0.0
    scale = shamos(r)
    if scale <= 0.0:
        return 0.0
    d = (r - float(np.median(r))) / scale
    best = 0.0
    for far in (d <= -FAR_OUT, d >= FAR_OUT):
        first = int(far[:-1].sum())
        if first < 2:
            continue
        p = float(far.mean())
        both = int((far[:-1] & far[1:]).sum())
        excess = (both / first - p) / (1.0 - p) - 1.645 * math.sqrt(p * (1.0 - p) / first) / (1.0 - p)
        best = max(best, excess)
    return min(best, 1.0)


def _two_modes(b: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """The two modes of ``b`` (sorted log values) when it has them (module docstring)."""
    n = b.size
    least = max(3, math.ceil(MIN_MODE * n))
    if n < 2 * least:
        return None
    cs, cs2 = np.cumsum(b), np.cumsum(b * b)
    j = np.arange(least, n - least + 1)
    left = cs2[j - 1] - cs[j - 1] ** 2 / j
    right = (cs2[-1] - cs2[j - 1]) - (cs[-1] - cs[j - 1]) ** 2 / (n - j)
    cut = int(j[np.argmin(left + right)])
    lo, hi = b[:cut], b[cut:]
    within = shamos(np.concatenate((lo - np.median(lo), hi - np.median(hi))))
    if within <= 0 or (np.median(hi) - np.median(lo)) / within < MODES_APART:
        return None
    return lo, hi


def window_tail(k: int, f: float, shared: float = 0.0) -> float:
    """P(a window's order statistic <= q) given F = P(one result <= q): one result; both of
    two; the newest and at least one of the two before it (2F² - F³). A share ``shared`` of
    neighbouring pairs moving together counts as one result: shared·F + (1 - shared)·(the
    independent tail), which bounds the joint tail whatever the pairs' correlation."""
    if k == 1:
        return f
    return shared * f + (1.0 - shared) * (f * f if k == 2 else 2.0 * f * f - f**3)


@dataclass(frozen=True)
class Model:
    """One model of a result's deviation from the baseline's median: components (weight,
    centre, scale, df) of a mixture of t's, and the share of neighbours moving together."""

    comps: tuple[tuple[float, float, float, float], ...]
    shared: float

    def cdf(self, d: float) -> float:
        return sum(w * _t_cdf((d - c) / s, df) for w, c, s, df in self.comps)

    def sf(self, d: float) -> float:
        return sum(w * _t_cdf((c - d) / s, df) for w, c, s, df in self.comps)

    def tail(self, d: float, k: int, upper: bool) -> float:
        return window_tail(k, self.sf(d) if upper else self.cdf(d), self.shared)

    @property
    def spread(self) -> float:
        return max(s for _, _, s, _ in self.comps)


#: Two log values closer than this are one value on a grain (the same stored figure).
SAME = 1e-12


@dataclass(frozen=True)
class Counts:
    """The predictive of a result on a grain, from counts: with c of the n baseline results
    at or below a value, P(one result <= it) is Beta(c + 1/2, n - c + 1/2) after Jeffreys'
    prior, and a window's tail the posterior mean of its order statistic's (F, F², 2F² - F³:
    the beta-binomial predictive), so a value the baseline never showed is unusual by how
    many results did not show it, not by a scale the grain hides."""

    devs: tuple[float, ...]
    grain: float

    def tail(self, d: float, k: int, upper: bool) -> float:
        n = len(self.devs)
        c = sum((v >= d - SAME) if upper else (v <= d + SAME) for v in self.devs)
        a, t = c + 0.5, n + 1.0
        f1, f2 = a / t, a * (a + 1.0) / (t * (t + 1.0))
        if k == 1:
            return f1
        return f2 if k == 2 else 2.0 * f2 - f2 * (a + 2.0) / (t + 2.0)

    @property
    def spread(self) -> float:
        return self.grain


#: A value repeated exactly by this share of the baseline (and at least 3 results) is a pile
#: no continuous noise makes, even rounded to a grain as wide as its standard deviation (38%):
#: a figure stored on a grain coarser than its noise, or clipped at a bound.
PILE = 0.4


def on_grain(b: FloatArray) -> float:
    """The grain of baseline ``b`` (log values) when its values are stored too coarsely for a
    continuous model: one value holds ``PILE`` of them. The smallest step between distinct
    values (1 when all are one value), or 0 for none. Exact repeats alone (a stale result
    stored again) are not a grain; a fine grain piles nowhere."""
    u, n = np.unique(b, return_counts=True)
    if int(n.max(initial=0)) < max(3, PILE * b.size):
        return 0.0
    return float(np.min(np.diff(u))) if u.size > 1 else 1.0


def step_of(b: FloatArray, around: FloatArray) -> float:
    """The grain of baseline ``b`` (log values) when its values pile (``on_grain``): the
    smallest step between them, or, when ``b`` is one value, the step to the nearest other
    value of ``around`` (the history's, the window's included); 0 off a grain or for none."""
    g = on_grain(b)
    if g <= 0.0 or np.unique(b).size > 1:
        return g
    d = np.abs(np.asarray(around, dtype=np.float64) - float(b[0]))
    d = d[d > SAME]
    return float(d.min()) if d.size else 0.0


@dataclass(frozen=True)
class Predictive:
    """The predictive distribution of the next results: the baseline's median, and models of
    the deviation from it; a window's tail is the largest over the models'."""

    centre: float
    models: tuple[Model | Counts, ...]

    def tail(self, q: float, k: int, upper: bool = False) -> float:
        """P(the window's statistic <= q), or >= q with ``upper``: the largest over the models."""
        d = q - self.centre
        return max(m.tail(d, k, upper) for m in self.models)

    def quantile(self, p: float, k: int, upper: bool = False) -> float:
        """The q with ``tail(q, k, upper) = p``, by bisection; unbounded (infinite) when no q
        has a tail that small (counts of a short baseline on a grain)."""

        def g(q: float) -> float:  # increasing in q
            return -self.tail(q, k, True) if upper else self.tail(q, k)

        t, c = (-p if upper else p), self.centre
        step = max(m.spread for m in self.models)
        lo, hi = c - step, c + step
        for _ in range(60):
            if g(lo) < t:
                break
            lo = c - 2.0 * (c - lo)
        for _ in range(60):
            if g(hi) >= t:
                break
            hi = c + 2.0 * (hi - c)
        if g(lo) >= t or g(hi) < t:
            return -math.inf if g(lo) >= t else math.inf
        for _ in range(24):
            mid = (lo + hi) / 2.0
            lo, hi = (mid, hi) if g(mid) < t else (lo, mid)
        return (lo + hi) / 2.0


def _model(centres: list[float], shares: list[float], resid: FloatArray, n_base: int) -> Model:
    """A mixture of t's at ``centres`` fitted to ``resid`` (deviations from each one's centre,
    in time order): df averaged over ``DFS``, effective sizes from the dependence."""
    shared, n_eff = dependence(resid)
    shared = max(shared, clustered(resid))
    vif = resid.size / n_eff
    scales, post = _fit_t(resid)
    out = []
    for c, w in zip(centres, shares, strict=True):
        grow = math.sqrt(1.0 + 1.0 / max(n_base * w / vif, 1.0))
        for d, s, pi in zip(DFS, scales, post, strict=True):
            if pi < 1e-4:
                continue
            df = float(max(math.floor(n_eff - 1.0), 1)) if math.isinf(d) else d
            sc = float(s) * (math.sqrt(resid.size / max(resid.size - 1, 1)) if math.isinf(d) else 1.0)
            out.append((w * float(pi), c, sc * grow, df))
    return Model(tuple(out), shared)


def predictive(base: FloatArray, noise: FloatArray | None = None) -> Predictive:
    """The predictive distribution of the next result after ``base`` (log values): centred
    on its median, the noise's shape from ``noise`` (deviations of the history's results
    from their own segment's median, in time order; default the baseline's own): the
    module docstring."""
    b = np.asarray(base, dtype=np.float64)
    m = float(np.median(b))
    r = np.asarray(noise, dtype=np.float64) if noise is not None and len(noise) >= b.size else b - m
    r = r - float(np.median(r))
    models: list[Model | Counts] = [_model([0.0], [1.0], r, b.size)]
    modes = _two_modes(np.sort(r))
    if modes is not None:
        cut, (c0, c1) = modes[1][0], (float(np.median(modes[0])), float(np.median(modes[1])))
        resid = np.where(r < cut, r - c0, r - c1)
        w0 = modes[0].size / r.size
        models.append(_model([c0, c1], [w0, 1.0 - w0], resid, b.size))
    grain = on_grain(b)
    if grain > 0.0:
        models.append(Counts(tuple((b - m).tolist()), grain))
    return Predictive(m, tuple(models))
