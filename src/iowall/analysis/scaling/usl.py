"""Scaling analysis: efficiency against linear, the knee, and the Universal Scalability Law.

Pure functions over plain sequences (thread counts N and throughputs X, repeats allowed);
nothing here touches the store or the terminal. Methods are explained in
docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def _pair(n: Sequence[float], x: Sequence[float]) -> tuple[FloatArray, FloatArray]:
    """Validate parallel N / X sequences: same length, finite, N >= 1, X >= 0."""
    na = np.asarray(n, dtype=np.float64).ravel()
    xa = np.asarray(x, dtype=np.float64).ravel()
    if na.size == 0 or na.size != xa.size:
        raise ValueError("n and x must be non-empty and of the same length")
    if not (np.all(np.isfinite(na)) and np.all(np.isfinite(xa))):
        raise ValueError("n and x must be finite numbers")
    if np.any(na < 1):
        raise ValueError("n (threads, jobs, ...) must be >= 1")
    if np.any(xa < 0):
        raise ValueError("x (throughput) must be >= 0")
    return na, xa


def collapse(n: Sequence[float], x: Sequence[float]) -> tuple[list[float], list[float]]:
    """Distinct N in increasing order and the median X of the repeats at each."""
    na, xa = _pair(n, x)
    ns = np.unique(na)
    return [float(v) for v in ns], [float(np.median(xa[na == v])) for v in ns]


def efficiency(n: Sequence[float], x: Sequence[float]) -> list[float]:
    """Scaling efficiency X(N) / (N/N0 * X(N0)) against linear from the smallest N0.

    One value per input point, in input order; with repeats, X(N0) is the median of the
    repeats at N0. 1.0 is perfect linear scaling.
    """
    na, xa = _pair(n, x)
    n0 = float(na.min())
    x0 = float(np.median(xa[na == n0]))
    if x0 <= 0:
        raise ValueError("throughput at the smallest N must be > 0")
    return [float(v) for v in xa / (na / n0 * x0)]


def knee(n: Sequence[float], x: Sequence[float], threshold: float = 0.8) -> int | None:
    """First N (ascending) whose efficiency against linear falls below ``threshold``.

    Efficiency as in ``efficiency``, with repeats reduced to their median per N; None when
    every N stays at or above the threshold.
    """
    ns, xs = collapse(n, x)
    eff = efficiency(ns, xs)
    for nv, e in zip(ns, eff, strict=True):
        if e < threshold:
            return int(round(nv))
    return None


def weak_to_rate(
    threads: Sequence[float], files_per_thread: float | Sequence[float], wall_s: Sequence[float]
) -> list[float]:
    """Weak scaling (fixed work per thread) to a rate: threads * files_per_thread / wall_s."""
    t = np.asarray(threads, dtype=np.float64).ravel()
    w = np.asarray(wall_s, dtype=np.float64).ravel()
    f = np.broadcast_to(np.asarray(files_per_thread, dtype=np.float64), t.shape)
    if t.size != w.size:
        raise ValueError("threads and wall_s must be of the same length")
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise ValueError("wall_s must be positive and finite")
    if np.any(t < 0) or np.any(f < 0):
        raise ValueError("threads and files_per_thread must be >= 0")
    return [float(v) for v in t * f / w]


# ------------------------------------------------------------------------------ USL


def usl(n: float | FloatArray, lam: float, sigma: float, kappa: float) -> FloatArray:
    """Universal Scalability Law X(N) = lam*N / (1 + sigma*(N-1) + kappa*N*(N-1))."""
    na = np.asarray(n, dtype=np.float64)
    out: FloatArray = lam * na / (1.0 + sigma * (na - 1.0) + kappa * na * (na - 1.0))
    return out


@dataclass(frozen=True)
class UslFit:
    """A Universal Scalability Law fit with its intervals.

    ``lam`` is the throughput of one unit at no contention, ``sigma`` contention (the serial
    fraction), ``kappa`` coherency (crosstalk). ``*_ci`` are (low, high) at ``confidence``
    (Wald intervals from the Jacobian with Student's t on ``dof`` degrees of freedom;
    unbounded when dof is 0). ``n_star`` is the N of peak throughput sqrt((1-sigma)/kappa)
    (inf when kappa is 0, 1 when sigma >= 1); ``x_peak`` is X(n_star) (the asymptote
    lam/sigma when n_star is inf). ``r2`` is the coefficient of determination of X.
    """

    lam: float
    sigma: float
    kappa: float
    lam_ci: tuple[float, float]
    sigma_ci: tuple[float, float]
    kappa_ci: tuple[float, float]
    n_star: float
    x_peak: float
    r2: float
    n_obs: int
    dof: int
    confidence: float
    method: str = "nonlinear least squares on log X, Wald intervals with Student t"

    def predict(self, n: float) -> float:
        """Predicted throughput at N."""
        return float(usl(n, self.lam, self.sigma, self.kappa))


def _peak(lam: float, sigma: float, kappa: float) -> tuple[float, float]:
    """(N*, X(N*)) of the USL curve."""
    if sigma >= 1.0:
        return 1.0, lam
    if kappa <= 0.0:
        return math.inf, (lam / sigma if sigma > 0 else math.inf)
    ns = math.sqrt((1.0 - sigma) / kappa)
    if not math.isfinite(ns) or not math.isfinite(ns * ns * kappa):
        return math.inf, (lam / sigma if sigma > 0 else math.inf)
    if ns < 1.0:
        return 1.0, lam
    return ns, float(usl(ns, lam, sigma, kappa))


def _residuals(p: FloatArray, n: FloatArray, logx: FloatArray) -> FloatArray:
    """Log residuals of the USL with parameters (log lam, sigma, kappa)."""
    denom = 1.0 + p[1] * (n - 1.0) + p[2] * n * (n - 1.0)
    out: FloatArray = p[0] + np.log(n) - np.log(denom) - logx
    return out


def usl_fit(
    n: Sequence[float],
    x: Sequence[float],
    *,
    confidence: float = 0.95,
) -> UslFit:
    """Fit the Universal Scalability Law by nonlinear least squares on log throughput.

    Method: trust-region reflective least squares (scipy ``least_squares``) of log X with
    bounds sigma, kappa >= 0, started from a non-negative linear least-squares solution of
    the linearised USL; log residuals because run-to-run noise is proportional to X.
    Intervals: Wald, from the Jacobian's covariance scaled by the residual variance, with
    Student's t quantiles on n_obs - 3 degrees of freedom; sigma and kappa are clipped at
    0, and a term that moves X by under 1e-6 at every observed N is reported as exactly 0.
    Needs at least 3 distinct N; repeats per N are used as they are. Deterministic.
    """
    na, xa = _fit_input(n, x, confidence)
    logx = np.log(xa)
    p, jac = _best_fit(na, logx, _starts(na, xa))
    lam, sigma, kappa = math.exp(float(p[0])), float(p[1]), float(p[2])
    sigma, kappa = _without_dust(sigma, kappa, float(na.max()))
    n_obs = int(na.size)
    dof = n_obs - 3
    lam_ci, sigma_ci, kappa_ci = _wald_intervals(
        p, jac, _residuals(p, na, logx), sigma, kappa, dof, confidence
    )
    n_star, x_peak = _peak(lam, sigma, kappa)
    return UslFit(
        lam=lam,
        sigma=sigma,
        kappa=kappa,
        lam_ci=lam_ci,
        sigma_ci=sigma_ci,
        kappa_ci=kappa_ci,
        n_star=n_star,
        x_peak=x_peak,
        r2=_r2(xa, usl(na, lam, sigma, kappa)),
        n_obs=n_obs,
        dof=dof,
        confidence=confidence,
    )


def _fit_input(n: Sequence[float], x: Sequence[float], confidence: float) -> tuple[FloatArray, FloatArray]:
    """N and X as arrays, checked for what a USL fit needs: a confidence in (0, 1), at least 3
    distinct N (three parameters), every X > 0 (the fit is on log X)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    na, xa = _pair(n, x)
    if np.unique(na).size < 3:
        raise ValueError("a USL fit needs at least 3 distinct N")
    if np.any(xa <= 0):
        raise ValueError("a USL fit needs every throughput > 0")
    return na, xa


