"""A tenth replay corpus, written apart from the detector and from corpora 1-9 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-30 by a session that never read the detector, its tuning, or its results.

Nightly kernel-CI histories of a storage benchmark's throughput (fio, MiB/s, higher is
better) as a Linux kernel developer reads them: series of 60 results, one value a result,
each result a fresh boot of that night's kernel on a CI box, median about 1000.

What counts as a change, decided before any code was written. The level of a result is the
central value the box would report if that night's kernel were rerun there many times under
the same circumstances. A true change is an event between one result and the next (a
commit, a revert, a config or firmware change) after which the level of every later result
is moved by the same factor, until another event moves it back. It is what a bisection can
find: build the kernels either side of it, rerun them side by side, and the difference
reproduces, so it has a first result. Anything the same kernel would show again when rerun
is noise, however large, long or one-sided: it comes from the device's state, the host, the
farm, the boot or the harness, not from the kernel, and bisecting it finds nothing. So the
true changes are the step and an excursion's two edges, each listed as (index of the first
result after it, factor new/old level), whatever its size against the noise (a 2% step under
20% noise is still a change). None of the noise families has true changes of its own:

- a ``gcpool`` dip (the drive's free-block pool run low) is device state: an old kernel run
  in the dip dips too, and idle reclaim brings it back, mostly within 1-5 nights (now and
  then a dozen or more: a drive at its sustained-write cliff);
- ``neighbours`` are other tenants of a shared host: they come, stay a night or a few, go;
- ``layout`` is the boot's memory layout, drawn afresh at every boot (every result);
- ``crunch`` is load on the shared CI farm: it rises and falls over 12-30 results, with no
  result where it happens, and an old kernel rerun in a busy period is slow too;
- ``partial``'s killed runs, ``alien``'s misparsed values and ``units``' formatting are the
  harness's: the run or its record is wrong, not the kernel (a rerun does not repeat them);
- ``writeback``'s unflushed bytes and a preceding job's writeback are per-run timing.

Noise families, all multiplicative, with parameters unlike those of corpora 1-9 (per series
each parameter uniform in its range unless said):

- ``gcpool``: an SSD's garbage-collection reservoir: a free-block fraction p in [0, 1]
  (started full, 40 unseen nights of burn-in); each night's suite writes w = w0 G (G gamma of
  shape 4, mean 1; w0 0.10-0.30 of the pool) and the idle hours after it reclaim r = w0 R E
  (E exponential of mean 1; R 1.3-2.2, so the pool refills on average), p capped at 1; the
  run's throughput falls linearly below a cliff at p = theta (0.2-0.5), by 10-40% at an empty
  pool, taken at the pool's midpoint during the run; white normal noise of CV 0.5-1.5%:
  serially correlated one-sided dips (total CV about 1-8%, in a few series up to 18%);
- ``neighbours``: a shared CI host: each night Poisson(0.1-1.2) new tenants arrive and each
  tenant stays for a geometric number of nights (staying on with probability 0.3-0.65, at
  most 6 nights), each with its own weight s (1 + L), s 2-10%, L Lomax of index 1.5-3, capped
  at 3; throughput 1 / (1 + the sum of the weights present); white normal noise of CV 1-2%:
  heavy-tailed, serially correlated, CV about 5-20% across series (a few more);
- ``layout``: each boot's physical memory layout (the NUMA node holding the page cache and
  fio's buffers, whether huge pages were had, cache colouring) is one of 4-9 layouts, drawn
  with Dirichlet(0.4) weights (some layouts rare), with log offsets normal of standard
  deviation 1-4%; within a layout normal noise of CV 0.2-0.6%: a lattice of levels;
- ``crunch``: seasonal load on the shared farm: Poisson(1.2) busy periods, each a raised
  cosine of half-width 6-15 results and height 0.3-1.0 centred at a uniform result in
  [-10, 70] (the load capped at 1.5); each result slowed by 1 / (1 + load g), g gamma of shape
  0.5-1.5 and mean 2-5%; quiet normal noise of CV 0.5-1.5%: the level sags and the spread
  grows, gradually, for a while;
- ``partial``: a quiet box with failed runs: generalised normal noise (exponential power,
  shape 1.5-3, light-tailed) of CV 0.5-1.5%; a run fails with probability 1-4% after a good
  run and 20-50% after a failed one (a sick box fails in clusters); a failed run killed by the
  harness's timeout reports the bytes done over the whole wall time, a factor Beta(0.8, 1.2)
  (at least 0.03), or, one time in four, statistics of only its cached start, 1.2-2.5 times
  faster (log-uniform);
- ``alien``: a harness that parses the wrong section of fio's output now and then: the
  suite's 1-3 other jobs each at a fixed ratio to this one, 1.3-8 times away (log-uniform;
  slower with probability 0.7, faster ones capped at 3 times); each result with probability
  2-8% is another job's (its choice uniform), with that job's own normal noise of CV 1-3%,
  and does not follow this job's step; this job's noise hyperbolic secant of CV 1-4%;
- ``writeback``: buffered writes: the run ends with a uniform share of its writeback still
  pending, counted as done (1-4% faster at most); with probability 0.2-0.6 a preceding job's
  writeback is still draining when the run starts (a uniform share of 2-8% slower at most);
  white normal noise of CV 0.3-1%: bounded, left-skewed, independent from night to night;
- ``units``: a harness that stores fio's human-readable figure: values under 1024 MiB/s as
  whole MiB/s, values from 1024 MiB/s in GiB/s to one decimal (a grain of 102.4 MiB/s, so
  1024-1075 all stored as 1024); the true median 950-1100 MiB/s (straddling the switch) and
  normal noise of CV 0.4-3%.

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, always a true change; and excursions in the noise of
``layout``, ``writeback``, ``partial`` and ``crunch`` (families ``excursion-<family>``, the
sizes' series spread over the four in turn): a shift of 5, 10 or 25% either way for 3-20
results, beginning at a result from 15 on and ending at least five results before the last,
then back (two true changes, at the shift and at its end, the end's factor 1 / f). The
generator is MT19937 fed by ``SeedSequence(seed, spawn_key=(10,))``, a stream none of corpora
1-9 uses; default seed 719.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("gcpool", "neighbours", "layout", "crunch", "partial", "alien", "writeback", "units")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)
EXCURSION_FAMILIES = ("layout", "writeback", "partial", "crunch")

Rng = np.random.Generator


def _factor(rng: Rng, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _loguniform(rng: Rng, lo: float, hi: float, n: int | None = None) -> np.ndarray | float:
    return np.exp(rng.uniform(math.log(lo), math.log(hi), n))


def _gennorm(rng: Rng, sd: float, beta: float, n: int) -> np.ndarray:
    """Generalised normal (exponential power) noise of shape ``beta``, standard deviation ``sd``."""
    x = rng.gamma(1.0 / beta, 1.0, n) ** (1.0 / beta) * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return sd * x / math.sqrt(math.gamma(3.0 / beta) / math.gamma(1.0 / beta))


def _hypsecant(rng: Rng, sd: float, n: int) -> np.ndarray:
    """Hyperbolic secant noise (unit variance before scaling) of standard deviation ``sd``."""
    u = rng.uniform(1e-12, 1.0 - 1e-12, n)
    return sd * (2.0 / math.pi) * np.log(np.tan(0.5 * math.pi * u))


def _gcpool(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    w0, ratio = rng.uniform(0.10, 0.30), rng.uniform(1.3, 2.2)
    theta, depth = rng.uniform(0.2, 0.5), rng.uniform(0.10, 0.40)
    burn = 40
    w = w0 * rng.gamma(4.0, 0.25, burn + n)
    r = w0 * ratio * rng.exponential(1.0, burn + n)
    p, mid = 1.0, np.empty(burn + n)
    for k in range(burn + n):
        mid[k] = max(p - 0.5 * w[k], 0.0)
        p = min(1.0, max(p - w[k], 0.0) + r[k])
    rate = 1.0 - depth * np.clip((theta - mid[burn:]) / theta, 0.0, 1.0)
    return level + np.log(rate) + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _neighbours(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    lam, stay, s, index = (
        rng.uniform(0.1, 1.2),
        rng.uniform(0.3, 0.65),
        rng.uniform(0.02, 0.10),
        rng.uniform(1.5, 3.0),
    )
    present: list[tuple[float, int]] = []  # (weight, nights left)
    load = np.empty(n)
    for k in range(n):
        for _ in range(int(rng.poisson(lam))):
            nights = min(int(rng.geometric(1.0 - stay)), 6)
            present.append((min(s * (1.0 + float(rng.pareto(index))), 3.0), nights))
        load[k] = sum(a for a, _ in present)
        present = [(a, left - 1) for a, left in present if left > 1]
    return level - np.log1p(load) + rng.normal(0.0, rng.uniform(0.01, 0.02), n)


def _layout(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    k = int(rng.integers(4, 10))
    weights = rng.dirichlet(np.full(k, 0.4))
    offsets = rng.normal(0.0, rng.uniform(0.01, 0.04), k)
    which = rng.choice(k, size=n, p=weights)
    return level + offsets[which] + rng.normal(0.0, rng.uniform(0.002, 0.006), n)


def _crunch(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    k = np.arange(n, dtype=float)
    load = np.zeros(n)
    for _ in range(int(rng.poisson(1.2))):
        centre, half, height = rng.uniform(-10.0, 70.0), rng.uniform(6.0, 15.0), rng.uniform(0.3, 1.0)
        d = np.abs(k - centre)
        load += np.where(d < half, height * 0.5 * (1.0 + np.cos(math.pi * d / half)), 0.0)
    load = np.minimum(load, 1.5)
    shape, mean = rng.uniform(0.5, 1.5), rng.uniform(0.02, 0.05)
    g = rng.gamma(shape, mean / shape, n)
    return level - np.log1p(load * g) + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _partial(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    y = level + _gennorm(rng, rng.uniform(0.005, 0.015), rng.uniform(1.5, 3.0), n)
    p_fail, p_again = rng.uniform(0.01, 0.04), rng.uniform(0.2, 0.5)
    failed = False
    for i in range(n):
        failed = bool(rng.random() < (p_again if failed else p_fail))
        if failed:
            if rng.random() < 0.75:
                y[i] += math.log(max(float(rng.beta(0.8, 1.2)), 0.03))
            else:
                y[i] += rng.uniform(math.log(1.2), math.log(2.5))
    return y


def _alien(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    y = level + _hypsecant(rng, rng.uniform(0.01, 0.04), n)
    jobs = int(rng.integers(1, 4))
    mag = np.asarray(_loguniform(rng, 1.3, 8.0, jobs))
    ratio = np.where(rng.random(jobs) < 0.7, 1.0 / mag, np.minimum(mag, 3.0))
    wrong = rng.random(n) < rng.uniform(0.02, 0.08)
    job = rng.integers(0, jobs, n)
    other = np.log(ratio[job]) + rng.normal(0.0, rng.uniform(0.01, 0.03), n)
    return np.where(wrong, other, y)


def _writeback(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    ahead = math.log1p(rng.uniform(0.01, 0.04)) * rng.random(n)
    draining = rng.random(n) < rng.uniform(0.2, 0.6)
    behind = np.where(draining, -math.log1p(rng.uniform(0.02, 0.08)) * rng.random(n), 0.0)
    return level + ahead + behind + rng.normal(0.0, rng.uniform(0.003, 0.010), n)


def _units(rng: Rng, level: np.ndarray) -> np.ndarray:
    n = len(level)
    return level + rng.normal(0.0, rng.uniform(0.004, 0.03), n)


_MAKERS: dict[str, Callable[[Rng, np.ndarray], np.ndarray]] = {
    "gcpool": _gcpool,
    "neighbours": _neighbours,
    "layout": _layout,
    "crunch": _crunch,
    "partial": _partial,
    "alien": _alien,
    "writeback": _writeback,
    "units": _units,
}


def _stored(v: np.ndarray) -> np.ndarray:
    """``units``' harness: whole MiB/s under 1024 MiB/s, GiB/s to one decimal from there."""
    return np.where(v < 1024.0, np.round(v), np.round(v / 1024.0, 1) * 1024.0)


