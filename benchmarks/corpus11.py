"""An eleventh replay corpus, written apart from the detector and from corpora 1-10 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-30 by a session that never read the detector, its tuning, or its results.

Histories of a Linux kernel performance lab (like 0-day/LKP testing each merged commit, or
mmtests run at each release candidate) as a kernel developer reads them: series of 60
results in time order, one value a result (a throughput-like figure of a storage, file
system or mm benchmark: fio, fs_mark, a dbench-like load, page-cache reads, a
will-it-scale-like fault test; higher is better), each result a fresh boot of that commit's
or release's kernel on a lab box, median about 1000 before any change.

What counts as a change, decided before any code was written. The level of a result is the
central value that result's kernel would show if it were rerun many times on the box under
the lab's usual conditions. A true change is a commit (or a revert, or a fix) between one
result and the next whose effect reproduces: build the kernels either side of it, rerun them
side by side on the same box, and the difference shows again, so a bisection finds it and it
has a first result. It moves the level of every later result by the same factor until
another commit moves it back. Anything the same kernel would show again when rerun is noise,
however large, long, one-sided or abrupt: the box's state (its SSD, its file system, its
temperature, its clocksource), the boot (memory fragmentation, task placement), the harness
and the way the lab aggregates repeats. None of the noise families has true changes of its
own: rerunning the old kernel during a hot afternoon, a media scan, an untrimmed week or a
bad-TSC spell shows the same dip, and bisecting it finds nothing. (A build's code alignment,
which a rerun reproduces, would be a true change by this definition; it is not modelled.)
The true changes are the step and an excursion's two edges, each listed as (index of the
first result after it, factor new/old level), whatever its size against the noise.

Noise families, multiplicative (on the log scale), with parameters unlike those of corpora
1-10; each parameter drawn per series, uniform in its range unless said. Three families run
on a wall clock: results arrive at times whose gaps are gamma-distributed (the lab's queue),
the first at a uniform hour of the week.

- ``thp``: each boot's memory fragmentation decides how much of the benchmark's memory is
  backed by transparent huge pages: a share h ~ Beta(a, b) per result, a and b 0.3-0.9
  (U-shaped: mostly all or nothing), throughput times 1 + g h with g 3-12%; normal noise of
  CV 0.3-1.2%;
- ``turbo``: CPU turbo headroom against the lab's inlet temperature: results at gaps of mean
  1.5-6 h (gamma shape 0.4-1, bursty); the temperature is a daily cosine of amplitude
  1.5-4 C peaking at a uniform hour, plus weather (an Ornstein-Uhlenbeck process of standard
  deviation 0.5-1.5 C and correlation time 12-48 h), plus Poisson(0.3-1.5) cooling faults in
  the series' span, each 3-24 h long and 3-8 C hot; throughput loses k 0.4-1.2% per C of a
  softplus (width 0.5 C) of the excess over an onset -1 to +2 C from the mean; Laplace noise
  of CV 0.4-1.2%: slow, correlated, one-sided sags;
- ``patrol``: the SSD firmware's background media scan, every P 24-168 h for D 1.5-8 h (at
  most P / 3) at a uniform phase; results at gaps of mean 2-6 h (gamma shape 1-3), each run
  0.25-1 h long; a run loses s 8-30% times the share of it spent in a scan; normal noise of
  CV 0.5-2%: dips of one to a few results, at a rough period;
- ``tsc``: at each boot the clocksource watchdog may mark the TSC unstable (probability
  0.5-4%), and the benchmark's clock reads fall back to HPET: a loss L log-uniform 15-50%
  (each time times a normal factor of CV 2%); a boot is cold with probability 0.2-0.6, and a
  warm boot after a bad one stays bad (the firmware does not resync the TSCs), so bad spells
  last until a cold boot; negated Gumbel (slow-tailed) noise of CV 0.5-2%;
- ``fstrim``: a scratch file system the harness only empties, trimmed by a weekly timer at a
  uniform hour; results at gaps of mean 2.5-8 h (gamma shape 2); each run writes a
  gamma(2)-distributed amount (mean 1 unit), and untrimmed writes u (at the start uniform in
  what a week writes) cost 1 - exp(-u / c), c 8-30 units, of a depth of 2-8%; the trim sets u
  to 0: a slow saturating decline and an abrupt recovery, once in a week; Student-t noise
  (4-8 degrees of freedom) of CV 0.8-2%;
- ``jbd2``: journal commits every 5 s during a run of L 20-60 s at a uniform phase, so a run
  has floor(L / 5 + U) of them; each commit stalls the load s0 (1 + X) s, s0 0.03-0.25 s, X
  Lomax of index 2-4, capped at 4 s; throughput 1 / (1 + stalls / L); normal noise of CV
  0.3-1%: two close levels (the commit count) and a slow heavy tail;
- ``recheck``: the lab's aggregation: each result is the arithmetic mean of k0 (1-3) runs,
  each run Student-t noise (2.5-5 degrees of freedom, capped at 1.2 on the log scale) of
  standard deviation 2-6%; when that mean is more than d 3-8% from the median of the up to
  five previously stored results, the lab adds m 2-6 runs and stores the mean of all: the
  precision of a result depends on the history before it;
- ``smt``: a will-it-scale-like load of N tasks (N even, 8-48) on N cores; each of the N / 2
  pairs of tasks is left by the balancer on SMT siblings with probability q 2-12% for the
  whole run (C pairs, binomial), costing 25-45% of those tasks' throughput:
  1 - loss 2C / N; normal noise of CV 0.2-0.8%: a lattice of levels below the top, coarse for
  small N.

Each series' noise is scaled to a median of 1 over the series (as seen against its level).
Each family has a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or
1 / (1 + step), 50/50) at a result between 15 and 50, always a true change; and excursions
in the noise of ``thp``, ``turbo``, ``jbd2`` and ``recheck`` (families
``excursion-<family>``, the sizes' series spread over the four in turn): a shift of 5, 10 or
25% either way for 4-18 results (a commit, then its revert), beginning at a result from 15 on
and ending at least five results before the last, then back (two true changes, at the shift
and at its end, the end's factor 1 / f). The generator is PCG64 fed by
``SeedSequence(seed, spawn_key=(11,))``, a stream none of corpora 1-10 uses; default seed 823.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("thp", "turbo", "patrol", "tsc", "fstrim", "jbd2", "recheck", "smt")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)
EXCURSION_FAMILIES = ("thp", "turbo", "jbd2", "recheck")

Rng = np.random.Generator
WEEK = 168.0  # hours


def _factor(rng: Rng, size: float) -> float:
    """A factor of 1 + ``size`` or 1 / (1 + ``size``), 50/50."""
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _clock(rng: Rng, n: int, mean_gap: float, shape: float) -> np.ndarray:
    """Result times in hours: gamma gaps of mean ``mean_gap``, the first at a uniform hour of the week."""
    gaps = rng.gamma(shape, mean_gap / shape, n - 1)
    return rng.uniform(0.0, WEEK) + np.concatenate(([0.0], np.cumsum(gaps)))


def _student(rng: Rng, sd: float, dof: float, n: int) -> np.ndarray:
    """Student-t noise of ``dof`` degrees of freedom scaled to standard deviation ``sd``."""
    return sd * rng.standard_t(dof, n) / math.sqrt(dof / (dof - 2.0))


def _thp(rng: Rng, level: np.ndarray) -> np.ndarray:
    """Per-boot huge-page share h ~ Beta(a, b), throughput times 1 + g h."""
    n = len(level)
    h = rng.beta(rng.uniform(0.3, 0.9), rng.uniform(0.3, 0.9), n)
    gain = rng.uniform(0.03, 0.12)
    return level + np.log1p(gain * h) + rng.normal(0.0, rng.uniform(0.003, 0.012), n)


def _turbo(rng: Rng, level: np.ndarray) -> np.ndarray:
    """Turbo headroom lost to the inlet temperature: daily cycle, weather, cooling faults."""
    n = len(level)
    t = _clock(rng, n, rng.uniform(1.5, 6.0), rng.uniform(0.4, 1.0))
    temp = rng.uniform(1.5, 4.0) * np.cos(2.0 * math.pi * (t - rng.uniform(0.0, 24.0)) / 24.0)
    sd, tau = rng.uniform(0.5, 1.5), rng.uniform(12.0, 48.0)
    weather = np.empty(n)
    weather[0] = rng.normal(0.0, sd)
    for k in range(1, n):
        decay = math.exp(-(t[k] - t[k - 1]) / tau)
        weather[k] = weather[k - 1] * decay + sd * math.sqrt(1.0 - decay * decay) * rng.normal()
    temp += weather
    for _ in range(int(rng.poisson(rng.uniform(0.3, 1.5)))):
        start, length = rng.uniform(t[0] - 24.0, t[-1]), rng.uniform(3.0, 24.0)
        temp += np.where((t >= start) & (t < start + length), rng.uniform(3.0, 8.0), 0.0)
    excess = 0.5 * np.logaddexp(0.0, (temp - rng.uniform(-1.0, 2.0)) / 0.5)
    loss = np.minimum(rng.uniform(0.004, 0.012) * excess, 0.6)
    noise = rng.laplace(0.0, rng.uniform(0.004, 0.012) / math.sqrt(2.0), n)
    return level + np.log1p(-loss) + noise


def _patrol(rng: Rng, level: np.ndarray) -> np.ndarray:
    """The SSD's periodic media scan slows runs by ``s`` times their share spent in it."""
    n = len(level)
    t = _clock(rng, n, rng.uniform(2.0, 6.0), rng.uniform(1.0, 3.0))
    period = rng.uniform(24.0, 168.0)
    duration, phase = min(rng.uniform(1.5, 8.0), period / 3.0), rng.uniform(0.0, period)
    run = rng.uniform(0.25, 1.0)
    inside = (t[:, None] + run * (np.arange(64) + 0.5) / 64 - phase) % period < duration
    share = inside.mean(axis=1)
    slow = rng.uniform(0.08, 0.30)
    return level + np.log1p(-slow * share) + rng.normal(0.0, rng.uniform(0.005, 0.02), n)


