"""A fifth replay corpus, written apart from the detector and from corpora 1-4 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-29 by a session that never read the detector, its tuning, or its results.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1-4, each meant to
look like a piece of a CI box's fio throughput history:

- ``walk``: a level that random-walks (integrated noise, not mean-reverting): a normal step
  of standard deviation 0.3-0.8% at each result, under white noise of CV 0.8-2%;
- ``cycle``: a slow cycle of a shared host (a week of CI runs), period 15-45 results,
  amplitude 1.5-4%, with a second harmonic of 0-60% of the first (a lopsided busy/quiet
  shape) at a random phase of its own, white noise of CV 1-2%;
- ``wear``: a sawtooth: fragmentation slows the file system linearly, by 3-8% over a cycle
  of 12-30 results (lengths drawn per cycle, the first cycle begun before the series), and
  a reformat at the end of each cycle puts it back at its best; CV 1-2%;
- ``cvgrow``: a device that gets noisier: CV from 0.5-1.5% at the first result growing
  geometrically to 2.5-5 times that at the last (garbage collection as an SSD wears), and
  scaling with the level to a power of 0-3 (after a step up the box runs nearer the
  device's limit and is noisier, after a step down quieter);
- ``dropout``: CV 1-2%, and each result with probability 1-4% a failed or throttled run at
  30-60% of the level (one result, or two in a row with probability 0.2);
- ``stalls``: a fixed-size job whose runtime is the base (jitter CV 0.5-1%) plus a Poisson
  number (mean 0.3-2) of stalls, each Pareto-long (index 1.5-3, minimum 0.5-2% of the base;
  all stalls of a run together at most twice the base): throughput bounded above with a
  power-law slow tail (writeback or GC pauses);
- ``tenant``: CV 1-2%, and during one stretch of 12-35 results (at a random place, possibly
  running off either end) each result with probability 15-35% in a second mode 5-12%
  slower (a noisy tenant that contends now and then while it is on the host);
- ``shock``: CV 1-2%, and at each result a 2-6% chance of a shock: 5-15% slower at once,
  recovering exponentially with a time constant of 1-3 results (shocks add up).

What counts as a change, decided before any code was written: a sudden shift of the level
that lasts five results or more is a true change and is listed in ``changes`` beside the
step; gradual movement and transients are noise. So each reformat of ``wear`` is a true
change (listed at the reset's first result, factor = best level over the level just before
it, about 3-8% up), the fall between reformats is noise (a drift, as ``drift`` in corpus 1);
``walk``, ``cycle`` are noise (no sudden shift); a ``cvgrow`` spread change is noise; a
dropout (one or two results) and a shock (after five results at most a fifth of it is left)
are noise; ``tenant``'s second mode is noise: the majority mode does not move (the median
moves by at most about 1.5%, less than the smallest step), only the spread of the stretch
changes. A change at the same result as the step is merged with it (factors multiplied).

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, and excursions: ``walk`` noise (step 0.3%, white CV
1-3%), a shift of 5, 10 or 25% either way for 4-15 results, then back (two true changes).
"""

from __future__ import annotations

import math

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("walk", "cycle", "wear", "cvgrow", "dropout", "stalls", "tenant", "shock")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


def _walk(rng: np.random.Generator, step: float, white: float, n: int) -> np.ndarray:
    """A random walk of normal steps of standard deviation ``step``, centred on its median,
    plus white noise of standard deviation ``white``."""
    level = np.cumsum(rng.normal(0.0, step, n))
    return level - float(np.median(level)) + rng.normal(0.0, white, n)