def _values(rng: Rng, family: str, level: np.ndarray) -> tuple[float, ...]:
    """``family``'s noise on the log ``level`` (0 before any change), as MiB/s: median about
    1000 before the first change (950-1100 MiB/s for ``units``, then stored as its harness does)."""
    if family not in _MAKERS:
        raise ValueError(family)
    y = _MAKERS[family](rng, level)
    y = y - float(np.median(y - level))
    if family == "units":
        return tuple(_stored(rng.uniform(950.0, 1100.0) * np.exp(y)).tolist())
    return tuple((1000.0 * np.exp(y)).tolist())


def one(rng: Rng, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place, at a result between
    15 and 50), or none; the families have no true changes of their own (module docstring)."""
    if family not in _MAKERS:
        raise ValueError(family)
    level = np.zeros(RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[at:] = math.log(f)
        changes = ((at, f),)
    return Series(family, step, _values(rng, family, level), changes)


def excursion(rng: Rng, size: float, family: str) -> Series:
    """``family``'s noise, shifted by ``size`` (either way) for 3-20 results, then back."""
    length = int(rng.integers(3, 21))
    at = int(rng.integers(15, RUNS - length - 5 + 1))
    f = _factor(rng, size)
    level = np.zeros(RUNS)
    level[at : at + length] = math.log(f)
    values = _values(rng, family, level)
    return Series(f"excursion-{family}", size, values, ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 719, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    spread over ``EXCURSION_FAMILIES`` in turn (552 series at 12), from an MT19937 generator fed
    by ``SeedSequence(seed, spawn_key=(10,))``."""
    rng = np.random.Generator(np.random.MT19937(np.random.SeedSequence(seed, spawn_key=(10,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [
        excursion(rng, size, EXCURSION_FAMILIES[i % len(EXCURSION_FAMILIES)])
        for size in EXCURSIONS
        for i in range(2 * per_cell)
    ]
    return out