def _tsc(rng: Rng, level: np.ndarray) -> np.ndarray:
    """HPET fallback after the TSC is marked unstable, sticky over warm boots."""
    n = len(level)
    p_bad, p_cold = rng.uniform(0.005, 0.04), rng.uniform(0.2, 0.6)
    loss = math.exp(rng.uniform(math.log(0.15), math.log(0.5)))
    bad = np.zeros(n, dtype=bool)
    for k in range(n):
        sticky = k > 0 and bad[k - 1] and rng.random() >= p_cold
        bad[k] = sticky or rng.random() < p_bad
    hit = np.log1p(-np.clip(loss * rng.normal(1.0, 0.02, n), 0.0, 0.9))
    beta = rng.uniform(0.005, 0.02) * math.sqrt(6.0) / math.pi
    return level + np.where(bad, hit, 0.0) - rng.gumbel(0.0, beta, n)


def _fstrim(rng: Rng, level: np.ndarray) -> np.ndarray:
    """Untrimmed writes slow the SSD until the weekly fstrim timer clears them."""
    n = len(level)
    gap = rng.uniform(2.5, 8.0)
    t = _clock(rng, n, gap, 2.0)
    week = np.floor((t - rng.uniform(0.0, WEEK)) / WEEK)
    scale, depth = rng.uniform(8.0, 30.0), rng.uniform(0.02, 0.08)
    writes = rng.gamma(2.0, 0.5, n)
    u, untrimmed = rng.uniform(0.0, WEEK / gap), np.empty(n)
    for k in range(n):
        if k > 0 and week[k] > week[k - 1]:
            u = 0.0
        untrimmed[k] = u
        u += writes[k]
    slow = depth * (1.0 - np.exp(-untrimmed / scale))
    dof = rng.uniform(4.0, 8.0)
    return level + np.log1p(-slow) + _student(rng, rng.uniform(0.008, 0.02), dof, n)


