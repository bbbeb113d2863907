"""A thirteenth replay corpus, written apart from the detector and from corpora 1-12 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-12-01 by a session that never read the detector, its tuning, or its results.

Histories of a storage benchmark (fio-like throughput, higher is better) run against NFS
filers, Ceph/RBD clusters and iSCSI targets and on a shared pool of bare-metal lab machines, as
a storage performance engineer who runs those reads them: series of 60 results in time order,
one value a result (one run), median about 1000 before any change.

What counts as a change, decided before any code was written. The level of a result is the
central value the software under test (the client kernel and its NFS/RBD/iSCSI code, fio, the
tunables the test sets, the image) would show if rerun many times under the lab's usual
conditions. A true change is a change of that software between one result and the next (a
commit, a revert, a tunable the test changes, an image bump) whose effect reproduces when the
software either side of it is run side by side against the same storage, so a bisection finds
it; it multiplies the level of every later result by one factor until another change moves it
back. Anything the same software would show again when rerun is noise, however large, long,
one-sided or abrupt: the cluster's state (scrubs, an OSD out, backfill, recovery, rebalance,
where the placement groups land), the filer's cache and its other clients, the network
(congestion, incast, a failed-over path, an MTU or offload setting drifted by a NIC reset),
neighbours, the time of day, the machine drawn from the pool. No noise family has true changes
of its own: the old software rerun during the backfill or on the slow path shows the same
shift. The true changes are the step and an excursion's two edges, each listed as (index of
the first result after it, factor new/old level), whatever its size against the noise.

Noise families, multiplicative (log scale), each parameter drawn per series, uniform unless
said; on a wall clock, results at gamma gaps (mean 2-12 h log-uniform, shape 0.7-3), the first
at a uniform hour of the week (Monday 0:00 = 0).

- ``scrub``: Ceph deep scrubs on the image's OSDs, with probability 2/3 in a daily window (4-12
  h) else all day; a run overlaps a Poisson number, mean 0.5-4 in the window and 0-20% of that
  outside, each costing 2-8%; with probability 1/2 scrubs pause (noscrub) for 1-7 days, then
  the backlog runs at 2-4 times the mean for 12-48 h; normal noise of CV 0.8-2%;
- ``recovery``: a cluster of 24-200 OSDs loses one at Poisson times (mean interval 3-30 days);
  backfill lasts a log-normal time (median 3-36 h, log sd 0.5) costing 15-60% at its start,
  falling linearly to a degraded floor of 3-10% at its end; while out, the cluster is 1-2 OSDs'
  worth slower; with probability 0.6 the OSD is replaced after a log-normal time (median 3
  days, log sd 0.7) and a second backfill costs 0.5-1 times as much; each rebalance moves the
  image's placement groups, a normal random walk of step 0.5-3%; Laplace noise of CV 0.7-2%;
- ``nfscache``: the NFS server's page cache: other clients take a share (10-70% times a log
  AR(1) of sd 0.2-0.6 and correlation 2-15 results, at most 98%); the benchmark's working set
  is 0.3-1.5 times the server's memory, its hit ratio the free share over it (at most 1) to
  the power 1-2; a head failover flushes the cache (1-4% a result) and each run warms 20-70%
  of what is cold; a read share of 30-100% runs 2-6 times faster from cache; normal noise of
  CV 0.5-1.5%;
- ``incast``: many servers answer one client at once and overflow the switch buffer: runs of
  30-300 s see Poisson retransmission timeouts at 0.5-8 a minute times a per-run log-normal
  (sd 0.4-1.2), each stalling 200 ms doubled a geometric number of times (going on with
  probability 0.1-0.4, at most 6), 3-10 times as many in congestion spells (starting 2-8% a
  result, a geometric 1-6 results long); the loss is the stalled share (at most 90%); 3-15% of
  runs also slow by a Pareto amount (tail index 1.1-2.5, heavier than Student-t with 3 df;
  scale 2-10%, at most 10 times); normal noise of CV 0.5-1.5%;
- ``filer``: a shared filer by time of day: with probability 1/2 runs from a cron every 4, 6,
  8, 12 or 24 h (jitter sd 5-40 min, 15% skipped), else on the wall clock; other clients'
  utilisation u is 10-30% plus 10-40% times a daytime bump (Gaussian, peak 10-16 h, sd 3-6 h,
  times 0.2-0.6 at weekends), plus with probability 1/2 a nightly backup (from 0-5 h for 1-4
  h) of 10-40%, times a per-run log-normal of sd 0.1-0.3 (at most 90%); the benchmark slows by
  1 + b u / (1 - u), b 0.05-0.3; normal noise of CV 0.5-1.5%;
- ``multipath``: the iSCSI active path fails at Poisson times (mean interval 2-20 days); a run
  (1-10 min) overlapping the failover's stall (10-120 s) loses the stalled share; IO then takes
  a non-optimised path 8-40% slower (times 0.7-1.3 each time, at most 60%) until failback,
  automatic after an exponential time (mean 0.5-6 h) or, with probability 0.2-0.7, manual
  after a log-normal time (median 1-6 days, log sd 0.6); normal noise of CV 0.5-1.5%;
- ``mtu``: misconfiguration spells starting with probability 1-5% a result and lasting a
  geometric 2-15 results (until the host is reprovisioned): a jumbo-frame path back at MTU
  1500 (45%, costing 5-20%), offloads off after a NIC reset (45%, costing 3-15%) or a path-MTU
  black hole (10%, each run losing 30-70%); logistic noise of CV 0.5-1.5%;
- ``labpool``: each run draws a machine from 2-5 hardware generations (log-normal speeds, sd
  4-15%) of 2-8 machines (offsets of sd 1-4%), weights Dirichlet of concentration 0.5-2; with
  probability 1/2 the scheduler keeps the last machine with probability 0.3-0.8; with
  probability 1/3 a generation retires at a result 10-50; with probability 1/3 two machines
  alternate every other result for 10-60 results; a result is the median of 3-5 repeats
  sharing a run effect (sd 0.5-2%), repeat noise sd 0.2-0.8%.

Each series' noise is scaled to a median of 1 over the series. Each family has a step of 0,
2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step), 50/50) at a result 15-50,
always a true change; excursions in the noise of ``recovery``, ``nfscache``, ``multipath``
and ``labpool`` (``excursion-<family>``, in turn): a shift of 5, 10 or 25% either way for 4-18
results (a commit, then its revert) from a result 15 or later, ending at least five results
before the last (two true changes, the end's factor 1 / f). The generator is PCG64 fed by
``SeedSequence(seed, spawn_key=(13,))``, a stream no other corpus uses; default seed 1049.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("scrub", "recovery", "nfscache", "incast", "filer", "multipath", "mtu", "labpool")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)
EXCURSION_FAMILIES = ("recovery", "nfscache", "multipath", "labpool")

Rng = np.random.Generator
DAY, WEEK = 24.0, 168.0  # hours


def _sided(rng: Rng, size: float) -> float:
    """1 + ``size`` or its inverse, each with probability 1/2."""
    return 1.0 / (1.0 + size) if rng.random() < 0.5 else 1.0 + size


def _clock(rng: Rng, n: int) -> np.ndarray:
    """Result times in hours on the wall clock: gamma gaps, starting at a uniform hour of a week."""
    mean, shape = math.exp(rng.uniform(math.log(2.0), math.log(12.0))), rng.uniform(0.7, 3.0)
    return rng.uniform(0.0, WEEK) + np.cumsum(np.r_[0.0, rng.gamma(shape, mean / shape, n - 1)])


def _arrivals(rng: Rng, first: float, last: float, mean: float) -> list[float]:
    """Poisson event times of ``mean`` interval in [``first`` - ``mean``, ``last``)."""
    out, at = [], first - mean
    while (at := at + rng.exponential(mean)) < last:
        out.append(at)
    return out


def _spells(rng: Rng, n: int, start: float, mean: float) -> list[tuple[int, int]]:
    """Disjoint (first result, length) spells, each free result starting one with ``start``."""
    out, k = [], 0
    while k < n:
        if rng.random() < start:
            out.append((k, int(rng.geometric(1.0 / mean))))
            k += out[-1][1]
        else:
            k += 1
    return out


def _scrub(rng: Rng, n: int) -> np.ndarray:
    t = _clock(rng, n)
    daily = rng.random() < 2.0 / 3.0
    window = (t - rng.uniform(0.0, DAY)) % DAY < (rng.uniform(4.0, 12.0) if daily else DAY)
    busy = rng.uniform(0.5, 4.0)
    mean = np.where(window, busy, busy * rng.uniform(0.0, 0.2))
    if rng.random() < 0.5:  # noscrub set for maintenance, then the backlog
        lift = rng.uniform(t[0], t[-1])
        mean[(t >= lift - DAY * rng.uniform(1.0, 7.0)) & (t < lift)] = 0.0
        mean[(t >= lift) & (t < lift + rng.uniform(12.0, 48.0))] = busy * rng.uniform(2.0, 4.0)
    scrubs = rng.poisson(mean)
    return scrubs * math.log1p(-rng.uniform(0.02, 0.08)) + rng.normal(0.0, rng.uniform(0.008, 0.02), n)


def _recovery(rng: Rng, n: int) -> np.ndarray:
    t, y = _clock(rng, n), np.zeros(n)
    osds, median = int(rng.integers(24, 201)), rng.uniform(3.0, 36.0)
    top, floor, walk = rng.uniform(0.15, 0.60), rng.uniform(0.03, 0.10), rng.uniform(0.005, 0.03)
    for out in _arrivals(rng, t[0], t[-1], DAY * rng.uniform(3.0, 30.0)):
        back = out + DAY * 3.0 * math.exp(rng.normal(0.0, 0.7)) if rng.random() < 0.6 else math.inf
        y[(t >= out) & (t < back)] += math.log1p(-rng.uniform(1.0, 2.0) / osds)
        for start, scale in ((out, 1.0), (back, rng.uniform(0.5, 1.0))):
            if start >= t[-1]:
                break
            into = (t - start) / (median * math.exp(rng.normal(0.0, 0.5)))
            now = (into >= 0.0) & (into < 1.0)
            y[now] += np.log1p(-scale * (floor + (top - floor) * (1.0 - into[now])))
            y[into >= 1.0] += rng.normal(0.0, walk)  # placement groups moved by the rebalance
    return y + rng.laplace(0.0, rng.uniform(0.007, 0.02) / math.sqrt(2.0), n)


def _nfscache(rng: Rng, n: int) -> np.ndarray:
    phi, sd, ar = math.exp(-1.0 / rng.uniform(2.0, 15.0)), rng.uniform(0.2, 0.6), np.zeros(n)
    for k, e in enumerate(rng.normal(0.0, sd, n)):  # log AR(1), stationary from the start
        ar[k] = e if k == 0 else phi * ar[k - 1] + e * math.sqrt(1.0 - phi * phi)
    others = np.clip(rng.uniform(0.1, 0.7) * np.exp(ar), 0.0, 0.98)
    hit = np.minimum((1.0 - others) / rng.uniform(0.3, 1.5), 1.0) ** rng.uniform(1.0, 2.0)
    flush, warming, warm = rng.uniform(0.01, 0.04), rng.uniform(0.2, 0.7), 1.0
    for k in range(n):
        if rng.random() < flush:
            warm = 0.0
        hit[k] *= warm
        warm += warming * (1.0 - warm)
    saved = rng.uniform(0.3, 1.0) * (1.0 - 1.0 / rng.uniform(2.0, 6.0))
    return -np.log1p(-saved * hit) + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _incast(rng: Rng, n: int) -> np.ndarray:
    run, per_min = rng.uniform(30.0, 300.0), rng.uniform(0.5, 8.0)
    rate = per_min * run / 60.0 * np.exp(rng.normal(0.0, rng.uniform(0.4, 1.2), n))
    boost, again = rng.uniform(3.0, 10.0), rng.uniform(0.1, 0.4)
    for k, span in _spells(rng, n, rng.uniform(0.02, 0.08), rng.uniform(1.0, 6.0)):
        rate[k : k + span] *= boost
    backoff = [np.minimum(rng.geometric(1.0 - again, m) - 1, 6) for m in rng.poisson(rate)]
    stalled = np.array([0.2 * np.sum(2.0**b) for b in backoff])
    y = np.log1p(-np.minimum(stalled / run, 0.9))
    tail = rng.random(n) < rng.uniform(0.03, 0.15)
    slow = rng.uniform(0.02, 0.10) * (1.0 + rng.pareto(rng.uniform(1.1, 2.5), n))
    y -= np.where(tail, np.log1p(np.minimum(slow, 9.0)), 0.0)
    return y + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _filer(rng: Rng, n: int) -> np.ndarray:
    if rng.random() < 0.5:
        every = float(rng.choice([4.0, 6.0, 8.0, 12.0, 24.0]))
        slots = np.flatnonzero(rng.random(3 * n) >= 0.15)[:n]
        jitter = rng.normal(0.0, rng.uniform(5.0, 40.0) / 60.0, n)
        t = rng.uniform(0.0, WEEK) + every * slots + jitter
    else:
        t = _clock(rng, n)
    hour, weekend = t % DAY, (t % WEEK) >= 5.0 * DAY
    apart = (hour - rng.uniform(10.0, 16.0) + DAY / 2.0) % DAY - DAY / 2.0
    bump = np.exp(-0.5 * (apart / rng.uniform(3.0, 6.0)) ** 2) * np.where(weekend, rng.uniform(0.2, 0.6), 1.0)
    u = rng.uniform(0.1, 0.3) + rng.uniform(0.1, 0.4) * bump
    if rng.random() < 0.5:  # the nightly backup
        u = u + rng.uniform(0.1, 0.4) * ((hour - rng.uniform(0.0, 5.0)) % DAY < rng.uniform(1.0, 4.0))
    u = np.minimum(u * np.exp(rng.normal(0.0, rng.uniform(0.1, 0.3), n)), 0.9)
    return -np.log1p(rng.uniform(0.05, 0.3) * u / (1.0 - u)) + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _multipath(rng: Rng, n: int) -> np.ndarray:
    t, y = _clock(rng, n), np.zeros(n)
    run, slower, manual = rng.uniform(1.0, 10.0) / 60.0, rng.uniform(0.08, 0.40), rng.uniform(0.2, 0.7)
    auto, days = rng.uniform(0.5, 6.0), rng.uniform(1.0, 6.0)
    for fail in _arrivals(rng, t[0], t[-1], DAY * rng.uniform(2.0, 20.0)):
        by_hand = rng.random() < manual
        back = fail + (DAY * days * math.exp(rng.normal(0.0, 0.6)) if by_hand else rng.exponential(auto))
        stall = rng.uniform(10.0, 120.0) / 3600.0
        y += np.log1p(-np.clip(np.minimum(t + run, fail + stall) - np.maximum(t, fail), 0.0, run) / run)
        y[(t >= fail) & (t < back)] += math.log1p(-min(slower * rng.uniform(0.7, 1.3), 0.6))
    return y + rng.normal(0.0, rng.uniform(0.005, 0.015), n)


def _mtu(rng: Rng, n: int) -> np.ndarray:
    y = np.zeros(n)
    frames, offload = rng.uniform(0.05, 0.20), rng.uniform(0.03, 0.15)
    for k, span in _spells(rng, n, rng.uniform(0.01, 0.05), rng.uniform(2.0, 15.0)):
        here, kind = y[k : k + span], rng.random()
        if kind < 0.9:
            here += math.log1p(-(frames if kind < 0.45 else offload))
        else:  # path-MTU black hole: large packets lost until retransmitted small
            here += np.log1p(-rng.uniform(0.3, 0.7, len(here)))
    return y + rng.logistic(0.0, rng.uniform(0.005, 0.015) * math.sqrt(3.0) / math.pi, n)


def _labpool(rng: Rng, n: int) -> np.ndarray:
    gens = int(rng.integers(2, 6))
    sizes = rng.integers(2, 9, gens)  # machines of each hardware generation
    gen = np.repeat(np.arange(gens), sizes)
    speed = np.repeat(rng.normal(0.0, rng.uniform(0.04, 0.15), gens), sizes)
    speed += rng.normal(0.0, rng.uniform(0.01, 0.04), len(speed))
    weight = rng.dirichlet(np.full(len(speed), rng.uniform(0.5, 2.0)))
    alive = np.ones((n, len(speed)), dtype=bool)
    if rng.random() < 1.0 / 3.0:
        alive[int(rng.integers(10, 51)) :, gen == rng.integers(gens)] = False
    keep = rng.uniform(0.3, 0.8) if rng.random() < 0.5 else 0.0
    pick = np.zeros(n, dtype=int)
    for k in range(n):
        if k and alive[k, pick[k - 1]] and rng.random() < keep:
            pick[k] = pick[k - 1]
        else:
            w = weight * alive[k]
            pick[k] = rng.choice(len(w), p=w / w.sum())
    if rng.random() < 1.0 / 3.0:  # two reserved hosts in turn
        a, b = rng.choice(np.flatnonzero(alive[-1]), 2, replace=False)
        at = int(rng.integers(0, n - 9))
        span = min(int(rng.integers(10, 61)), n - at)
        pick[at : at + span] = np.where(np.arange(span) % 2 == 0, a, b)
    shared = rng.normal(0.0, rng.uniform(0.005, 0.02), n)  # the run effect its repeats share
    repeats = rng.normal(0.0, rng.uniform(0.002, 0.008), (n, int(rng.integers(3, 6))))
    return speed[pick] + shared + np.median(repeats, axis=1)


_MAKERS: dict[str, Callable[[Rng, int], np.ndarray]] = dict(
    zip(FAMILIES, (_scrub, _recovery, _nfscache, _incast, _filer, _multipath, _mtu, _labpool), strict=True)
)


def _values(rng: Rng, family: str, level: np.ndarray) -> tuple[float, ...]:
    """``family``'s noise on the log ``level`` (0 before any change), scaled to median 1000."""
    noise = _MAKERS[family](rng, len(level))
    return tuple((1000.0 * np.exp(level + noise - float(np.median(noise)))).tolist())


def one(rng: Rng, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign, at a result 15-50), or none."""
    level = np.zeros(RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _sided(rng, step)
        level[at:] = math.log(f)
        changes = ((at, f),)
    return Series(family, step, _values(rng, family, level), changes)


def excursion(rng: Rng, size: float, family: str) -> Series:
    """``family``'s noise, shifted by ``size`` (either way) for 4-18 results, then back."""
    length = int(rng.integers(4, 19))
    at = int(rng.integers(15, RUNS - length - 5 + 1))
    f = _sided(rng, size)
    level = np.zeros(RUNS)
    level[at : at + length] = math.log(f)
    values = _values(rng, family, level)
    return Series(f"excursion-{family}", size, values, ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 1049, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    spread over ``EXCURSION_FAMILIES`` in turn (552 series at 12), from a PCG64 generator fed
    by ``SeedSequence(seed, spawn_key=(13,))``."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(13,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [
        excursion(rng, size, EXCURSION_FAMILIES[i % len(EXCURSION_FAMILIES)])
        for size in EXCURSIONS
        for i in range(2 * per_cell)
    ]
    return out
