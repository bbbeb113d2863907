"""An eighth replay corpus, written apart from the detector and from corpora 1-7 (its own noise
code, generator stream and seed), so that what it reports is data no method was tuned on.
Written 2026-11-29 by a session that never read the detector, its tuning, or its results.

Series of 60 results, one value a result, higher is better, median about 1000. Noise
families, all multiplicative (on the log scale), none of them in corpora 1-7, each meant to
look like a piece of a CI box's fio throughput history:

- ``aging``: a level that moves as a power law since an event before the first result (a
  secure erase, after which the drive ages, or a reboot, after which caches warm):
  log level A (1 + (k + d) / tau)^(-alpha) at result k, either sign 50/50, A 4-10%, tau 8-25
  results, alpha 0.3-0.7, d (results since the event) 0-15; in the series it moves by
  about 1-7%, under 0.9% a result, fastest at the start and still moving at the end;
  white noise of CV 1-2%;
- ``fill``: a scratch file system that fills up with CI artefacts nobody cleans: the fill
  fraction rises from f0 (0.3-0.6) to f1 = f0 + 0.15-0.3 in gamma-distributed increments
  (shape 3-6, so irregular, never backwards); the level is (1 - fill)^g with g set so that
  the whole fall is 3-9% (write amplification grows as free space shrinks: the fall
  accelerates and is fastest at the end); white noise of CV 1-2% at the start, growing as
  ((1 - f0) / (1 - fill))^h, h 0-0.5 (garbage collection makes a fuller drive noisier);
- ``rollout``: the CI fleet migrates from an old pool of 3-6 boxes to a new pool of 3-6
  boxes whose level is 3-10% away (either way); each result runs on a box drawn at random,
  from the new pool with probability p rising linearly from 0 to 1 over a span of 1-12
  results (p = j / (S + 1) at the j-th result of a span of S), the span beginning at a
  result between 5 and 55 - S; boxes within a pool differ by offsets of standard deviation
  0.3-0.8%; white noise of CV 1-2%;
- ``varlen``: each result is the mean throughput of a run whose length varies (the job
  stops on a byte budget or a shared CI time slot): length L = L0 exp(s z) seconds, L0
  15-60, s 0.3-0.8, at least 3; per-second throughput of CV 2-6% averages to CV c / sqrt(L);
  the first w = 0.5-2 seconds run at 50-85% of speed (warm-up inside the measurement), so a
  short run is both noisier and slower, by w (1 - r) / L;
- ``p99``: a latency-bound figure, 1 / (99th percentile completion latency): n = 3000-30000
  completions a run, each log-normal with log-sd 0.2-0.5 around a median of 20-400 us; the
  percentile is the exact order statistic (a Beta draw), times a per-run factor of CV
  0.3-1%, and reported as fio reports percentiles, at the midpoint of a bin of its
  log-linear histogram (64 bins per power of two of nanoseconds: bins 0.8-1.6% of the value
  wide, the width depending on where in its octave the value lies);
- ``sigfig``: a quiet box (CV 0.2-0.8%) whose harness scrapes a human-readable summary
  (``BW=48.1MiB/s``): the raw value, of magnitude 10^u with u uniform in 2-5, is stored to
  three significant figures, so the grain is 0.1-1% of the value depending on its leading
  digits, and changes tenfold where a step crosses a power of ten;
- ``zbr``: a spinning disk's sequential rate falls from the outer to the inner tracks (zoned
  bit recording) by 40-55% across the LBA range; each run lays its test file out afresh at a
  uniform position in a free region 4-12% of the range wide, beginning at 0-70% of it: a
  flat-topped (uniform) noise 1.6-11% wide, light-tailed; white noise of CV 0.3-1%;
- ``retry``: white noise of CV 1-2.5%, each attempt with probability 4-12% slowed by 4-20%
  (a hiccup); the harness reruns a result that falls more than 3-6% below the previous
  stored result, up to 1-2 more times, and stores the best attempt (a retry-on-regression
  policy: the slow tail is trimmed relative to the previous value, not a fixed level).

What counts as a change, decided before any code was written, thinking as a kernel
developer watching a CI history of fio results: a level that moved and stayed moved matters
however it got there, as long as the move can be placed at a result and compared before and
after. So, unlike corpora 6 and 7 (which counted any move of three results or more as
noise), a true change here is a move of the level by 1% or more (half the smallest step;
less is below resolution) that runs its course within 12 results (two weeks of nightly runs:
a merge window, a fleet rollout, a span a developer bisects or pins on one event) and after
which the level holds for five results or more. It is listed in ``changes`` as (index of the
first result past the midpoint of the move, where before/after comparisons flip; factor
new/old level for the whole move). Movement that does not run its course within 12 results
and is still going at the end of the series is noise: it has no before and after level to
compare and no result to bisect to, and the developer re-baselines (a trend, not a change).
Transients that come back and changes of spread are noise. So: ``rollout``'s migration is a
true change (listed at the first result with p >= 0.5, factor new/old pool level; the span
is 1-12 results and ends by result 55, so five results or more hold after it); ``aging``'s
movement is noise (10% to 90% of the in-series move takes 30 results or more, and it is still
moving at the end); ``fill``'s fall is noise (it accelerates to the end and never holds, under
1% a result); ``varlen``, ``p99``, ``sigfig``, ``zbr`` and ``retry`` do not move
the level (their artefacts apply to the value after the step, which they keep). A change at
the same result as the step is merged with it (factors multiplied).

Each with a step of 0, 2, 5, 10 or 25% of either sign (factor 1 + step or 1 / (1 + step),
50/50) at a result between 15 and 50, always a true change; and excursions: ``aging`` noise
(A 3-6%, white CV 1-3%), a shift of 5, 10 or 25% either way for 4-15 results, then back (two
true changes, at the shift and at its end). The generator is SFC64 fed by
``SeedSequence(seed, spawn_key=(8,))``, a stream none of corpora 1-7 uses; default seed 503.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from corpus import Series

RUNS = 60
FAMILIES = ("aging", "fill", "rollout", "varlen", "p99", "sigfig", "zbr", "retry")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)

_NORMAL = NormalDist()


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def _aging(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    """A log level decaying as a power law since an event before the first result, either sign."""
    amp = math.log1p(rng.uniform(lo, hi)) * _sign(rng)
    tau, alpha, since = rng.uniform(8.0, 25.0), rng.uniform(0.3, 0.7), rng.uniform(0.0, 15.0)
    return amp * (1.0 + (np.arange(n) + since) / tau) ** (-alpha)


def _fill(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    f0 = rng.uniform(0.3, 0.6)
    f1 = f0 + rng.uniform(0.15, 0.3)
    grown = np.r_[0.0, np.cumsum(rng.gamma(rng.uniform(3.0, 6.0), 1.0, n - 1))]
    fill = f0 + (f1 - f0) * grown / grown[-1]
    g = math.log1p(rng.uniform(0.03, 0.09)) / math.log((1.0 - f0) / (1.0 - f1))
    cv = rng.uniform(0.01, 0.02) * ((1.0 - f0) / (1.0 - fill)) ** rng.uniform(0.0, 0.5)
    return level + g * np.log(1.0 - fill) + cv * rng.normal(0.0, 1.0, n)


def _rollout(rng: np.random.Generator, level: np.ndarray) -> tuple[np.ndarray, list[tuple[int, float]]]:
    n = len(level)
    span = int(rng.integers(1, 13))
    start = int(rng.integers(5, 55 - span + 1))
    p = np.clip((np.arange(n) - start + 1) / (span + 1), 0.0, 1.0)
    f = _factor(rng, rng.uniform(0.03, 0.10))
    spread = rng.uniform(0.003, 0.008)
    old, new = (rng.normal(0.0, spread, int(rng.integers(3, 7))) for _ in range(2))
    old, new = old - old.mean(), new - new.mean() + math.log(f)
    on_new = rng.random(n) < p
    box = np.where(on_new, new[rng.integers(0, len(new), n)], old[rng.integers(0, len(old), n)])
    y = level + box + rng.uniform(0.01, 0.02) * rng.normal(0.0, 1.0, n)
    return y, [(int(np.argmax(p >= 0.5)), f)]


def _varlen(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    typical, spread = rng.uniform(15.0, 60.0), rng.uniform(0.3, 0.8)
    length = np.maximum(typical * np.exp(spread * rng.normal(0.0, 1.0, n)), 3.0)
    warm, slow = rng.uniform(0.5, 2.0), rng.uniform(0.5, 0.85)
    mean = 1.0 - warm * (1.0 - slow) / length
    jitter = rng.uniform(0.02, 0.06) / np.sqrt(length) * rng.normal(0.0, 1.0, n)
    return level + np.log(mean) + jitter


def _fio_bin(ns: float) -> float:
    """The midpoint of fio's log-linear latency histogram bin holding ``ns`` (64 bins an octave)."""
    v = int(ns)
    shift = max(v.bit_length() - 1 - 6, 0)
    return ((v >> shift) + 0.5) * (1 << shift)