def _jbd2(rng: Rng, level: np.ndarray) -> np.ndarray:
    """Journal commit stalls every 5 s: a count of floor(L / 5 + U) and a Lomax tail."""
    n = len(level)
    length, s0, index = rng.uniform(20.0, 60.0), rng.uniform(0.03, 0.25), rng.uniform(2.0, 4.0)
    count = np.floor(length / 5.0 + rng.random(n)).astype(int)
    most = int(count.max())
    stall = np.minimum(s0 * (1.0 + rng.pareto(index, (n, most))), 4.0)
    stalls = np.where(np.arange(most)[None, :] < count[:, None], stall, 0.0).sum(axis=1)
    return level - np.log1p(stalls / length) + rng.normal(0.0, rng.uniform(0.003, 0.01), n)


def _recheck(rng: Rng, level: np.ndarray) -> np.ndarray:
    """Mean of k0 runs, plus m more when it strays d from the median of the last five stored."""
    n = len(level)
    k0, m = int(rng.integers(1, 4)), int(rng.integers(2, 7))
    sd, dof, limit = rng.uniform(0.02, 0.06), rng.uniform(2.5, 5.0), math.log1p(rng.uniform(0.03, 0.08))

    def runs(k: int, count: int) -> np.ndarray:
        return level[k] + np.clip(_student(rng, sd, dof, count), -1.2, 1.2)

    stored = np.empty(n)
    for k in range(n):
        done = runs(k, k0)
        value = math.log(float(np.mean(np.exp(done))))
        if k > 0 and abs(value - float(np.median(stored[max(0, k - 5) : k]))) > limit:
            done = np.concatenate((done, runs(k, m)))
            value = math.log(float(np.mean(np.exp(done))))
        stored[k] = value
    return stored