def _noise(
    rng: np.random.Generator, family: str, level: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """Log-scale noise of one family (the module docstring), about 0 at the median, and the
    level shifts in it that are true changes (reformats of ``wear``). ``level`` is the
    series' log level (the step), which only ``cvgrow`` looks at."""
    n = len(level)
    u = rng.uniform
    i_ = np.arange(n)
    if family == "walk":
        return _walk(rng, u(0.003, 0.008), u(0.008, 0.02), n), []
    if family == "cycle":
        period, amp, second = u(15.0, 45.0), u(0.015, 0.04), u(0.0, 0.6)
        w = 2.0 * math.pi * i_ / period
        y = amp * (np.sin(w + u(0.0, 2.0 * math.pi)) + second * np.sin(2.0 * w + u(0.0, 2.0 * math.pi)))
        return y - float(np.median(y)) + rng.normal(0.0, u(0.01, 0.02), n), []
    if family == "wear":
        drop = math.log1p(u(0.03, 0.08))
        y = np.empty(n)
        length = int(rng.integers(12, 31))
        j = int(rng.integers(0, length))  # the reformat before the series was j results back
        shifts = []
        for k in range(n):
            if j == length:
                shifts.append((k, math.exp(drop * (length - 1) / length)))
                j, length = 0, int(rng.integers(12, 31))
            y[k] = -drop * j / length
            j += 1
        y -= float(np.median(y))
        return y + rng.normal(0.0, u(0.01, 0.02), n), shifts
    if family == "cvgrow":
        c0, grow, power = u(0.005, 0.015), u(2.5, 5.0), u(0.0, 3.0)
        cv = c0 * grow ** (i_ / (n - 1)) * np.exp(power * level)
        return rng.normal(0.0, 1.0, n) * cv, []
    if family == "dropout":
        y = rng.normal(0.0, u(0.01, 0.02), n)
        rate = u(0.01, 0.04)
        k = 0
        while k < n:
            if rng.random() < rate:
                run = 2 if rng.random() < 0.2 else 1
                y[k : k + run] += np.log(rng.uniform(0.30, 0.60, len(y[k : k + run])))
                k += run
            else:
                k += 1
        return y, []
    if family == "stalls":
        mean, index, least = u(0.3, 2.0), u(1.5, 3.0), u(0.005, 0.02)
        base = np.exp(rng.normal(0.0, u(0.005, 0.01), n))
        count = rng.poisson(mean, n)
        stall = np.array([float(np.sum(least * (1.0 + rng.pareto(index, c)))) for c in count])
        y = -np.log(base + np.minimum(stall, 2.0))
        return y - float(np.median(y)), []
    if family == "tenant":
        length = int(rng.integers(12, 36))
        start = int(rng.integers(-length // 2, n - length // 2))
        gap, p = math.log1p(u(0.05, 0.12)), u(0.15, 0.35)
        y = rng.normal(0.0, u(0.01, 0.02), n)
        inside = (i_ >= start) & (i_ < start + length)
        return y - gap * (inside & (rng.random(n) < p)), []
    if family == "shock":
        rate, tau = u(0.02, 0.06), u(1.0, 3.0)
        y = rng.normal(0.0, u(0.01, 0.02), n)
        for k in np.nonzero(rng.random(n) < rate)[0]:
            size = math.log1p(u(0.05, 0.15))
            y[k:] -= size * np.exp(-(i_[k:] - k) / tau)
        return y, []
    raise ValueError(family)


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none; its
    changes are the step and the noise's own true changes (reformats), merged when they fall
    on the same result."""
    level = np.zeros(RUNS)
    found: dict[int, float] = {}
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[at:] = math.log(f)
        found[at] = f
    y, shifts = _noise(rng, family, level)
    for at, f in shifts:
        if 0 < at < RUNS:
            found[at] = found.get(at, 1.0) * f
    values = 1000.0 * np.exp(y + level)
    return Series(family, step, tuple(values.tolist()), tuple(sorted(found.items())))


def excursion(rng: np.random.Generator, size: float) -> Series:
    """``walk`` noise (step 0.3%, white CV 1-3%), shifted by ``size`` for 4-15 results, then
    back."""
    y = _walk(rng, 0.003, float(rng.uniform(0.01, 0.03)), RUNS)
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 211, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    (552 series at 12), from a Philox generator seeded with ``seed``."""
    rng = np.random.Generator(np.random.Philox(seed))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
