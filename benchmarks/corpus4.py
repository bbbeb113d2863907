"""A fourth replay corpus, written apart from the detector and from corpora 1-3 (its own
generator, seed and noise code), so that what it reports is data no method was tuned on.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1, 2 or 3, each
meant to look like a piece of a kernel-CI box's throughput history:

- ``ou``: a slowly wandering level, an Ornstein-Uhlenbeck process (mean-reverting random
  walk) with a time constant of 15-40 results and a stationary amplitude (standard
  deviation) of 1-3%, under white noise of CV 1-2%;
- ``ceiling``: a turbo or thermal cap: CV 2-5% noise whose results above a ceiling 0.5-1.5
  standard deviations over the median are held at the ceiling (jitter 0.1-0.3% there), a
  distribution clipped above;
- ``warmup``: reboots every 3-6 results (random lengths and phase), the first result of each
  boot 2-6% faster or slower than the rest (one sign a series), CV 1-2%;
- ``episodes``: CV 1-2%, and at each result outside an episode a 1-3% chance of a slow
  episode of 5-10 results, 2-5% slower (a background scrub or a busy neighbour VM);
- ``garch``: volatility clustering, GARCH(1, 1) on the log scale with ARCH coefficient
  0.10-0.20, GARCH coefficient 0.60-0.75 and an unconditional CV of 1-4% (a noisy stretch
  is followed by more noise);
- ``trimodal``: three modes 3-6% apart (so 6-12% from the lowest to the highest), the middle
  one with 40-60% of the results and the others splitting the rest 30:70 to 70:30, each
  result's mode drawn afresh, CV 1-1.5% in each;
- ``cachehit``: CV 1-3%, and each result with probability 3-8% faster by 8-25% (a warm page
  cache): one-sided fast outliers only;
- ``machines``: a pool of 2-4 CI machines, each with its own offset of 0.5-3% either way;
  the series moves to another machine of the pool every 10-20 results, CV 1-2% on each.

An episode's start and end, and each move to another machine, are true changes of the series
(listed in ``changes`` beside the step): by length and size an episode is an excursion of
corpora 1-3 (4-15 results), and a move between machines is a sustained shift of the level
that a history pooling machines really shows. Decided before any run on this corpus: a
shift that lasts five results or more is never scored as noise.

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, and excursions: ``ou`` noise (time constant 20
results, amplitude 1%, white CV 1-3%), a shift of 5, 10 or 25% either way for 4-15 results,
then back (two true changes).
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("ou", "ceiling", "warmup", "episodes", "garch", "trimodal", "cachehit", "machines")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _ou(rng: np.random.Generator, tau: float, amp: float, white: float, n: int) -> np.ndarray:
    """Ornstein-Uhlenbeck level (time constant ``tau`` results, stationary standard deviation
    ``amp``), started from its stationary law, plus white noise of standard deviation
    ``white``."""
    phi = math.exp(-1.0 / tau)
    eps = rng.normal(0.0, amp * math.sqrt(1.0 - phi * phi), n)
    level = np.empty(n)
    level[0] = rng.normal(0.0, amp)
    for i in range(1, n):
        level[i] = phi * level[i - 1] + eps[i]
    return level + rng.normal(0.0, white, n)


def _garch(rng: np.random.Generator, alpha: float, beta: float, cv: float, n: int) -> np.ndarray:
    """GARCH(1, 1) with unconditional standard deviation ``cv``, after a burn-in of 100."""
    omega = cv * cv * (1.0 - alpha - beta)
    burn = 100
    z = rng.normal(0.0, 1.0, n + burn)
    var, prev = cv * cv, 0.0
    out = np.empty(n + burn)
    for i in range(n + burn):
        var = omega + alpha * prev * prev + beta * var
        prev = math.sqrt(var) * z[i]
        out[i] = prev
    return out[burn:]


def _log_noise(rng: np.random.Generator, family: str, n: int) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """Log-scale noise of one family (the module docstring), about 0 at the median, and the
    level shifts in it that are true changes (episodes, moves between machines)."""
    y, shifts = _noise(rng, family, n)
    return y, [(at, f) for at, f in shifts if 0 < at < n]


def _noise(rng: np.random.Generator, family: str, n: int) -> tuple[np.ndarray, list[tuple[int, float]]]:
    u = rng.uniform
    if family == "ou":
        return _ou(rng, u(15.0, 40.0), u(0.01, 0.03), u(0.01, 0.02), n), []
    if family == "ceiling":
        sd = u(0.02, 0.05)
        cap = u(0.5, 1.5) * sd
        y = rng.normal(0.0, sd, n)
        return np.where(y > cap, cap + rng.normal(0.0, u(0.001, 0.003), n), y), []
    if family == "warmup":
        effect = math.log1p(u(0.02, 0.06)) * (1.0 if rng.random() < 0.5 else -1.0)
        y = rng.normal(0.0, u(0.01, 0.02), n)
        i = -int(rng.integers(0, 6))  # the first boot began before the series
        while i < n:
            if i >= 0:
                y[i] += effect
            i += int(rng.integers(3, 7))
        return y, []
    if family == "episodes":
        y = rng.normal(0.0, u(0.01, 0.02), n)
        rate = u(0.01, 0.03)
        i, shifts = 0, []
        while i < n:
            if rng.random() < rate:
                length, slow = int(rng.integers(5, 11)), u(0.02, 0.05)
                y[i : i + length] -= math.log1p(slow)
                shifts += [(i, 1.0 / (1.0 + slow)), (i + length, 1.0 + slow)]
                i += length
            else:
                i += 1
        return y, shifts
    if family == "garch":
        return _garch(rng, u(0.10, 0.20), u(0.60, 0.75), u(0.01, 0.04), n), []
    if family == "trimodal":
        gap = math.log1p(u(0.03, 0.06))
        middle = u(0.4, 0.6)
        low = (1.0 - middle) * u(0.3, 0.7)
        r = rng.random(n)
        mode = np.where(r < low, -1.0, np.where(r < low + middle, 0.0, 1.0))
        return gap * mode + rng.normal(0.0, u(0.01, 0.015), n), []
    if family == "cachehit":
        y = rng.normal(0.0, u(0.01, 0.03), n)
        hit = rng.random(n) < u(0.03, 0.08)
        return np.where(hit, y + np.log1p(rng.uniform(0.08, 0.25, n)), y), []
    if family == "machines":
        pool = int(rng.integers(2, 5))
        offsets = np.log1p(rng.uniform(0.005, 0.03, pool)) * np.where(rng.random(pool) < 0.5, 1.0, -1.0)
        y = rng.normal(0.0, u(0.01, 0.02), n)
        i, machine, shifts = 0, int(rng.integers(pool)), []
        while i < n:
            length = int(rng.integers(10, 21))
            y[i : i + length] += offsets[machine]
            i += length
            moved = (machine + int(rng.integers(1, pool))) % pool  # another one of the pool
            shifts.append((i, math.exp(offsets[moved] - offsets[machine])))
            machine = moved
        return y, shifts
    raise ValueError(family)


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none; its
    changes are the step and the noise's own true changes (episodes, moves)."""
    y, changes = _log_noise(rng, family, RUNS)
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        y[at:] += math.log(f)
        changes.append((at, f))
    return Series(family, step, tuple((1000.0 * np.exp(y)).tolist()), tuple(sorted(changes)))


def excursion(rng: np.random.Generator, size: float) -> Series:
    """``ou`` noise (20 results, 1%, white CV 1-3%), shifted by ``size`` for 4-15 results,
    then back."""
    y = _ou(rng, 20.0, 0.01, float(rng.uniform(0.01, 0.03)), RUNS)
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int, per_cell: int) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size,
    from a Philox generator seeded with ``seed`` (corpora 1-3: PCG64, PCG64DXSM, SFC64)."""
    rng = np.random.Generator(np.random.Philox(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