def _smt(rng: Rng, level: np.ndarray) -> np.ndarray:
    """C of N / 2 task pairs left on SMT siblings: throughput 1 - loss 2C / N."""
    n = len(level)
    pairs = int(rng.integers(4, 25))
    collided = rng.binomial(pairs, rng.uniform(0.02, 0.12), n)
    loss = rng.uniform(0.25, 0.45)
    return level + np.log1p(-loss * collided / pairs) + rng.normal(0.0, rng.uniform(0.002, 0.008), n)


_MAKERS: dict[str, Callable[[Rng, np.ndarray], np.ndarray]] = {
    "thp": _thp,
    "turbo": _turbo,
    "patrol": _patrol,
    "tsc": _tsc,
    "fstrim": _fstrim,
    "jbd2": _jbd2,
    "recheck": _recheck,
    "smt": _smt,
}


def _values(rng: Rng, family: str, level: np.ndarray) -> tuple[float, ...]:
    """``family``'s noise on the log ``level`` (0 before any change), scaled to median 1000."""
    if family not in _MAKERS:
        raise ValueError(family)
    y = _MAKERS[family](rng, level)
    y = y - float(np.median(y - level))
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


def build(seed: int = 823, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    spread over ``EXCURSION_FAMILIES`` in turn (552 series at 12), from a PCG64 generator fed
    by ``SeedSequence(seed, spawn_key=(11,))``."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(11,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [
        excursion(rng, size, EXCURSION_FAMILIES[i % len(EXCURSION_FAMILIES)])
        for size in EXCURSIONS
        for i in range(2 * per_cell)
    ]
    return out
