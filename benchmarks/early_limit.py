"""How many falls of 5% or more could any gate catch within 3 results on corpus 9's noise? An
upper bound, from a genie that knows the noise, family by family.

Three results after a new kernel are one boot: in the grouped families one draw of an
invocation effect as large as the fall (``repeats``: SD 4-10%; ``vm``: variance-gamma within
a CV of 10-30%; ``nightly``: a node 3-8% away and an effect of 1-3%). The genie knows what no
detector does: the level just before the fall, each series' noise parameters, and everything
that happened before the start s of the results it tests: past invocations' effects and
nodes, where each invocation begins (a fall can only begin one), the drift, the mode or
regime a two-state chain was in. What follows s it knows only by its law. At each gated
result t (from ``replay.START``) it tests the results s..t for every possible start s in
t-2..t, and fails the result when one test does, as a gate fails each result it calls a
regression; its statistic:

- ``repeats``: -mean(y_s..y_t) (the within-invocation noise, CV 0.2-0.8%, is a tenth of the
  effect; a Laplace location family has a monotone likelihood ratio, so for one invocation a
  threshold on its mean is the most powerful test);
- ``vm``: the generalised least-squares mean of y_s..y_t (invocation effect and within noise
  of known variances; the results may span two invocations), as a z;
- every other family: the largest, over falls of 5, 10 and 25%, of the likelihood ratio of
  that fall against none, from the noise's exact law: ``nightly`` the median of y_s..y_t
  less the drift, the new invocation's node a mixture with the chain's probabilities;
  ``scalemix`` and ``excursion`` the scale mixture's density by Gauss-Hermite quadrature;
  ``creep`` logistic about the known drift; ``numa`` and ``jitter`` summed over every path
  of the chain's states for s..t; ``strays`` logistic, the genie also told which results
  stalled or were cached (a looser bound: knowing more only helps). An ``excursion``'s fall
  is seen from the level just before it (its edge down, or back from a shift up).

The series are drawn afresh with corpus 9's own noise code (``corpus9._groups``, ``_vg``,
``_chain``, ``_scalemix``, ``_logistic``, ``_outliers``, each family's parameter ranges as in
corpus9.py), another seed. Each family's threshold is set by simulation (series without a
change) so that its false alarms per 100 gated results are ``replay.FA_REPLAY`` (0.77), and,
beside it, iowall's own in that family on corpus 9 (docs/benchmarks.md). Then the share of
falls of 5, 10 and 25% alarmed at the fall's first result or the next two, beside iowall's
replayed share; pooled with the weights of corpus 9's own falls of each family and size.

Run:  cd benchmarks && PYTHONPATH=/tmp/benchdeps ../.venv/bin/python early_limit.py [--series 2000]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import corpus9
import numpy as np
from replay import FA_REPLAY, START

N = corpus9.RUNS
FALLS = (0.05, 0.10, 0.25)
#: iowall early (fdr 0.0075) on corpus 9 seed 601: caught within 3 and false alarms per 100
#: gated results, by family (docs/benchmarks.md, "Corpus 9, reported once").
IOWALL = {
    "scalemix": (0.600, 0.31),
    "repeats": (0.143, 0.66),
    "strays": (0.619, 0.31),
    "creep": (0.625, 0.66),
    "numa": (0.412, 0.31),
    "vm": (0.125, 0.87),
    "nightly": (0.080, 0.42),
    "jitter": (0.556, 0.24),
    "excursion": (0.625, 0.17),
}
IOWALL_POOLED = (0.460, 0.43)
#: the falls the likelihood ratios are taken against; the largest ratio is the statistic (a
#: ratio against 5% alone misses a 25% fall under a heavy tail: far out, both look alike)
SHIFTS = tuple(math.log1p(f) for f in FALLS)

#: A family's draw: log values (level 0 before the fall), invocation index of each result,
#: and a function of (results s..t, s, t) giving the suspicion of a fall beginning at s.
Draw = tuple[np.ndarray, np.ndarray, Callable[[int, int], float]]


def _starts(g: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.diff(g, prepend=-1) != 0)


def repeats(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    g = corpus9._groups(rng, N, 3, 5, cut)
    effect = rng.laplace(0.0, rng.uniform(0.04, 0.10) / math.sqrt(2.0), g[-1] + 1)
    y = level + effect[g] + rng.normal(0.0, rng.uniform(0.002, 0.008), N)
    return y, g, lambda s, t: -float(np.mean(y[s : t + 1]))


def vm(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    cv, share, shape = rng.uniform(0.10, 0.30), rng.uniform(0.3, 0.7), rng.uniform(0.7, 2.0)
    g = corpus9._groups(rng, N, 2, 4, cut)
    effect = corpus9._vg(rng, cv * math.sqrt(share), shape, int(g[-1]) + 1)
    y = level + effect[g] + corpus9._vg(rng, cv * math.sqrt(1.0 - share), shape, N)
    ve, vw = cv * cv * share, cv * cv * (1.0 - share)

    def z(s: int, t: int) -> float:
        num = den = 0.0
        for i in np.unique(g[s : t + 1]):
            part = y[s : t + 1][g[s : t + 1] == i]
            w = 1.0 / (ve + vw / len(part))
            num, den = num + w * float(part.mean()), den + w
        return -num / den * math.sqrt(den)

    return y, g, z


def nightly(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    g = corpus9._groups(rng, N, 3, 5, cut)
    k = int(g[-1]) + 1
    switch = rng.uniform(0.6, 0.9)
    node = corpus9._chain(rng, k, (switch, switch), 2)
    gap = math.log1p(rng.uniform(0.03, 0.08)) * (1.0 if rng.random() < 0.5 else -1.0)
    su = rng.uniform(0.01, 0.03)
    effect = gap * node + rng.normal(0.0, su, k)
    sign = 1.0 if rng.random() < 0.5 else -1.0
    drift = math.log1p(rng.uniform(0.02, 0.08)) * sign * np.linspace(0.0, 1.0, N)
    cw = rng.uniform(0.005, 0.015)
    y = level + effect[g] + drift + corpus9._scalemix(rng, cw, 0.5, N)
    slow, fast = corpus9._outliers(rng, N, rng.uniform(0.01, 0.03), rng.uniform(0.005, 0.015))
    y[slow] -= np.log1p(rng.uniform(0.2, 0.6, N))[slow]
    y[fast] += np.log(rng.uniform(1.3, 3.0, N))[fast]

    def lr(s: int, t: int) -> float:
        i = int(g[s])
        prev = int(node[i - 1]) if i >= 1 else -1
        if prev < 0:
            p1 = 0.5
        else:
            forced = i >= 2 and int(node[i - 2]) == prev  # two in a row: the chain must leave
            p_same = 0.0 if forced else 1.0 - switch
            p1 = p_same if prev == 1 else 1.0 - p_same
        m = float(np.median(y[s : t + 1] - drift[s : t + 1]))
        sd = math.sqrt(su * su + cw * cw / (t - s + 1))

        def like(x: float) -> float:
            return (1.0 - p1) * math.exp(-0.5 * (x / sd) ** 2) + p1 * math.exp(-0.5 * ((x - gap) / sd) ** 2)

        base = math.log(max(like(m), 1e-300))
        return max(math.log(max(like(m + d), 1e-300)) - base for d in SHIFTS)

    return y, g, lr


_GH_U, _GH_W = np.polynomial.hermite_e.hermegauss(32)
_GH_W = _GH_W / _GH_W.sum()
_SQRT2PI = math.sqrt(2.0 * math.pi)


def _scalemix_logpdf(x: np.ndarray, c: float, t: float) -> np.ndarray:
    """log density of ``corpus9._scalemix``'s noise (normal of scale c exp(t u - t^2), u
    standard normal), by Gauss-Hermite quadrature over u."""
    sig = c * np.exp(t * _GH_U - t * t)
    dens = (_GH_W / sig * np.exp(-0.5 * (x[..., None] / sig) ** 2)).sum(-1) / _SQRT2PI
    return np.log(np.maximum(dens, 1e-300))


def _logistic_logpdf(x: np.ndarray, cv: float) -> np.ndarray:
    s = cv * math.sqrt(3.0) / math.pi
    z = -np.abs(x) / s
    return z - math.log(s) - 2.0 * np.log1p(np.exp(z))


def _windows(
    logpdf: Callable[[np.ndarray], np.ndarray], x: np.ndarray, skip: np.ndarray | None = None
) -> Callable[[int, int], float]:
    """The largest log likelihood ratio over ``SHIFTS`` of a fall beginning at s, seen at t,
    for independent results ``x`` of log density ``logpdf`` (results in ``skip`` left out)."""
    base = logpdf(x)
    cums = []
    for d in SHIFTS:
        llr = logpdf(x + d) - base
        if skip is not None:
            llr = np.where(skip, 0.0, llr)
        cums.append(np.concatenate([[0.0], np.cumsum(llr)]))
    both = np.array(cums)
    return lambda s, t: float((both[:, t + 1] - both[:, s]).max())


def _every(y: np.ndarray, stat: Callable[[int, int], float]) -> Draw:
    """Independent results: a fall may begin at any result."""
    return y, np.arange(N), stat


def scalemix(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    c, t = math.exp(rng.uniform(math.log(0.01), math.log(0.30))), rng.uniform(0.4, 0.9)
    y = level + corpus9._scalemix(rng, c, t, N)
    return _every(y, _windows(lambda v: _scalemix_logpdf(v, c, t), y))


def excursion(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    """An excursion's fall, seen from the level just before it (the genie knows it): its
    edge into a downward shift, or back from an upward one; ``scalemix`` noise of c 1-4%."""
    c, t = math.exp(rng.uniform(math.log(0.01), math.log(0.04))), rng.uniform(0.4, 0.9)
    y = level + corpus9._scalemix(rng, c, t, N)
    return _every(y, _windows(lambda v: _scalemix_logpdf(v, c, t), y))


def strays(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    """The genie also knows which results stalled or were cached (a looser bound: it only
    ever helps), and judges the others by their logistic noise."""
    cv = rng.uniform(0.008, 0.025)
    y = level + corpus9._logistic(rng, cv, N)
    slow, fast = corpus9._outliers(rng, N, rng.uniform(0.015, 0.06), rng.uniform(0.005, 0.03))
    m, index = rng.uniform(0.15, 0.4), rng.uniform(1.2, 2.5)
    x = np.minimum(m * (1.0 + rng.pareto(index, N)), 9.0)
    y[slow] -= np.log1p(x[slow])
    y[fast] += rng.uniform(math.log(1.5), math.log(6.0), N)[fast]
    return _every(y, _windows(lambda v: _logistic_logpdf(v, cv), y, slow | fast))


def creep(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    """The drift known: logistic noise about it."""
    total = math.log1p(rng.uniform(0.04, 0.15)) * (1.0 if rng.random() < 0.5 else -1.0)
    p, k0 = rng.uniform(0.5, 2.5), rng.uniform(5.0, 30.0)
    k = np.arange(N)
    drift = total * ((k + k0) ** p - k0**p) / ((N - 1 + k0) ** p - k0**p)
    cv = rng.uniform(0.01, 0.04)
    y = level + drift + corpus9._logistic(rng, cv, N)
    x = y - drift
    return _every(y, _windows(lambda v: _logistic_logpdf(v, cv), x))


def _chain_lr(
    x: np.ndarray,
    state: np.ndarray,
    leave: tuple[float, float],
    cap: int,
    law: tuple[tuple[float, float], tuple[float, float]],
) -> Callable[[int, int], float]:
    """A two-state chain's results (``corpus9._chain``): the states before s known, those of
    s..t summed over every path with the chain's probabilities (leave state j with
    ``leave[j]``, never more than ``cap`` in a row); each state a normal (mean, sd) ``law``."""

    def run_before(s: int) -> tuple[int, int]:
        st, r = int(state[s - 1]), 1
        while s - 1 - r >= 0 and int(state[s - 1 - r]) == st:
            r += 1
        return st, r

    def like(xs: np.ndarray, st: int, r: int) -> float:
        total = 0.0
        for path in range(1 << len(xs)):
            p, cur, run, ll = 1.0, st, r, 0.0
            for j in range(len(xs)):
                nxt = (path >> j) & 1
                stay_p = 0.0 if run >= cap else 1.0 - leave[cur]
                p *= stay_p if nxt == cur else 1.0 - stay_p
                run = run + 1 if nxt == cur else 1
                cur = nxt
                mean, sd = law[nxt]
                ll += -0.5 * ((xs[j] - mean) / sd) ** 2 - math.log(sd)
            total += p * math.exp(ll)
        return total

    def lr(s: int, t: int) -> float:
        st, r = run_before(s)
        xs = x[s : t + 1]
        base = math.log(max(like(xs, st, r), 1e-300))
        return max(math.log(max(like(xs + d, st, r), 1e-300)) - base for d in SHIFTS)

    return lr


def numa(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    leave = (rng.uniform(0.3, 1.0), rng.uniform(0.3, 1.0))
    mode = corpus9._chain(rng, N, leave, 5)
    gap = math.log1p(rng.uniform(0.03, 0.15))
    fast, slow = rng.uniform(0.005, 0.015), rng.uniform(0.015, 0.04)
    z = rng.normal(0.0, 1.0, N)
    y = level + np.where(mode == 1, -gap + slow * z, fast * z)
    return _every(y, _chain_lr(y, mode, leave, 5, ((0.0, fast), (-gap, slow))))


def jitter(rng: np.random.Generator, level: np.ndarray, cut: int) -> Draw:
    leave = (rng.uniform(0.25, 0.6), rng.uniform(0.3, 0.7))
    noisy = corpus9._chain(rng, N, leave, N)
    quiet_cv, noisy_cv = rng.uniform(0.005, 0.02), rng.uniform(0.04, 0.15)
    cv = np.where(noisy == 1, noisy_cv, quiet_cv)
    y = level + cv * rng.normal(0.0, 1.0, N)
    return _every(y, _chain_lr(y, noisy, leave, N, ((0.0, quiet_cv), (0.0, noisy_cv))))


FAMILIES: dict[str, Callable[[np.random.Generator, np.ndarray, int], Draw]] = {
    "scalemix": scalemix,
    "repeats": repeats,
    "strays": strays,
    "creep": creep,
    "numa": numa,
    "vm": vm,
    "nightly": nightly,
    "jitter": jitter,
    "excursion": excursion,
}


def suspicion(draw: Draw) -> np.ndarray:
    """The genie's statistic at each gated result: the largest over invocation starts in
    t-2..t (NaN where there is none)."""
    _, g, stat = draw
    starts = set(_starts(g).tolist())
    out = np.full(N, np.nan)
    for t in range(START, N):
        cands = [s for s in range(t - 2, t + 1) if s in starts]
        if cands:
            out[t] = max(stat(s, t) for s in cands)
    return out


def threshold(family: str, rng: np.random.Generator, series: int, budgets: tuple[float, ...]) -> list[float]:
    """Per budget (false alarms per 100 gated results), the genie's threshold on series
    without a change: the (1 - budget/100) quantile of its statistic over every gated result
    (no test counts as a pass)."""
    make = FAMILIES[family]
    vals = np.concatenate([suspicion(make(rng, np.zeros(N), 0))[START:] for _ in range(series)])
    vals = np.where(np.isnan(vals), -np.inf, vals)
    return [float(np.quantile(vals, 1.0 - b / 100.0)) for b in budgets]


def caught(family: str, rng: np.random.Generator, series: int, fall: float, cuts: list[float]) -> list[float]:
    """Per threshold, the share of falls of ``fall`` (factor 1 / (1 + fall), at a result
    between 15 and 50 as in corpus 9) alarmed at the fall's first result or the next two."""
    make = FAMILIES[family]
    hits = np.zeros(len(cuts))
    for _ in range(series):
        at = int(rng.integers(15, 51))
        level = np.zeros(N)
        level[at:] = -math.log1p(fall)
        sus = suspicion(make(rng, level, at))[at : at + 3]
        sus = np.where(np.isnan(sus), -np.inf, sus)
        hits += [bool((sus > c).any()) for c in cuts]
    return (hits / series).tolist()


