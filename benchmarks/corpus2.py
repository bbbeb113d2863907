"""A second replay corpus, written apart from ``benchmarks/corpus.py`` (its own generator, seed
and noise code) so that a method tuned on one can be reported on the other.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in the first corpus:

- ``alt``: two modes 6-12% apart that take turns every other result (random phase), each
  with CV 1-2%;
- ``switch``: two modes 5-10% apart, the mode of each result a Markov chain that switches
  with probability 0.4-0.8 at every result (so about half the results in each, often
  switching), CV 1-2% in each;
- ``t2``: Student-t with 2 degrees of freedom, scale 1-4% (no finite variance);
- ``contam``: CV 1-3% normal, 10% of results from a Cauchy of scale 3-8% (either way),
  capped at ±60%;
- ``runfx``: results in groups of three sharing a run effect of CV 2-5% (a normal offset
  per group), 0.5-1.5% within a group: the shared offset dominates;
- ``laplace``: Laplace noise (double exponential) at a CV drawn log-uniform in 1-30%;
- ``spikes``: CV 1-3%, 8% of results slow by 10-50% and 3% fast by 5-15% (cache hits);
- ``wander``: CV 2% (t with 5 df) over a drift of 2-6% over the series, either way.

Each with a step of 0, 2, 5, 10 or 25% of either sign at a result between 15 and 50, and
excursions: t (5 df) noise at CV 1-3%, a shift of 5, 10 or 25% either way for 4-14 results,
then back (two true changes).
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("alt", "switch", "t2", "contam", "runfx", "laplace", "spikes", "wander")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _log_noise(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Log-scale noise of one family (the module docstring), about 0 at the median."""
    u = rng.uniform
    if family in ("alt", "switch"):
        gap = u(0.06, 0.12) if family == "alt" else u(0.05, 0.10)
        if family == "alt":
            mode = (np.arange(n) + int(rng.integers(2))) % 2
        else:
            flips = rng.random(n) < u(0.4, 0.8)
            mode = (np.cumsum(flips) + int(rng.integers(2))) % 2
        return math.log1p(gap) * (mode - 0.5) + rng.normal(0.0, u(0.01, 0.02), n)
    if family == "t2":
        return u(0.01, 0.04) * rng.standard_t(2.0, n)
    if family == "contam":
        base = rng.normal(0.0, u(0.01, 0.03), n)
        wild = np.clip(u(0.03, 0.08) * rng.standard_cauchy(n), -0.47, 0.47)
        return np.where(rng.random(n) < 0.10, wild, base)
    if family == "runfx":
        groups = -(-n // 3)
        shared = np.repeat(rng.normal(0.0, u(0.02, 0.05), groups), 3)[:n]
        return shared + rng.normal(0.0, u(0.005, 0.015), n)
    if family == "laplace":
        cv = math.exp(u(math.log(0.01), math.log(0.30)))
        return rng.laplace(0.0, cv / math.sqrt(2.0), n)
    if family == "spikes":
        y = rng.normal(0.0, u(0.01, 0.03), n)
        r = rng.random(n)
        y = np.where(r < 0.08, y - np.log1p(rng.uniform(0.10, 0.50, n)), y)
        return np.where(r > 0.97, y + np.log1p(rng.uniform(0.05, 0.15, n)), y)
    if family == "wander":
        end = u(0.02, 0.06) * (1.0 if rng.random() < 0.5 else -1.0)
        return np.linspace(0.0, math.log1p(end), n) + 0.02 * rng.standard_t(5.0, n) / math.sqrt(5.0 / 3.0)
    raise ValueError(family)


def _factor(rng: np.random.Generator, size: float) -> float:
    up = rng.random() < 0.5
    return 1.0 + size if up else 1.0 / (1.0 + size)


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none."""
    y = _log_noise(rng, family, RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        y[at:] += math.log(f)
        changes = ((at, f),)
    return Series(family, step, tuple((1000.0 * np.exp(y)).tolist()), changes)


def excursion(rng: np.random.Generator, size: float) -> Series:
    """t (5 df) noise at CV 1-3%, shifted by ``size`` for 4-14 results, then back."""
    y = rng.uniform(0.01, 0.03) * rng.standard_t(5.0, RUNS) / math.sqrt(5.0 / 3.0)
    length = int(rng.integers(4, 15))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int, per_cell: int) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size,
    from a PCG64DXSM generator seeded with ``seed`` (the first corpus uses PCG64)."""
    rng = np.random.Generator(np.random.PCG64DXSM(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
