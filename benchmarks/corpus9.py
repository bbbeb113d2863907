"""A ninth replay corpus, written apart from the detector and from corpora 1-8 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-30 by a session that never read the detector, its tuning, or its results.

Its noise follows a maintainer's description of a held-out corpus of real storage benchmark
histories: "heavy-tailed mixtures, CV 1-30%, repeats that share a run effect, outliers,
drift, two-mode noise switching often". Series of 60 results, one value a result, higher is
better, median about 1000. Noise families, all multiplicative (on the log scale), with
parameters unlike those of corpora 1-8:

- ``scalemix``: a normal scale mixture, log value c exp(t u - t^2) z with u, z standard
  normal: total CV c log-uniform in 1-30% across series (some series very noisy), t 0.4-0.9
  (kurtosis 5.7-77, a heavy tail);
- ``repeats`` (hard): results in invocations of 3-5 repeats (sizes drawn per invocation,
  random phase) sharing a Laplace invocation effect of standard deviation 4-10%, under
  within-invocation noise of CV 0.2-0.8%: the run effect dominates;
- ``strays``: logistic noise of CV 0.8-2.5%; each result with probability 1.5-6% a stall,
  throughput divided by 1 + m (1 + X), m 0.15-0.4, X Lomax of index 1.2-2.5, capped at ten
  times slower; and with probability 0.5-3% an impossibly fast cached result, 1.5-6 times
  faster (log-uniform);
- ``creep``: a drift that never stops, by 4-15% either way over the series along
  ((k + k0)^p - k0^p) / ((59 + k0)^p - k0^p) at result k, p 0.5-2.5 (slowing or
  accelerating), k0 5-30 (at most about 0.6% a result); logistic noise of CV 1-4%;
- ``numa``: two modes 3-15% apart (two NUMA nodes or hosts), the mode a Markov chain
  leaving each mode with its own probability, 0.3-1.0 (1.0 both: every other result), a
  sojourn cut at 5 results; the faster mode with CV 0.5-1.5%, the slower with CV 1.5-4%;
- ``vm`` (hard): a noisy cloud VM, variance-gamma noise (normal with a gamma variance of
  shape 0.7-2, kurtosis 4.5-7.3) of total CV 10-30%, a share of 30-70% of its variance an
  effect (itself variance-gamma) shared by invocations of 2-4 repeats;
- ``nightly`` (hard, a mixture): invocations of 3-5 repeats, each on one of two nodes 3-8%
  apart, the node changing at each invocation with probability 0.6-0.9 and never the same
  for more than two in a row; a normal invocation effect of 1-3%; within-invocation
  ``scalemix`` noise (t 0.5) of CV 0.5-1.5%; stalls with probability 1-3% a result (20-60%
  slower) and cached results with probability 0.5-1.5% (1.3-3 times faster); a linear drift
  of 2-8% either way over the series;
- ``jitter``: a two-mode spread switching often: a quiet regime of CV 0.5-2% and a noisy one
  of CV 4-15%, a Markov chain leaving quiet with probability 0.25-0.6 and noisy with
  probability 0.3-0.7 a result, either first 50/50 (a heavy-tailed mixture in time).

What counts as a change, decided before any code was written, thinking as a kernel developer
watching a nightly CI history of fio throughput: a true change is an event, something that
happened between one result and the next (a commit, a firmware or config change) and moves
the level of every result after it, until it is undone; it is what a bisection can find.
The level moving by what the box's stationary noise process does is not an event: rerunning
the same kernel shows it again, and there is nothing to bisect. So the true changes are only
the step and the excursion's two edges. The drift of ``creep`` and ``nightly`` is noise (as
in the description: under 1% a result, never holding a level to compare before and after);
mode sojourns of ``numa`` (5 results at most) and node sojourns of ``nightly`` (two
invocations, 10 results at most) are noise (a stationary mixture switching often, which
comes back); an invocation effect is noise (one boot, shared by its 2-5 repeats, not
reproduced by the next); outliers are noise; ``jitter``'s regimes change the spread only. A
new kernel needs a new boot, so in the grouped families (``repeats``, ``vm``, ``nightly``)
the step begins an invocation: the one in progress is cut there.

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, always a true change; and excursions: ``scalemix``
noise (c 1-4%, t 0.4-0.9), a shift of 5, 10 or 25% either way for 4-15 results, then back
(two true changes, at the shift and at its end). The generator is MT19937 fed by
``SeedSequence(seed, spawn_key=(9,))``, a stream none of corpora 1-8 uses; default seed 601.
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("scalemix", "repeats", "strays", "creep", "numa", "vm", "nightly", "jitter")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _scalemix(rng: np.random.Generator, cv: float, t: float, n: int) -> np.ndarray:
    """Normal noise whose scale is log-normal, of total standard deviation ``cv``."""
    return cv * np.exp(t * rng.normal(0.0, 1.0, n) - t * t) * rng.normal(0.0, 1.0, n)


def _logistic(rng: np.random.Generator, cv: float, n: int) -> np.ndarray:
    return rng.logistic(0.0, cv * math.sqrt(3.0) / math.pi, n)


def _vg(rng: np.random.Generator, sd: float, shape: float, n: int) -> np.ndarray:
    """Variance-gamma noise: normal with a gamma variance of mean one, standard deviation ``sd``."""
    return sd * np.sqrt(rng.gamma(shape, 1.0 / shape, n)) * rng.normal(0.0, 1.0, n)


def _groups(rng: np.random.Generator, n: int, lo: int, hi: int, cut: int) -> np.ndarray:
    """Invocation index of each result: invocations of ``lo``-``hi`` repeats at a random phase,
    one beginning at ``cut`` (the step's result; 0 for none)."""
    sizes = rng.integers(lo, hi + 1, n)
    ends = np.cumsum(sizes) - int(rng.integers(0, sizes[0]))
    start = np.zeros(n, dtype=bool)
    start[0] = True
    start[ends[ends < n]] = True
    start[cut] = True
    return np.cumsum(start) - 1


def _chain(rng: np.random.Generator, n: int, leave: tuple[float, float], cap: int) -> np.ndarray:
    """A two-state Markov chain leaving state s with probability ``leave[s]``, never more than
    ``cap`` in a row in one state; the first state 50/50."""
    state = np.empty(n, dtype=int)
    state[0] = int(rng.random() < 0.5)
    run = 1
    for i in range(1, n):
        prev = int(state[i - 1])
        stay = run < cap and rng.random() >= leave[prev]
        state[i] = prev if stay else 1 - prev
        run = run + 1 if stay else 1
    return state


def _outliers(rng: np.random.Generator, n: int, p_slow: float, p_fast: float) -> tuple[np.ndarray, ...]:
    """Masks of stalled and of cached results (disjoint)."""
    u = rng.random(n)
    return u < p_slow, (u >= p_slow) & (u < p_slow + p_fast)


def _repeats(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    g = _groups(rng, n, 3, 5, cut)
    effect = rng.laplace(0.0, rng.uniform(0.04, 0.10) / math.sqrt(2.0), g[-1] + 1)
    return level + effect[g] + rng.normal(0.0, rng.uniform(0.002, 0.008), n)


def _strays(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    y = level + _logistic(rng, rng.uniform(0.008, 0.025), n)
    slow, fast = _outliers(rng, n, rng.uniform(0.015, 0.06), rng.uniform(0.005, 0.03))
    m, index = rng.uniform(0.15, 0.4), rng.uniform(1.2, 2.5)
    x = np.minimum(m * (1.0 + rng.pareto(index, n)), 9.0)
    y[slow] -= np.log1p(x[slow])
    y[fast] += rng.uniform(math.log(1.5), math.log(6.0), n)[fast]
    return y


def _creep(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    total = math.log1p(rng.uniform(0.04, 0.15)) * _sign(rng)
    p, k0 = rng.uniform(0.5, 2.5), rng.uniform(5.0, 30.0)
    shape = ((np.arange(n) + k0) ** p - k0**p) / ((n - 1 + k0) ** p - k0**p)
    return level + total * shape + _logistic(rng, rng.uniform(0.01, 0.04), n)


def _numa(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    mode = _chain(rng, n, (rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0)), 5)
    gap = math.log1p(rng.uniform(0.03, 0.15))
    fast, slow = rng.uniform(0.005, 0.015), rng.uniform(0.015, 0.04)
    z = rng.normal(0.0, 1.0, n)
    return level + np.where(mode == 1, -gap + slow * z, fast * z)


def _vm(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    cv, share, shape = rng.uniform(0.10, 0.30), rng.uniform(0.3, 0.7), rng.uniform(0.7, 2.0)
    g = _groups(rng, n, 2, 4, cut)
    effect = _vg(rng, cv * math.sqrt(share), shape, int(g[-1]) + 1)
    return level + effect[g] + _vg(rng, cv * math.sqrt(1.0 - share), shape, n)


def _nightly(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    g = _groups(rng, n, 3, 5, cut)
    k = int(g[-1]) + 1
    switch = rng.uniform(0.6, 0.9)
    node = _chain(rng, k, (switch, switch), 2)
    gap = math.log1p(rng.uniform(0.03, 0.08)) * _sign(rng)
    effect = gap * node + rng.normal(0.0, rng.uniform(0.01, 0.03), k)
    drift = math.log1p(rng.uniform(0.02, 0.08)) * _sign(rng) * np.linspace(0.0, 1.0, n)
    y = level + effect[g] + drift + _scalemix(rng, rng.uniform(0.005, 0.015), 0.5, n)
    slow, fast = _outliers(rng, n, rng.uniform(0.01, 0.03), rng.uniform(0.005, 0.015))
    y[slow] -= np.log1p(rng.uniform(0.2, 0.6, n))[slow]
    y[fast] += np.log(rng.uniform(1.3, 3.0, n))[fast]
    return y


def _jitter(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    n = len(level)
    noisy = _chain(rng, n, (rng.uniform(0.25, 0.6), rng.uniform(0.3, 0.7)), n)
    cv = np.where(noisy == 1, rng.uniform(0.04, 0.15), rng.uniform(0.005, 0.02))
    return level + cv * rng.normal(0.0, 1.0, n)


def _scalemix_family(rng: np.random.Generator, level: np.ndarray, cut: int) -> np.ndarray:
    cv = math.exp(rng.uniform(math.log(0.01), math.log(0.30)))
    return level + _scalemix(rng, cv, rng.uniform(0.4, 0.9), len(level))


_MAKERS = {
    "scalemix": _scalemix_family,
    "repeats": _repeats,
    "strays": _strays,
    "creep": _creep,
    "numa": _numa,
    "vm": _vm,
    "nightly": _nightly,
    "jitter": _jitter,
}


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none; the
    families have no true changes of their own (module docstring)."""
    if family not in _MAKERS:
        raise ValueError(family)
    level = np.zeros(RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    cut = 0
    if step > 0.0:
        cut, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[cut:] = math.log(f)
        changes = ((cut, f),)
    y = _MAKERS[family](rng, level, cut)
    y = y - float(np.median(y - level))
    return Series(family, step, tuple((1000.0 * np.exp(y)).tolist()), changes)


def excursion(rng: np.random.Generator, size: float) -> Series:
    """``scalemix`` noise (c 1-4%, t 0.4-0.9), shifted by ``size`` for 4-15 results, then back."""
    cv = math.exp(rng.uniform(math.log(0.01), math.log(0.04)))
    y = _scalemix(rng, cv, rng.uniform(0.4, 0.9), RUNS)
    y -= float(np.median(y))
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 601, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    (552 series at 12), from an MT19937 generator fed by ``SeedSequence(seed, spawn_key=(9,))``."""
    rng = np.random.Generator(np.random.MT19937(np.random.SeedSequence(seed, spawn_key=(9,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