def _starts(na: FloatArray, xa: FloatArray) -> list[FloatArray]:
    """Starting points (log lam, sigma, kappa) for the fit: the linearised USL solved by
    non-negative least squares (scipy ``nnls``) for two guesses of lam, then no contention."""
    from scipy import optimize  # heavy: imported when used

    n0 = float(na.min())
    lam0 = float(np.median(xa[na == n0])) / n0
    # Linearised USL: N*lam/X - 1 = sigma*(N-1) + kappa*N*(N-1), solved with sigma, kappa >= 0.
    a = np.column_stack([na - 1.0, na * (na - 1.0)])
    starts: list[FloatArray] = []
    for lam_try in (lam0, float(np.max(xa / na))):
        rhs = na * lam_try / xa - 1.0
        coef, _ = optimize.nnls(a, rhs)
        starts.append(np.array([math.log(lam_try), coef[0], coef[1]]))
    starts.append(np.array([math.log(lam0), 0.0, 0.0]))
    return starts


def _best_fit(
    na: FloatArray, logx: FloatArray, starts: Sequence[FloatArray]
) -> tuple[FloatArray, FloatArray]:
    """Trust-region reflective least squares (scipy ``least_squares``) of the log residuals
    from every start, with sigma, kappa >= 0: the parameters and Jacobian of the lowest cost."""
    from scipy import optimize  # heavy: imported when used

    best: optimize.OptimizeResult | None = None
    for p0 in starts:
        res = optimize.least_squares(
            _residuals,
            p0,
            args=(na, logx),
            bounds=([-np.inf, 0.0, 0.0], [np.inf, np.inf, np.inf]),
            method="trf",
            x_scale="jac",
            xtol=1e-14,
            ftol=1e-14,
            gtol=1e-14,
            max_nfev=5000,
        )
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    return np.asarray(best.x, dtype=np.float64), np.asarray(best.jac, dtype=np.float64)


