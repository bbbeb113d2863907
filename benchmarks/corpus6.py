"""A sixth replay corpus, written apart from the detector and from corpora 1-5 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-29 by a session that never read the detector, its tuning, or its results.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1-5, each meant to
look like a piece of a CI box's fio throughput history:

- ``spline``: a level that follows a smooth random curve, a uniform Catmull-Rom spline
  through knots 10-18 results apart (random phase) whose values are normal of standard
  deviation 1-2.5%, under white noise of CV 1-2%;
- ``sigmoid``: a slow logistic transition of the level by 3-8% either way, centred at a
  result between 0 and 59 and taking 10-25 results to go from 10% to 90% of the way (a
  kernel or firmware change that settles in), white noise of CV 1-2%;
- ``thermal``: throttling: the box is busy (load 1) or idle (load 0) in stretches, a Markov
  chain with mean busy stretches of 5-12 results and idle ones of 8-20 (busy at the start
  with probability 0.4); its heat (starting equal to the load) follows the load with a time
  constant of 5-10 results (so no result moves more than a fifth of the way) and the level
  sags by 3-6% times the heat; white noise of CV 1-2%;
- ``fgn``: long-memory noise, fractional Gaussian noise of Hurst index 0.75-0.9 (correlation
  decaying as a power of the lag) at a CV of 1-3%, plus white noise of CV 0.3-0.8%;
- ``blend``: a page-cache hit ratio: each result's share h of I/O served from the cache is
  Beta with mean 0.2-0.7 and concentration 10-60, the cache 1.3-2.5 times faster than the
  disk, throughput 1 / (h / ratio + 1 - h); white noise of CV 0.5-1%;
- ``best``: the harness reports the best of 3-5 repeats, each with its own noise of CV
  2-6%, on top of an offset of CV 0.5-1% shared by the repeats of a result;
- ``regimes``: the CV switches between a quiet regime (0.5-1.5%) and a noisy one (3-8%), a
  Markov chain switching with probability 0.03-0.08 a result (long stretches of each), the
  first regime either one 50/50;
- ``debt``: writeback debt: a run that got ahead by buffering leaves dirty pages the next
  run must flush, moving-average noise y[k] = e[k] - theta e[k-1], theta 0.3-0.8 (so
  neighbouring results anticorrelated), total CV 1-3%.

What counts as a change, decided before any code was written: a sudden shift of the level
that lasts five results or more is a true change and is listed in ``changes`` as (index of
the first result after it, factor new/old level); gradual movement, transients and spread
changes are noise. None of these families has true changes of its own: the ``spline``
curve, the ``sigmoid`` transition (10-25 results from 10% to 90%), the ``thermal`` sag and
recovery (time constant five results or more) and ``fgn``'s wandering are gradual; the
``regimes`` switch changes only the spread; ``blend``, ``best`` and ``debt`` do not move the
level. So a series' only true changes are its step (and an excursion's two ends). Were a
change to fall on the same result as the step, it would be merged (factors multiplied).

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, and excursions: ``spline`` noise (knots 15 results
apart of standard deviation 1%, white CV 1-3%), a shift of 5, 10 or 25% either way for 4-15
results, then back (two true changes). The generator is MT19937, which corpora 1-5 do not use.
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("spline", "sigmoid", "thermal", "fgn", "blend", "best", "regimes", "debt")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _spline(rng: np.random.Generator, gap: float, sd: float, n: int) -> np.ndarray:
    """A uniform Catmull-Rom spline through knots ``gap`` results apart (random phase) of
    normal values with standard deviation ``sd``, at results 0 to n - 1."""
    t = (np.arange(n) + rng.uniform(0.0, gap)) / gap
    knots = rng.normal(0.0, sd, int(t[-1]) + 4)
    i = t.astype(int) + 1
    u = t - np.floor(t)
    p0, p1, p2, p3 = knots[i - 1], knots[i], knots[i + 1], knots[i + 2]
    a = -p0 + 3.0 * p1 - 3.0 * p2 + p3
    b = 2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3
    return 0.5 * (2.0 * p1 + (p2 - p0) * u + b * u**2 + a * u**3)


def _fgn(rng: np.random.Generator, hurst: float, sd: float, n: int) -> np.ndarray:
    """Fractional Gaussian noise of Hurst index ``hurst`` and standard deviation ``sd``, by
    the Cholesky factor of its covariance."""
    k = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
    h2 = 2.0 * hurst
    cov = 0.5 * (np.abs(k + 1.0) ** h2 - 2.0 * k**h2 + np.abs(k - 1.0) ** h2)
    return sd * (np.linalg.cholesky(cov) @ rng.normal(0.0, 1.0, n))


def _noise(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Log-scale noise of one family (the module docstring), centred on its median."""
    u = rng.uniform
    white = rng.normal(0.0, 1.0, n)
    if family == "spline":
        y = _spline(rng, u(10.0, 18.0), u(0.01, 0.025), n) + u(0.01, 0.02) * white
    elif family == "sigmoid":
        size = math.log1p(u(0.03, 0.08)) * (1.0 if rng.random() < 0.5 else -1.0)
        width = u(10.0, 25.0) / (2.0 * math.log(9.0))  # 10%-90% over 10-25 results
        y = size / (1.0 + np.exp(-(np.arange(n) - u(0.0, n - 1.0)) / width))
        y += u(0.01, 0.02) * white
    elif family == "thermal":
        stay = (1.0 - 1.0 / u(8.0, 20.0), 1.0 - 1.0 / u(5.0, 12.0))  # idle, busy
        keep = math.exp(-1.0 / u(5.0, 10.0))
        load = int(rng.random() < 0.4)
        heat = float(load)
        y = np.empty(n)
        for k in range(n):
            if rng.random() > stay[load]:
                load = 1 - load
            heat = keep * heat + (1.0 - keep) * load
            y[k] = heat
        y = -math.log1p(u(0.03, 0.06)) * y + u(0.01, 0.02) * white
    elif family == "fgn":
        y = _fgn(rng, u(0.75, 0.9), u(0.01, 0.03), n) + u(0.003, 0.008) * white
    elif family == "blend":
        mean, conc, ratio = u(0.2, 0.7), u(10.0, 60.0), u(1.3, 2.5)
        h = rng.beta(mean * conc, (1.0 - mean) * conc, n)
        y = -np.log(h / ratio + 1.0 - h) + u(0.005, 0.01) * white
    elif family == "best":
        repeats, cv = int(rng.integers(3, 6)), u(0.02, 0.06)
        y = rng.normal(0.0, cv, (n, repeats)).max(axis=1) + u(0.005, 0.01) * white
    elif family == "regimes":
        quiet, noisy, switch = u(0.005, 0.015), u(0.03, 0.08), u(0.03, 0.08)
        state = rng.random() < 0.5
        cv = np.empty(n)
        for k in range(n):
            cv[k] = noisy if state else quiet
            state = state != (rng.random() < switch)
        y = cv * white
    elif family == "debt":
        theta = u(0.3, 0.8)
        e = rng.normal(0.0, u(0.01, 0.03) / math.sqrt(1.0 + theta**2), n + 1)
        y = e[1:] - theta * e[:-1]
    else:
        raise ValueError(family)
    return y - float(np.median(y))


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none; the
    step is its only true change (no family has changes of its own)."""
    level = np.zeros(RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[at:] = math.log(f)
        changes = ((at, f),)
    values = 1000.0 * np.exp(_noise(rng, family, RUNS) + level)
    return Series(family, step, tuple(values.tolist()), changes)


def excursion(rng: np.random.Generator, size: float) -> Series:
    """``spline`` noise (knots 15 results apart, SD 1%, white CV 1-3%), shifted by ``size``
    for 4-15 results, then back."""
    y = _spline(rng, 15.0, 0.01, RUNS) + rng.normal(0.0, float(rng.uniform(0.01, 0.03)), RUNS)
    y -= float(np.median(y))
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 307, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    (552 series at 12), from an MT19937 generator seeded with ``seed``."""
    rng = np.random.Generator(np.random.MT19937(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
