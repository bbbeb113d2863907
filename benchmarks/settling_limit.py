"""How many of the batch search's false change points on moves that settle could any method
remove? An upper bound, from an oracle that knows the exact curve.

Corpus 6's settling families (``sigmoid``: 3-8% over 10-25 results; ``thermal``: a sag of
3-6% following a busy/idle chain with a time constant of 5-10 results; ``spline``: a smooth
curve of SD 1-2.5%) are drawn afresh from its own generator (``corpus6._noise``, another seed)
with their white noise held back, so the noise-free curve is known; the series is the curve
plus white noise of the family's own CV. iowall's change points on it are all false (no
family has a step). For each series with one, the oracle compares the exact curve (its
amplitude fitted) with the best single step (any place, >= 3 results a side) by the Gaussian
log-likelihood ratio n log(RSS_step / RSS_curve): where it is <= 0 even the true curve
explains the series no better than a step, and no method can tell the move from a change.

Beside it, the price of acting on such evidence without the oracle: a method that searches
logistic moves 10-25 results wide (any centre) instead of knowing the curve, on true steps of
2, 5 and 10% under white CV 1-2%: the share of steps in which a logistic move beats the step
by LR > 4 (the steps such a veto would drop), and the same on the sigmoid series with a
change point (the false ones it would remove).

Then the same oracle on corpus 6 itself (both seeds, 307 and 1307): its series rebuilt with
each no-change series' curve recorded (the white noise's draw taken from the same stream, so
the series are the corpus's own), and the false change points per 100 no-change series that
would be left if every change point in a series whose exact curve fits better than a step
(LR > 0) were dropped: a floor no method reaches without knowing the curve (fgn's "curve"
is its noise, so its change points are left as found); and those left by the logistic-move
veto at LR > 4, which a method could apply.

Run:  cd benchmarks && PYTHONPATH=/tmp/benchdeps ../.venv/bin/python settling_limit.py [--series 120]
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import corpus6
import numpy as np

from iowall.analysis.regress.changepoints import analyse

N = corpus6.RUNS
FAMILIES = ("sigmoid", "thermal", "spline")
T = np.arange(N, dtype=np.float64)
#: Every single step the batch search may place (>= 3 results a side).
STEPS = np.array([(T >= c).astype(np.float64) for c in range(3, N - 2)])
#: Logistic moves 10-25 results from 10% to 90% (6 widths), centred anywhere in -5..N+4.
LOGISTIC = np.array(
    [
        1.0 / (1.0 + np.exp(-(T - c) / (w / (2.0 * math.log(9.0)))))
        for w in np.geomspace(10.0, 25.0, 6)
        for c in np.arange(-5.0, N + 5.0)
    ]
)


class _Quiet:
    """A generator whose first normal draw is zeros (the white noise held back) and which
    remembers its last uniform draw (the white noise's CV, the family's last parameter)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.first, self.last = rng, True, 0.0
        self.draws: list[tuple[str, Any]] = []

    def normal(self, *a: Any, **k: Any) -> Any:
        out = self.rng.normal(*a, **k)
        self.draws.append(("normal", out))
        if self.first:
            self.first = False
            return np.zeros_like(out)
        return out

    def uniform(self, *a: Any, **k: Any) -> Any:
        self.last = self.rng.uniform(*a, **k)
        self.draws.append(("uniform", self.last))
        return self.last

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.rng, name)

        def drawn(*a: Any, **k: Any) -> Any:
            out = method(*a, **k)
            self.draws.append((name, out))
            return out

        return drawn


def best_rss(y: np.ndarray, shapes: np.ndarray) -> float:
    """Least residual sum of squares of y on an intercept and one of ``shapes`` (rows)."""
    yc = y - y.mean()
    g = shapes - shapes.mean(axis=1, keepdims=True)
    nn = np.maximum(np.sum(g * g, axis=1), 1e-12)
    return float(np.min(np.sum(yc * yc) - (g @ yc) ** 2 / nn))


def lr(y: np.ndarray, alternative: np.ndarray) -> float:
    """n log(RSS of the best step / RSS of the best alternative shape): > 0 favours the shape."""
    return N * math.log(best_rss(y, STEPS) / best_rss(y, alternative))


