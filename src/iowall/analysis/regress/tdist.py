"""Student's t quantile for the compare rule's critical value, in plain Python: scipy's
``stdtrit`` gives the same value to 1e-12 but importing scipy.special costs 0.2 s and more
at every `iowall compare`, for a handful of scalar quantiles.

Method: the upper tail Q(t) = I_x(ν/2, 1/2) / 2 with x = ν / (ν + t²) (Abramowitz & Stegun
26.7.1, 26.5.27), the regularized incomplete beta function evaluated by its continued
fraction with the modified Lentz algorithm (Numerical Recipes §6.4); the quantile solves
Q(t) = 1 - p by safeguarded Newton steps (the density as derivative, bisection inside a
bracket). Above ν = 1e5 the Cornish–Fisher expansion in 1/ν to four terms (A&S 26.7.5),
whose next term is below 1e-20 there, is used instead.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_TINY = 1e-300
_EPS = 1e-16
#: From this many degrees of freedom the Cornish–Fisher expansion is exact to double precision.
CF_FROM = 1e5


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz); fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence at a={a}, b={b}, x={x}")


def _log_gamma_ratio(a: float) -> float:
    """log Γ(a + 1/2) - log Γ(a), without the cancellation of two large lgammas: for a >= 50
    from Stirling's series (terms to z⁻⁷, the rest below 1e-18)."""
    if a < 50.0:
        return math.lgamma(a + 0.5) - math.lgamma(a)

    def series(z: float) -> float:
        z2 = z * z
        return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z

    return a * math.log1p(0.5 / a) + 0.5 * math.log(a) - 0.5 + series(a + 0.5) - series(a)


def upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, t >= 0."""
    a, b = df / 2.0, 0.5
    den = df + t * t
    x, y = df / den, t * t / den  # x + y = 1, each without the other's cancellation
    if y == 0.0:
        return 0.5
    log_front = _log_gamma_ratio(a) - math.lgamma(b) - a * math.log1p(t * t / df) + b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        ix = math.exp(log_front) * _beta_cf(a, b, x) / a
    else:
        ix = 1.0 - math.exp(log_front) * _beta_cf(b, a, y) / b
    return 0.5 * ix


def density(t: float, df: float) -> float:
    """Student's t density at ``t``."""
    return math.exp(
        _log_gamma_ratio(df / 2.0) - 0.5 * math.log(df * math.pi) - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


def _cornish_fisher(z: float, df: float) -> float:
    """t quantile from the normal one, A&S 26.7.5 to the 1/ν⁴ term."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def t_quantile(df: float, p: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` > 0 degrees of freedom (scipy's
    ``stdtrit(df, p)``); see the module's docstring for the method."""
    if not df > 0 or not 0.0 < p < 1.0:
        raise ValueError(f"t quantile needs df > 0 and 0 < p < 1 (df={df}, p={p})")
    if p == 0.5:
        return 0.0
    # the smaller tail, exactly: 1 - p is exact for p >= 0.5 (Sterbenz), p itself below
    return _upper_quantile(df, 1.0 - p) if p > 0.5 else -_upper_quantile(df, p)


def _upper_quantile(df: float, q: float) -> float:
    """The t > 0 with P(T > t) = q, 0 < q < 1/2."""
    guess = _cornish_fisher(-NormalDist().inv_cdf(q), df)
    if df >= CF_FROM:
        return guess
    lo, hi = 0.0, max(guess, 1.0)
    while upper_tail(hi, df) > q:
        lo, hi = hi, hi * 2.0
    t = min(max(guess, lo), hi)
    for _ in range(200):
        f = upper_tail(t, df) - q
        if f > 0:
            lo = t
        else:
            hi = t
        nxt = t + f / density(t, df)
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - t) <= 4 * _EPS * nxt or hi - lo <= 4 * _EPS * hi:
            return nxt
        t = nxt
    return t
