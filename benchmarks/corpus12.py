"""A twelfth replay corpus, written apart from the detector and from corpora 1-11 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-30 by a session that never read the detector, its tuning, or its results.

Histories of a storage benchmark (fio-like throughput, higher is better) run on cloud and CI
virtual machines, as a performance engineer who runs storage benchmarks in public clouds and
CI fleets reads them: series of 60 results in time order, one value a result (one run), each
run on a VM of the fleet (a long-lived runner or a fresh CI job) against a block volume
(burstable or provisioned, network-attached or local), median about 1000 before any change.

What counts as a change, decided before any code was written. The level of a result is the
central value the software it ran (the kernel, fio, the storage stack's configuration, the
image) would show if it were rerun many times under the fleet's usual conditions. A true
change is a change of that software between one result and the next (a kernel, fio or
configuration commit, a revert, an image bump) whose effect reproduces: run the software
either side of it side by side in the fleet, and the difference shows again, so a bisection
finds it and it has a first result. It multiplies the level of every later result (the work
the software gets out of each IO it issues) by the same factor until another change moves it
back. Anything the same software would show again when rerun is noise, however large, long,
one-sided or abrupt: the host and its hardware generation, a live migration to another host,
the volume's credits and hydration, the neighbours, the region's time of day, steal time,
the balloon driver, background snapshots, the instance type a CI job lands on and the
provider's rollouts of new ones. None of the noise families has true changes of its own:
rerunning the old software on the new host, during the neighbour's batch job or after the
credits ran out shows the same shift, and bisecting it finds nothing. The true changes are
the step and an excursion's two edges, each listed as (index of the first result after it,
factor new/old level), whatever its size against the noise.

Noise families, multiplicative (on the log scale), each parameter drawn per series, uniform
in its range unless said. Families on a wall clock have results at gamma-distributed gaps
(the CI queue), the first at a uniform hour of the week; each run lasts a few minutes.

- ``burst``: a burstable volume's credit bucket: runs of 2-15 min at gaps of mean 0.3-8 h
  (log-uniform; gamma shape 0.5-2); a run bursts while it has credits (one credit a minute
  of burst) and then falls to a baseline of 25-60% of the burst rate; the bucket holds 0.5-4
  runs' worth, starts uniform in it, refills between runs at a rate that brings 0.4-2.5 times
  what a run and the runner's other jobs use (exponential, mean 0-1.5 runs' worth, each gap);
  normal noise of CV 0.5-2%: sag, sawtooth and recovery after long idle spells;
- ``migrate``: live migration between hosts: results at gaps of mean 1-8 h (gamma shape 1-3);
  migrations a Poisson process of mean interval 2-20 days; each host's speed a log-normal
  factor of standard deviation 2-10%, lasting until the next migration; a run (3-15 min)
  overlapping the migration's brownout (10-40 min) loses 15-50% times its share in it; Laplace
  noise of CV 0.5-1.5%: plateaus with abrupt edges;
- ``neighbour``: 1-3 noisy neighbours on the host, each off for exponential spells of mean
  12-96 h and on for log-normal spells (median 0.5-8 h, log sd 0.5-1.2), each on spell taking
  5-40% of the throughput; runs of 5-30 min at gaps of mean 1-6 h (gamma shape 0.5-2) lose
  that times the share of the run the neighbour is on; normal noise of CV 0.7-2.5%;
- ``ciplace``: each CI job lands on an instance of one of 2-4 types (weights Dirichlet with
  concentration 0.4-1.5, speeds log-normal of sd 3-12%); with probability 1/2 the provider
  rolls out a new type (its own speed) whose share of the pool rises logistically to 30-90%,
  centred on a result 5-55 with a width of 2-10 results; normal noise of CV 1-3%;
- ``hydrate``: each CI job's scratch volume is restored from a snapshot and loads lazily: the
  job's earlier steps last a log-normal time (median 3-20 min, log sd 0.3-0.8) while the
  volume hydrates in the background with a time constant of 5-60 min; the benchmark's
  first-touch share (20-80%) of blocks not yet hydrated costs 0.5-3 times the run time; with
  probability 0-20% a job gets a pre-warmed volume; normal noise of CV 0.5-1.5%;
- ``steal``: CPU steal time on shared hosts slows the guest's IO path: results at gaps of mean
  2-10 h (gamma shape 1-3); steal per run gamma (shape 2-6) of mean 1-6% times 1 + A
  cos(daily, peak at a uniform hour), A 0.3-1, times 0.5-1 at weekends; throughput loses
  0.8-2.5 times the steal (capped at 70%); normal noise of CV 0.4-1.2%;
- ``balloon``: buffered reads on a file larger than the page cache: the cache holds 20-90% of
  the file, times a log AR(1) of sd 0.1-0.3 and correlation 3-20 results; the host's
  balloon driver inflates (probability 1-5% a result) taking 30-70% of it for a geometric
  spell of mean 2-8 results; a cacheable share of 10-40% of the IO runs 1.5-3 times faster
  from cache; with probability 1-5% the harness fails to drop caches and the whole file is
  cached; normal noise of CV 0.4-1.5%;
- ``snapshot``: the volume's scheduled backups every 8, 12 or 24 h at a uniform phase, each
  lasting 0.3-3 h times a log-normal of sd 0.3 (at most 80% of the period), copy-on-write
  costing 10-40% during it and a first-write cost of 2-10% decaying with a time constant of
  0.5-4 h after it; runs of 5-20 min, either from a cron every 4, 6, 8, 12 or 24 h (jitter sd
  2-20 min, 10% skipped) or, with probability 1/2, at gaps of mean 1-6 h (gamma shape 1-4);
  Student-t noise (3-6 degrees of freedom) of CV 0.6-1.5%.

Each series' noise is scaled to a median of 1 over the series (as seen against its level).
Each family has a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or
1 / (1 + step), 50/50) at a result between 15 and 50, always a true change; and excursions
in the noise of ``burst``, ``neighbour``, ``ciplace`` and ``balloon`` (families
``excursion-<family>``, the sizes' series spread over the four in turn): a shift of 5, 10 or
25% either way for 4-18 results (a commit, then its revert), beginning at a result from 15 on
and ending at least five results before the last, then back (two true changes, at the shift
and at its end, the end's factor 1 / f). The generator is PCG64 fed by
``SeedSequence(seed, spawn_key=(12,))``, a stream none of corpora 1-11 uses; default seed 947.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("burst", "migrate", "neighbour", "ciplace", "hydrate", "steal", "balloon", "snapshot")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)
EXCURSION_FAMILIES = ("burst", "neighbour", "ciplace", "balloon")

Rng = np.random.Generator
DAY, WEEK = 24.0, 168.0  # hours


def _factor(rng: Rng, size: float) -> float:
    """A factor of 1 + ``size`` or 1 / (1 + ``size``), 50/50."""
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _times(rng: Rng, n: int, mean_gap: float, shape: float) -> np.ndarray:
    """Run start times in hours: gamma gaps, the first at a uniform hour of the week."""
    gaps = rng.gamma(shape, mean_gap / shape, n - 1)
    return rng.uniform(0.0, WEEK) + np.concatenate(([0.0], np.cumsum(gaps)))


def _share(t: np.ndarray, run: float, spans: list[tuple[float, float]]) -> np.ndarray:
    """Share of each run [t, t + run] spent inside the (disjoint) ``spans``."""
    inside = np.zeros(len(t))
    for start, end in spans:
        inside += np.clip(np.minimum(t + run, end) - np.maximum(t, start), 0.0, None)
    return np.minimum(inside / run, 1.0)


def _burst(rng: Rng, n: int) -> np.ndarray:
    run = rng.uniform(2.0, 15.0)  # minutes
    gap = 60.0 * math.exp(rng.uniform(math.log(0.3), math.log(8.0)))
    gaps = rng.gamma((shape := rng.uniform(0.5, 2.0)), gap / shape, n)
    base, cap = rng.uniform(0.25, 0.60), run * rng.uniform(0.5, 4.0)
    other = run * rng.uniform(0.0, 1.5) + 1e-9
    refill = rng.uniform(0.4, 2.5) * (run + other) / gap  # credits a minute idle
    credits, out = rng.uniform(0.0, cap), np.empty(n)
    for k in range(n):
        burst = min(run, credits)
        out[k] = (burst + (run - burst) * base) / run
        credits = min(cap, credits - burst + refill * gaps[k])  # the run, then the idle gap
        credits = max(0.0, credits - rng.exponential(other))  # the runner's other jobs
    return np.log(out) + rng.normal(0.0, rng.uniform(0.005, 0.02), n)


def _migrate(rng: Rng, n: int) -> np.ndarray:
    t = _times(rng, n, rng.uniform(1.0, 8.0), rng.uniform(1.0, 3.0))
    every, sd = DAY * rng.uniform(2.0, 20.0), rng.uniform(0.02, 0.10)
    moves, m = [], t[0] - rng.exponential(every)
    while (m := m + rng.exponential(every)) < t[-1]:
        moves.append(m)
    host = np.full(n, rng.normal(0.0, sd))
    spans = []
    for m in moves:
        host[t >= m] = rng.normal(0.0, sd)
        spans.append((m, m + rng.uniform(10.0, 40.0) / 60.0))
    brown = rng.uniform(0.15, 0.50) * _share(t, rng.uniform(3.0, 15.0) / 60.0, spans)
    return host + np.log1p(-brown) + rng.laplace(0.0, rng.uniform(0.005, 0.015) / math.sqrt(2.0), n)


def _neighbour(rng: Rng, n: int) -> np.ndarray:
    t = _times(rng, n, rng.uniform(1.0, 6.0), rng.uniform(0.5, 2.0))
    run, y = rng.uniform(5.0, 30.0) / 60.0, np.zeros(n)
    for _ in range(int(rng.integers(1, 4))):
        off, on, spread = rng.uniform(12.0, 96.0), rng.uniform(0.5, 8.0), rng.uniform(0.5, 1.2)
        clock = t[0] - rng.uniform(0.0, off + on)
        while clock < t[-1] + run:
            clock += rng.exponential(off)
            length = on * math.exp(rng.normal(0.0, spread))
            y += np.log1p(-rng.uniform(0.05, 0.40) * _share(t, run, [(clock, clock + length)]))
            clock += length
    return y + rng.normal(0.0, rng.uniform(0.007, 0.025), n)


def _ciplace(rng: Rng, n: int) -> np.ndarray:
    kinds = int(rng.integers(2, 5))
    weights = rng.dirichlet(np.full(kinds, rng.uniform(0.4, 1.5)))
    sd = rng.uniform(0.03, 0.12)
    speed = rng.normal(0.0, sd, kinds + 1)
    new = np.zeros(n)
    if rng.random() < 0.5:
        mid, width = rng.uniform(5.0, 55.0), rng.uniform(2.0, 10.0)
        new = rng.uniform(0.3, 0.9) / (1.0 + np.exp(-(np.arange(n) - mid) / width))
    pool = np.column_stack((weights[None, :] * (1.0 - new)[:, None], new))
    pick = (rng.random(n)[:, None] > np.cumsum(pool, axis=1)).sum(axis=1)
    return speed[np.minimum(pick, kinds)] + rng.normal(0.0, rng.uniform(0.01, 0.03), n)


def _hydrate(rng: Rng, n: int) -> np.ndarray:
    before = rng.uniform(3.0, 20.0) * np.exp(rng.normal(0.0, rng.uniform(0.3, 0.8), n))
    cold = np.exp(-before / rng.uniform(5.0, 60.0))
    cold[rng.random(n) < rng.uniform(0.0, 0.2)] = 0.0
    slow = rng.uniform(0.2, 0.8) * rng.uniform(0.5, 3.0) * cold
    return -np.log1p(slow) + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _steal(rng: Rng, n: int) -> np.ndarray:
    t = _times(rng, n, rng.uniform(2.0, 10.0), rng.uniform(1.0, 3.0))
    daily = 1.0 + rng.uniform(0.3, 1.0) * np.cos(2.0 * math.pi * (t - rng.uniform(0.0, DAY)) / DAY)
    weekend = np.where((t % WEEK) >= 5.0 * DAY, rng.uniform(0.5, 1.0), 1.0)
    shape = rng.uniform(2.0, 6.0)
    steal = rng.gamma(shape, rng.uniform(0.01, 0.06) * daily * weekend / shape)
    loss = np.minimum(rng.uniform(0.8, 2.5) * steal, 0.7)
    return np.log1p(-loss) + rng.normal(0.0, rng.uniform(0.004, 0.012), n)


def _balloon(rng: Rng, n: int) -> np.ndarray:
    phi, sd = math.exp(-1.0 / rng.uniform(3.0, 20.0)), rng.uniform(0.1, 0.3)
    walk, inflate = np.empty(n), np.zeros(n)
    walk[0] = rng.normal(0.0, sd)
    for k in range(1, n):
        walk[k] = phi * walk[k - 1] + sd * math.sqrt(1.0 - phi * phi) * rng.normal()
    p, mean = rng.uniform(0.01, 0.05), rng.uniform(2.0, 8.0)
    for k in np.flatnonzero(rng.random(n) < p):
        inflate[k : k + int(rng.geometric(1.0 / mean))] = rng.uniform(0.3, 0.7)
    hit = np.clip(rng.uniform(0.2, 0.9) * np.exp(walk) * (1.0 - inflate), 0.0, 1.0)
    hit[rng.random(n) < rng.uniform(0.01, 0.05)] = 1.0
    share, fast = rng.uniform(0.1, 0.4), rng.uniform(1.5, 3.0)
    return -np.log1p(-share * hit * (1.0 - 1.0 / fast)) + rng.normal(0.0, rng.uniform(0.004, 0.015), n)


def _snapshot(rng: Rng, n: int) -> np.ndarray:
    if rng.random() < 0.5:
        t = _times(rng, n, rng.uniform(1.0, 6.0), rng.uniform(1.0, 4.0))
    else:
        every = float(rng.choice([4.0, 6.0, 8.0, 12.0, 24.0]))
        slots = np.flatnonzero(rng.random(4 * n) >= 0.1)[:n]
        t = rng.uniform(0.0, WEEK) + every * slots + rng.normal(0.0, rng.uniform(2.0, 20.0) / 60.0, n)
    period = float(rng.choice([8.0, 12.0, 24.0]))
    typical, cow = rng.uniform(0.3, 3.0), rng.uniform(0.10, 0.40)
    first, tau = rng.uniform(0.02, 0.10), rng.uniform(0.5, 4.0)
    start, spans, since = t[0] - rng.uniform(0.0, period) - period, [], np.full(n, np.inf)
    while start < t[-1]:
        end = start + min(typical * math.exp(rng.normal(0.0, 0.3)), 0.8 * period)
        spans.append((start, end))
        since = np.where(t >= end, t - end, since)
        start += period
    busy = cow * _share(t, rng.uniform(5.0, 20.0) / 60.0, spans)
    loss = 1.0 - (1.0 - busy) * (1.0 - first * np.exp(-since / tau))
    dof = rng.uniform(3.0, 6.0)
    noise = rng.uniform(0.006, 0.015) * rng.standard_t(dof, n) / math.sqrt(dof / (dof - 2.0))
    return np.log(np.maximum(1.0 - loss, 0.05)) + noise


_MAKERS: dict[str, Callable[[Rng, int], np.ndarray]] = {
    "burst": _burst,
    "migrate": _migrate,
    "neighbour": _neighbour,
    "ciplace": _ciplace,
    "hydrate": _hydrate,
    "steal": _steal,
    "balloon": _balloon,
    "snapshot": _snapshot,
}


def _values(rng: Rng, family: str, level: np.ndarray) -> tuple[float, ...]:
    """``family``'s noise on the log ``level`` (0 before any change), scaled to median 1000."""
    if family not in _MAKERS:
        raise ValueError(family)
    noise = _MAKERS[family](rng, len(level))
    y = level + noise - float(np.median(noise))
    return tuple((1000.0 * np.exp(y)).tolist())


def one(rng: Rng, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign, at a result 15-50), or none."""
    level = np.zeros(RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[at:] = math.log(f)
        changes = ((at, f),)
    return Series(family, step, _values(rng, family, level), changes)


def excursion(rng: Rng, size: float, family: str) -> Series:
    """``family``'s noise, shifted by ``size`` (either way) for 4-18 results, then back."""
    length = int(rng.integers(4, 19))
    at = int(rng.integers(15, RUNS - length - 5 + 1))
    f = _factor(rng, size)
    level = np.zeros(RUNS)
    level[at : at + length] = math.log(f)
    values = _values(rng, family, level)
    return Series(f"excursion-{family}", size, values, ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 947, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    spread over ``EXCURSION_FAMILIES`` in turn (552 series at 12), from a PCG64 generator fed
    by ``SeedSequence(seed, spawn_key=(12,))``."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(12,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [
        excursion(rng, size, EXCURSION_FAMILIES[i % len(EXCURSION_FAMILIES)])
        for size in EXCURSIONS
        for i in range(2 * per_cell)
    ]
    return out