def corpus_falls(seed: int = 601) -> dict[tuple[str, float], int]:
    """Corpus 9's falls of 5% or more by family and size (excursions: the edge that falls)."""
    out: dict[tuple[str, float], int] = {}
    for series in corpus9.build(seed, 12):
        for _, f in series.changes:
            if f < 1.0 and 1.0 / f - 1.0 >= 0.049:
                key = (series.family, round(1.0 / f - 1.0, 2))
                out[key] = out.get(key, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=2000, help="series per family and fall size")
    ap.add_argument("--quiet", type=int, default=4000, help="series without a change per family (thresholds)")
    ap.add_argument("--seed", type=int, default=9001)
    args = ap.parse_args()
    rng = np.random.Generator(np.random.MT19937(np.random.SeedSequence(args.seed, spawn_key=(91,))))
    weights = corpus_falls()
    print(
        f"genie, corpus 9's noise: {args.series} series per family and fall, {args.quiet} without a change "
        "per family for its threshold; caught within 3 results (falls of 5, 10, 25%; pooled by corpus 9's "
        "own falls of each size)"
    )
    pooled = np.zeros(2)
    total = sum(weights.values())
    for family, (own_catch, own_fa) in IOWALL.items():
        t0 = time.monotonic()
        budgets = (FA_REPLAY, own_fa)
        cuts = threshold(family, rng, args.quiet, budgets)
        by_fall = [caught(family, rng, args.series, f, cuts) for f in FALLS]
        n = [weights.get((family, f), 0) for f in FALLS]
        for j, b in enumerate(budgets):
            cells = "  ".join(f"{by_fall[i][j]:6.1%}" for i in range(len(FALLS)))
            fam = sum(n[i] * by_fall[i][j] for i in range(len(FALLS)))
            pooled[j] += fam
            who = "the budget" if j == 0 else "iowall's own"
            line = f"  {family:9s} at {b:4.2f}/100 ({who:12s}): {cells}  family {fam / max(sum(n), 1):6.1%}"
            print(line + (f"   iowall {own_catch:5.1%} ({sum(n)} falls)" if j == 1 else ""))
        print(f"    ({time.monotonic() - t0:.0f} s)")
    own, own_fa = IOWALL_POOLED
    print(
        f"  pooled over corpus 9's {total} falls: {pooled[0] / total:6.1%} at {FA_REPLAY}/100 in every "
        f"family, {pooled[1] / total:6.1%} at iowall's own in each; iowall {own:.1%} at {own_fa}"
    )


if __name__ == "__main__":
    main()