def _without_dust(sigma: float, kappa: float, n_max: float) -> tuple[float, float]:
    """sigma and kappa, each 0 when its term changes X by under 1e-6 at every observed N (up
    to ``n_max``): what is left there is solver dust, not contention."""
    if sigma * (n_max - 1.0) < 1e-6:
        sigma = 0.0
    if kappa * n_max * (n_max - 1.0) < 1e-6:
        kappa = 0.0
    return sigma, kappa


def _wald_intervals(
    p: FloatArray, jac: FloatArray, resid: FloatArray, sigma: float, kappa: float, dof: int, confidence: float
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    """Wald intervals of lam, sigma and kappa from the Jacobian's covariance scaled by the
    residual variance, with Student's t on ``dof`` (0: unbounded); sigma, kappa clipped at 0."""
    from scipy import stats as _st  # heavy (0.8 s): imported when used

    if dof <= 0:
        return (0.0, math.inf), (0.0, math.inf), (0.0, math.inf)
    s2 = float(np.sum(resid**2)) / dof
    cov = s2 * np.linalg.pinv(jac.T @ jac)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    tq = float(_st.t.ppf(0.5 + confidence / 2.0, dof))
    lam_ci = (math.exp(float(p[0] - tq * se[0])), math.exp(float(p[0] + tq * se[0])))
    sigma_ci = (max(0.0, sigma - tq * float(se[1])), sigma + tq * float(se[1]))
    kappa_ci = (max(0.0, kappa - tq * float(se[2])), kappa + tq * float(se[2]))
    return lam_ci, sigma_ci, kappa_ci


def _r2(xa: FloatArray, pred: FloatArray) -> float:
    """The coefficient of determination of X, 1 - SS_res / SS_tot; with X constant, 1 for an
    exact fit and 0 otherwise."""
    ss_tot = float(np.sum((xa - xa.mean()) ** 2))
    ss_res = float(np.sum((xa - pred) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)