def _p99(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    count = int(rng.integers(3000, 30001))
    k = math.ceil(0.99 * count)
    mu, sigma = math.log(rng.uniform(20e3, 400e3)), rng.uniform(0.2, 0.5)
    shared = rng.uniform(0.003, 0.01)
    out = np.empty(n)
    for i in range(n):
        z = _NORMAL.inv_cdf(float(rng.beta(k, count + 1 - k)))
        ns = math.exp(mu + sigma * z + shared * rng.normal() - level[i])
        out[i] = math.log(1e9 / _fio_bin(ns))
    return out


def _sig3(v: float) -> float:
    grain = 10.0 ** (math.floor(math.log10(v)) - 2)
    return round(v / grain) * grain


def _sigfig(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    raw = 10.0 ** rng.uniform(2.0, 5.0) * np.exp(level + rng.uniform(0.002, 0.008) * rng.normal(0.0, 1.0, n))
    return np.log([_sig3(float(v)) for v in raw])


def _zbr(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    drop, begin, width = rng.uniform(0.40, 0.55), rng.uniform(0.0, 0.7), rng.uniform(0.04, 0.12)
    where = rng.uniform(begin, begin + width, n)
    return level + np.log(1.0 - drop * where) + rng.uniform(0.003, 0.01) * rng.normal(0.0, 1.0, n)


def _retry(rng: np.random.Generator, level: np.ndarray) -> np.ndarray:
    n = len(level)
    cv, hiccup = rng.uniform(0.01, 0.025), rng.uniform(0.04, 0.12)
    threshold, extra = math.log1p(rng.uniform(0.03, 0.06)), int(rng.integers(1, 3))

    def attempt(i: int) -> float:
        slow = math.log1p(rng.uniform(0.04, 0.20)) if rng.random() < hiccup else 0.0
        return float(level[i] + cv * rng.normal() - slow)

    out = np.empty(n)
    for i in range(n):
        best = attempt(i)
        tries = 0
        while i > 0 and best < out[i - 1] - threshold and tries < extra:
            best = max(best, attempt(i))
            tries += 1
        out[i] = best
    return out


def _series(
    rng: np.random.Generator, family: str, level: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """Log values of one family (the module docstring) around the log level ``level`` (the
    step), and the family's own true changes."""
    if family == "aging":
        n = len(level)
        return level + _aging(rng, 0.04, 0.10, n) + rng.uniform(0.01, 0.02) * rng.normal(0.0, 1.0, n), []
    if family == "rollout":
        return _rollout(rng, level)
    makers = {"fill": _fill, "varlen": _varlen, "p99": _p99, "sigfig": _sigfig, "zbr": _zbr, "retry": _retry}
    if family not in makers:
        raise ValueError(family)
    return makers[family](rng, level), []


def one(rng: np.random.Generator, family: str, step: float) -> Series:
    """A series of ``family`` with a step of ``step`` (random sign and place), or none, and
    the family's own true changes (``rollout`` only), merged with the step at one result."""
    level = np.zeros(RUNS)
    found: dict[int, float] = {}
    if step > 0.0:
        at, f = int(rng.integers(15, 51)), _factor(rng, step)
        level[at:] = math.log(f)
        found[at] = f
    y, own = _series(rng, family, level)
    for at, f in own:
        found[at] = found.get(at, 1.0) * f
    y = y - float(np.median(y - level))
    values = 1000.0 * np.exp(y)
    return Series(family, step, tuple(values.tolist()), tuple(sorted(found.items())))


def excursion(rng: np.random.Generator, size: float) -> Series:
    """``aging`` noise (A 3-6%, white CV 1-3%), shifted by ``size`` for 4-15 results, then back."""
    y = _aging(rng, 0.03, 0.06, RUNS) + rng.normal(0.0, float(rng.uniform(0.01, 0.03)), RUNS)
    y -= float(np.median(y))
    length = int(rng.integers(4, 16))
    at = int(rng.integers(15, RUNS - length - 7))
    f = _factor(rng, size)
    y[at : at + length] += math.log(f)
    return Series("excursion", size, tuple((1000.0 * np.exp(y)).tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int = 503, per_cell: int = 12) -> list[Series]:
    """``per_cell`` series for each family and step, ``2 × per_cell`` excursions of each size
    (552 series at 12), from an SFC64 generator fed by ``SeedSequence(seed, spawn_key=(8,))``."""
    rng = np.random.Generator(np.random.SFC64(np.random.SeedSequence(seed, spawn_key=(8,))))
    out = [one(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
