"""A seventh replay corpus, written apart from the detector and from corpora 1-6 (its own noise
code, generator and seed), so that what it reports is data no method was tuned on. Written
2026-11-29 by a session that never read the detector, its tuning, or its results.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1-6, each meant to
look like a piece of a CI box's fio throughput history:

- ``ramp``: a level that moves linearly by 3-10% either way over 4-12 results, beginning at
  a result between 0 and 55 (it may run off the end), and stays flat before and after (a
  setting rolled out over a few days); white noise of CV 1-2%;
- ``overshoot``: a level that moves to a new one 2-6% away either way as the step response
  of an underdamped second-order system (damped period 16-30 results, damping ratio
  0.2-0.5: it overshoots by 16-53% of the move, rings and settles; from 10% to 90% of the
  move takes 3 results or more), beginning at a result between 0 and 50; white CV 1-2%;
- ``staircase``: a level that creeps in 4-12 tiny steps of 0.3-0.8% each, all one way (either
  way), 2-4 results apart, the first at a result between 0 and 40 (fragmentation or a log
  that grows in chunks; it may run off the end); white noise of CV 1-2%;
- ``harmonic``: the result is the aggregate of 2-6 parallel jobs of equal size, the
  harmonic mean of their rates, each job's rate log-normal of CV 3-10%; white CV 0.3-0.8%;
- ``fastpath``: each result either hits a fast path (4-10% faster) or misses it, the hit
  probability drifting linearly on the logit scale from p0 to p1 (each 0.1-0.9) over the
  series; CV 1-2% in each mode;
- ``poisson``: low-count IOPS: the value is an integer count of I/Os, Poisson with mean
  25-400 (CV 5-20%) times a jitter of CV 0.3-1%, over that mean (so values on a grid of
  1/mean); a count of 0 is taken as 1;
- ``stale``: white noise of CV 1-3%, and each result after the first, with probability
  10-30%, an exact repeat of the previous one (a stale cache in the harness; repeats can
  chain); the repeat is of the noise, so a repeat on a step's first result shows the new
  level;
- ``weekly``: a maintenance window: every 7th result (random phase) 5-15% slower (drawn per
  window); white noise of CV 1-2%.

What counts as a change, decided before any code was written: a sudden shift of the level
that lasts five results or more is a true change and is listed in ``changes`` as (index of
the first result after it, factor new/old level); gradual movement (anything taking 3 results
or more to happen), transients and spread changes are noise. A sudden shift of less than 1%
(half the smallest step) is below resolution and is noise. So ``ramp`` (4-12 results) and
``overshoot`` (10-90% in 3 results or more) are gradual; each ``staircase`` step is under 1%
and the next follows within 2-4 results, so the stair as a whole is gradual; ``fastpath``'s
drift of the hit probability is gradual; a ``weekly`` window (one result) is a transient;
``harmonic``, ``poisson`` and ``stale`` do not move the level. No family has true changes of
its own, so a series' only true changes are its step (and an excursion's two ends). Were a
change to fall on the same result as the step, it would be merged (factors multiplied).

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, and excursions: ``ramp`` noise (3-6% either way over
4-12 results, white CV 1-3%), a shift of 5, 10 or 25% either way for 4-15 results, then back
(two true changes by construction, as in corpora 1-6, even for 4 results). The generator is
PCG64DXSM, which corpora 1-6 do not use.
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("ramp", "overshoot", "staircase", "harmonic", "fastpath", "poisson", "stale", "weekly")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _ramp(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    """A log level moving linearly by ``lo``-``hi`` either way over 4-12 results, flat around."""
    size = math.log1p(rng.uniform(lo, hi)) * _sign(rng)
    start, length = rng.uniform(0.0, 55.0), rng.uniform(4.0, 12.0)
    return size * np.clip((np.arange(n) - start) / length, 0.0, 1.0)


def _noise(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Log-scale noise of one family (the module docstring), centred on its median."""
    u = rng.uniform
    k = np.arange(n, dtype=float)
    white = rng.normal(0.0, 1.0, n)
    if family == "ramp":
        y = _ramp(rng, 0.03, 0.10, n) + u(0.01, 0.02) * white
    elif family == "overshoot":
        size = math.log1p(u(0.02, 0.06)) * _sign(rng)
        wd, z = 2.0 * math.pi / u(16.0, 30.0), u(0.2, 0.5)
        r = math.sqrt(1.0 - z * z)
        t = np.maximum(k - u(0.0, 50.0), 0.0)
        resp = 1.0 - np.exp(-z * wd / r * t) * (np.cos(wd * t) + z / r * np.sin(wd * t))
        y = size * resp + u(0.01, 0.02) * white
    elif family == "staircase":
        steps, sign = int(rng.integers(4, 13)), _sign(rng)
        at = int(rng.integers(0, 41)) + np.cumsum(np.r_[0, rng.integers(2, 5, steps - 1)])
        y = u(0.01, 0.02) * white
        for a, s in zip(at, rng.uniform(0.003, 0.008, steps), strict=True):
            y[a:] += sign * math.log1p(s)
    elif family == "harmonic":
        jobs = int(rng.integers(2, 7))
        rates = np.exp(rng.normal(0.0, u(0.03, 0.10), (n, jobs)))
        y = np.log(jobs / (1.0 / rates).sum(axis=1)) + u(0.003, 0.008) * white
    elif family == "fastpath":
        p0, p1 = u(0.1, 0.9), u(0.1, 0.9)
        logit = np.linspace(math.log(p0 / (1.0 - p0)), math.log(p1 / (1.0 - p1)), n)
        hit = rng.random(n) < 1.0 / (1.0 + np.exp(-logit))
        y = np.where(hit, math.log1p(u(0.04, 0.10)), 0.0) + u(0.01, 0.02) * white
    elif family == "poisson":
        mean = u(25.0, 400.0)
        counts = rng.poisson(mean * np.exp(u(0.003, 0.01) * white))
        y = np.log(np.maximum(counts, 1) / mean)
    elif family == "stale":
        y = u(0.01, 0.03) * white
        repeat = rng.random(n) < u(0.1, 0.3)
        for i in range(1, n):
            if repeat[i]:
                y[i] = y[i - 1]
    elif family == "weekly":
        phase = int(rng.integers(0, 7))
        y = u(0.01, 0.02) * white
        y[phase::7] -= np.log1p(rng.uniform(0.05, 0.15, len(y[phase::7])))
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
    """``ramp`` noise (3-6% over 4-12 results, white CV 1-3%), shifted by ``size`` for 4-15
    results, then back."""
    y = _ramp(rng, 0.03, 0.06, RUNS) + rng.normal(0.0, float(rng.uniform(0.01, 0.03)), RUNS)
    y -= float(np.median(y))
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 401, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    (552 series at 12), from a PCG64DXSM generator seeded with ``seed``."""
    rng = np.random.Generator(np.random.PCG64DXSM(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