def family_rows(family: str, count: int, seed: int) -> list[tuple[int, float, float]]:
    """(change points found, exact-curve LR, logistic-family LR) for ``count`` fresh series."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(count):
        quiet = _Quiet(rng)
        curve = corpus6._noise(quiet, family, N)  # type: ignore[arg-type]
        y = curve + quiet.last * rng.normal(0.0, 1.0, N)
        found = len(analyse(1000.0 * np.exp(y)).points)
        rows.append((found, lr(y, curve[None, :]), lr(y, LOGISTIC)))
    return rows


def step_cost(size: float, count: int, seed: int) -> float:
    """Share of true steps of ``size`` (white CV 1-2%) a logistic move beats by LR > 4."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(count):
        y = math.log1p(size) * (T >= rng.integers(15, 46)) + rng.uniform(0.01, 0.02) * rng.normal(0.0, 1.0, N)
        hits += lr(y, LOGISTIC) > 4.0
    return hits / count


class _Recorder:
    """corpus6._noise wrapped: each call's curve (white noise zeroed, from the same draws)."""

    def __init__(self) -> None:
        self.curves: list[np.ndarray] = []
        self.original = corpus6._noise

    def __call__(self, rng: np.random.Generator, family: str, n: int) -> np.ndarray:
        quiet = _Quiet(rng)
        curve = self.original(quiet, family, n)  # type: ignore[arg-type]
        self.curves.append(curve)
        return self.original(_Replay(quiet), family, n)  # type: ignore[arg-type]


class _Replay:
    """Replays the draws a _Quiet generator saw, the white noise unzeroed (so a second call
    of the family's code yields the corpus's own series without advancing the stream)."""

    def __init__(self, quiet: _Quiet) -> None:
        self.draws = list(quiet.draws)

    def __getattr__(self, name: str) -> Any:
        def next_draw(*a: Any, **k: Any) -> Any:
            kind, value = self.draws.pop(0)
            assert kind == name, (kind, name)
            return value

        return next_draw


def corpus6_floor(seed: int) -> str:
    """Corpus 6 at ``seed``: false change points per 100 no-change series, as found and as an
    oracle knowing each curve would leave them (module docstring)."""
    rec = _Recorder()
    corpus6._noise = rec
    try:
        series = corpus6.build(seed, 12)
    finally:
        corpus6._noise = rec.original
    null = found = left = real = 0
    by: dict[str, list[int]] = {}
    for s, curve in zip(series[: len(rec.curves)], rec.curves, strict=True):  # excursions last, no curve
        if s.changes:
            continue
        null += 1
        cuts = len(analyse(s.values).points)
        found += cuts
        if not cuts:
            continue
        y = np.log(np.asarray(s.values))
        settling = s.family in FAMILIES  # fgn's "curve" is its noise: no oracle there
        kept = 0 if settling and lr(y, curve[None, :]) > 0.0 else cuts
        kept_real = 0 if settling and lr(y, LOGISTIC) > 4.0 else cuts
        left += kept
        real += kept_real
        cell = by.setdefault(s.family, [0, 0, 0])
        for i, v in enumerate((cuts, kept, kept_real)):
            cell[i] += v
    fams = ", ".join(f"{f} {c[0]} -> {c[1]} / {c[2]}" for f, c in by.items())
    return (
        f"corpus 6 seed {seed}: false change points per 100 no-change series {100.0 * found / null:.1f}; "
        f"left by the exact-curve oracle (LR > 0) {100.0 * left / null:.1f}, by a logistic-move veto "
        f"(LR > 4) {100.0 * real / null:.1f} ({fams})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=120, help="fresh series per family")
    ap.add_argument("--seed", type=int, default=9001)
    a = ap.parse_args()
    t0 = time.time()
    print(f"{a.series} fresh series a family (seed {a.seed}), {N} results each, no true change")
    print("family    with a cut  false cuts/100  exact curve fits better (LR>0)  by LR>4  logistic LR>4")
    for i, fam in enumerate(FAMILIES):
        rows = family_rows(fam, a.series, a.seed + i)
        cut = [r for r in rows if r[0]]
        false = sum(r[0] for r in rows)
        better = sum(r[1] > 0.0 for r in cut) / max(len(cut), 1)
        clear = sum(r[1] > 4.0 for r in cut) / max(len(cut), 1)
        logi = sum(r[2] > 4.0 for r in cut) / max(len(cut), 1)
        cells = f"{100.0 * false / a.series:>14.1f}  {better:>30.0%}  {clear:>7.0%}  {logi:>13.0%}"
        print(f"{fam:<9} {len(cut):>10}  {cells}")
    sizes = (0.02, 0.05, 0.10)
    costs = ", ".join(f"{s:.0%}: {step_cost(s, 400, a.seed + 10 + k):.1%}" for k, s in enumerate(sizes))
    print(f"true steps a logistic move beats by LR > 4 (400 each, white CV 1-2%): {costs}")
    for seed in (307, 1307):
        print(corpus6_floor(seed))
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
