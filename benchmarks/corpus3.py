"""A third replay corpus, the held-out one: written after the early alarm and the batch search
were tuned on corpora 1 and 2 and before either was run on it (its own generator, seed and
noise code), so that what it reports is data neither was tuned on.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1 or 2:

- ``ar1``: serially correlated noise, AR(1) with coefficient 0.3-0.7 and a stationary CV of
  1-4% (a machine whose state carries from one result to the next);
- ``persist``: two modes 4-8% apart whose mode persists, switching with probability 0.2-0.35
  at each result (sojourns of three to five results), CV 1-2% in each;
- ``hetero``: CV 1% before a random result between 15 and 45 and 4% after, or the reverse:
  the spread changes, the level does not;
- ``skew``: a best level and slowdowns below it, log-gamma (shape 1.5-3, mean slowdown
  1-6%): results bounded above, a long slow tail;
- ``quant``: CV 1-2%, values rounded to steps of 0.5-1.5% of the level (whole-millisecond
  runtimes of a short job);
- ``periodic``: a cycle of period 5-9 results and amplitude 2-4%, CV 1% around it;
- ``bursts``: CV 1-3%, and at each result a 4% chance of a burst of 2-3 results slowed by
  10-30% (a neighbour for a night or two);
- ``mixcv``: each result's CV 1%, or 8% with probability 0.2 (a scale mixture).

Each with a change of 0, 2, 5, 10 or 25% of either sign at a result between 15 and 50, reached
in a ramp of 1-4 results (the change's first result is the ramp's first), and excursions: AR(1)
noise (coefficient 0.3, CV 1-3%), a shift of 5, 10 or 25% either way for 4-15 results, then
back (two true changes; a burst of two or three results is noise, as in corpus 2).
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("ar1", "persist", "hetero", "skew", "quant", "periodic", "bursts", "mixcv")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _ar1(rng: np.random.Generator, phi: float, cv: float, n: int) -> np.ndarray:
    """AR(1) on the log scale with stationary standard deviation ``cv``."""
    eps = rng.normal(0.0, cv * math.sqrt(1.0 - phi * phi), n)
    y = np.empty(n)
    y[0] = rng.normal(0.0, cv)
    for i in range(1, n):
        y[i] = phi * y[i - 1] + eps[i]
    return y


def _log_noise(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Log-scale noise of one family (the module docstring)."""
    u = rng.uniform
    if family == "ar1":
        return _ar1(rng, u(0.3, 0.7), u(0.01, 0.04), n)
    if family == "persist":
        gap, p = u(0.04, 0.08), u(0.2, 0.35)
        mode = (np.cumsum(rng.random(n) < p) + int(rng.integers(2))) % 2
        return math.log1p(gap) * (mode - 0.5) + rng.normal(0.0, u(0.01, 0.02), n)
    if family == "hetero":
        at = int(rng.integers(15, 46))
        lo, hi = (0.01, 0.04) if rng.random() < 0.5 else (0.04, 0.01)
        return np.concatenate([rng.normal(0.0, lo, at), rng.normal(0.0, hi, n - at)])
    if family == "skew":
        shape = u(1.5, 3.0)
        slow = rng.gamma(shape, u(0.01, 0.06) / shape, n)
        return -(slow - float(np.median(slow)))
    if family == "quant":
        step = u(0.005, 0.015)
        return np.round(rng.normal(0.0, u(0.01, 0.02), n) / step) * step
    if family == "periodic":
        period, amp = u(5.0, 9.0), u(0.02, 0.04)
        phase = u(0.0, 2.0 * math.pi)
        return amp * np.sin(2.0 * math.pi * np.arange(n) / period + phase) + rng.normal(0.0, 0.01, n)
    if family == "bursts":
        y = rng.normal(0.0, u(0.01, 0.03), n)
        i = 0
        while i < n:
            if rng.random() < 0.04:
                length = int(rng.integers(2, 4))
                y[i : i + length] -= math.log1p(u(0.10, 0.30))
                i += length
            else:
                i += 1
        return y
    if family == "mixcv":
        return rng.normal(0.0, 1.0, n) * np.where(rng.random(n) < 0.2, 0.08, 0.01)
    raise ValueError(family)


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _ramp(n: int, at: int, length: int, log_f: float) -> np.ndarray:
    """0 before ``at``, ``log_f`` from ``at + length - 1`` on, linear between."""
    out = np.zeros(n)
    for k in range(length):
        out[at + k] = log_f * (k + 1) / length
    out[at + length :] = log_f
    return out


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a change of ``step`` (random sign, place and ramp), or none."""
    y = _log_noise(rng, family, RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f, length = int(rng.integers(15, 51)), _factor(rng, step), int(rng.integers(1, 5))
        y += _ramp(RUNS, at, length, math.log(f))
        changes = ((at, f),)
    return Series(family, step, tuple((1000.0 * np.exp(y)).tolist()), changes)


def excursion(rng: np.random.Generator, size: float) -> Series:
    """AR(1) noise (0.3, CV 1-3%), shifted by ``size`` for 4-15 results, then back."""
    y = _ar1(rng, 0.3, float(rng.uniform(0.01, 0.03)), RUNS)
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int, per_cell: int) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size,
    from an SFC64 generator seeded with ``seed`` (corpora 1 and 2: PCG64 and PCG64DXSM)."""
    rng = np.random.Generator(np.random.SFC64(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
