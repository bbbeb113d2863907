"""Change-point detection: iowall's method beside Apache Otava's defaults and PELT (ruptures).

Synthetic series that look like this field's data, 60 runs each, either one run per kernel
(60x1) or 3 runs for each of 20 kernels (20x3), with noise families:

- ``cv1``, ``cv3``, ``cv10``, ``cv30``: log-normal, coefficient of variation 1, 3, 10, 30%;
- ``t3``: Student-t noise with 3 degrees of freedom (heavy tails), standard deviation 5%;
- ``outlier``: CV 3%, and each run with probability 5% hit by a neighbour (15-40% slower);
- ``drift``: CV 3% with a slow linear drift of -4% over the series, no step;
- ``bimodal``: two modes 8% apart (30% of runs in the upper one), CV 2% in each, no step;
- ``boot``: CV 2% between runs and another 2% between kernels (each boot lands a little
  differently: the runs of one kernel share an offset), no step.

A step of 0 (none), 2, 5, 10 or 25% (either sign) starts at a kernel boundary with at least
9 runs either side. Reported per method and step: recall (a detection within ±3 runs of the
step), mean position error of those found, and false alarms per 100 series (detections that
are not the first match of a true step).

Methods:

- iowall: ``iowall.analysis.regress.changepoints.analyse`` with the kernels as groups (``unit="run"``,
  the default, and ``unit="group"``: whole kernels shuffled by the permutation test);
- otava: ``otava.analysis.compute_change_points(series, window_len=50, max_pvalue=0.001,
  min_magnitude=0.0)``, the defaults of Otava's ``AnalysisOptions`` (E-Divisive means split
  in sliding windows with a t-test at 10x max_pvalue, then the t-test merge step);
- pelt: ``ruptures.Pelt(model="l2", min_size=3, jump=runs per kernel)`` on log values with
  penalty ``c * sigma^2 * log(n)``, sigma from the MAD of first differences.

Thresholds are calibrated first on no-step series from another seed: Otava's false-alarm rate
there is the target, and iowall's alpha and PELT's ``c`` are the loosest on their grids whose
false-alarm rate is no higher. The reverse check tightens Otava's ``max_pvalue`` (same call,
other defaults kept) to iowall's default ``ALPHA``'s false-alarm rate. Then all run on the
same evaluation series, with iowall at its default alpha as well.

Run:  flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/changepoints.py [--series 60]
Needs the ``bench`` extra (apache-otava, ruptures).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import ruptures
from otava.analysis import compute_change_points

from iowall.analysis.regress.changepoints import ALPHA, Unit, analyse

RUNS = 60
LAYOUTS = {"60x1": 1, "20x3": 3}
FAMILIES = ("cv1", "cv3", "cv10", "cv30", "t3", "outlier", "drift", "bimodal", "boot")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
TOLERANCE = 3
ALPHAS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
PELT_CS = (2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)
OTAVA_PS = (0.001, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)


@dataclass(frozen=True)
class Series:
    """One synthetic series: values, kernel labels, runs per kernel, the step's index or -1."""

    family: str
    layout: str
    step: float
    values: list[float]
    groups: list[str]
    per: int
    truth: int


def lognormal(rng: np.random.Generator, cv: float, n: int) -> np.ndarray:
    """Log-normal factors with median 1 and the given coefficient of variation."""
    return np.exp(rng.normal(0.0, math.sqrt(math.log1p(cv * cv)), n))


def noise(rng: np.random.Generator, family: str, n: int, per: int) -> np.ndarray:
    """Multiplicative noise of one family, median about 1 (``per`` runs per kernel)."""
    if family.startswith("cv"):
        return lognormal(rng, int(family[2:]) / 100.0, n)
    if family == "t3":
        return np.exp(0.05 * rng.standard_t(3, n) / math.sqrt(3.0))
    if family == "outlier":
        hit = rng.random(n) < 0.05
        return lognormal(rng, 0.03, n) * np.where(hit, rng.uniform(0.60, 0.85, n), 1.0)
    if family == "drift":
        return lognormal(rng, 0.03, n) * np.linspace(1.0, 0.96, n)
    if family == "bimodal":
        return lognormal(rng, 0.02, n) * np.where(rng.random(n) < 0.3, 1.08, 1.0)
    if family == "boot":
        return lognormal(rng, 0.02, n) * np.repeat(lognormal(rng, 0.02, n // per), per)
    raise ValueError(family)


def make(rng: np.random.Generator, family: str, layout: str, step: float) -> Series:
    """One series with a step of ``step`` (random sign) at a kernel boundary, or none."""
    per = LAYOUTS[layout]
    x = 1000.0 * noise(rng, family, RUNS, per)
    truth = -1
    if step > 0.0:
        kernels = RUNS // per
        lo, hi = math.ceil(9 / per), kernels - math.ceil(9 / per)
        truth = int(rng.integers(lo, hi + 1)) * per
        x[truth:] *= 1.0 + step if rng.random() < 0.5 else 1.0 / (1.0 + step)
    groups = [f"k{i // per}" for i in range(RUNS)]
    return Series(family, layout, step, x.tolist(), groups, per, truth)


def run_iowall(alpha: float, unit: Unit = "run") -> Callable[[Series], list[int]]:
    """iowall's detector at significance ``alpha``, kernels as groups."""
    return lambda s: [c.index for c in analyse(s.values, s.groups, alpha=alpha, unit=unit).points]


def run_otava_p(p: float) -> Callable[[Series], list[int]]:
    """Otava's E-Divisive with its defaults but ``max_pvalue`` = p."""

    def run(s: Series) -> list[int]:
        cps, _ = compute_change_points(list(s.values), window_len=50, max_pvalue=p, min_magnitude=0.0)
        return [int(c.index) for c in cps]

    return run


def run_otava(s: Series) -> list[int]:
    """Apache Otava's E-Divisive with its default options (see the module docstring); a list,
    as Otava's own ``Series.analyze`` passes (its detector slices windows only from lists)."""
    cps, _ = compute_change_points(list(s.values), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    return [int(c.index) for c in cps]


def run_pelt(c: float) -> Callable[[Series], list[int]]:
    """PELT (l2 cost on log values), penalty c * sigma^2 * log n with a robust sigma."""

    def run(s: Series) -> list[int]:
        y = np.log(np.asarray(s.values))
        d = np.diff(y)
        sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        pen = c * max(sigma, 1e-9) ** 2 * math.log(y.size)
        bkps = ruptures.Pelt(model="l2", min_size=3, jump=s.per).fit(y).predict(pen=pen)
        return [int(b) for b in bkps[:-1]]

    return run


@dataclass
class Tally:
    """Counts for one method over a set of series."""

    series: int = 0
    stepped: int = 0
    found: int = 0
    error: int = 0
    false: int = 0

    def add(self, s: Series, dets: Sequence[int]) -> None:
        self.series += 1
        matched = False
        if s.truth >= 0:
            self.stepped += 1
            near = [abs(d - s.truth) for d in dets if abs(d - s.truth) <= TOLERANCE]
            if near:
                matched = True
                self.found += 1
                self.error += min(near)
        self.false += len(dets) - (1 if matched else 0)

    def fa100(self) -> float:
        return 100.0 * self.false / max(self.series, 1)

    def cells(self) -> str:
        rec = f"{self.found / self.stepped:6.1%}" if self.stepped else "     -"
        err = f"{self.error / self.found:4.2f}" if self.found else "   -"
        return f"{rec} {err} {self.fa100():5.1f}"


def tally(method: Callable[[Series], list[int]], series: Sequence[Series]) -> Tally:
    t = Tally()
    for s in series:
        t.add(s, method(s))
    return t


def build(seed: int, per_cell: int, steps: Sequence[float]) -> list[Series]:
    """``per_cell`` series for each family, layout and step, from a fixed seed."""
    rng = np.random.default_rng(seed)
    return [
        make(rng, f, lay, st) for f in FAMILIES for lay in LAYOUTS for st in steps for _ in range(per_cell)
    ]


def calibrate(cal: list[Series]) -> tuple[float, float, float]:
    """(Otava's false alarms per 100 no-step series, iowall's alpha, PELT's c) at that rate."""
    target = tally(run_otava, cal).fa100()
    print(f"calibration: {len(cal)} no-step series; Otava defaults: {target:.2f} false alarms/100")
    for name, m in (("otava", run_otava), (f"iowall a={ALPHA:g}", run_iowall(ALPHA))):
        per = {f: tally(m, [s for s in cal if s.family == f]).fa100() for f in FAMILIES}
        print(f"  {name} by family: " + ", ".join(f"{f} {v:.1f}" for f, v in per.items()))
    alpha = ALPHAS[0]
    for a in ALPHAS:
        fa = tally(run_iowall(a), cal).fa100()
        print(f"  iowall alpha={a:g}: {fa:.2f}")
        if fa <= target:
            alpha = a
    c_best = PELT_CS[-1]
    for c in reversed(PELT_CS):
        fa = tally(run_pelt(c), cal).fa100()
        print(f"  pelt c={c:g}: {fa:.2f}")
        if fa > target:
            break
        c_best = c
    return target, alpha, c_best


def otava_at(cal: list[Series], target: float) -> float:
    """The loosest Otava ``max_pvalue`` on a grid whose false alarms are no more than ``target``
    (the reverse check: Otava tightened to iowall's default rate)."""
    best = OTAVA_PS[-1]
    for p in OTAVA_PS:
        fa = tally(run_otava_p(p), cal).fa100()
        print(f"  otava max_pvalue={p:g}: {fa:.2f}")
        if fa <= target:
            return p
    return best


def report(methods: dict[str, Callable[[Series], list[int]]], ev: list[Series]) -> None:
    """Tables: by step over all families, then recall by family at 5 and 10%."""
    res: dict[str, dict[tuple[str, str, float], Tally]] = {}
    for name, m in methods.items():
        t0 = time.time()
        cells: dict[tuple[str, str, float], Tally] = {}
        for s in ev:
            cells.setdefault((s.family, s.layout, s.step), Tally()).add(s, m(s))
        res[name] = cells
        print(f"{name}: {time.time() - t0:.1f} s for {len(ev)} series")
    head = "".join(f" | {n:^19}" for n in methods)
    print(f"\nall families and layouts (recall ±{TOLERANCE} runs, mean |error| runs, false alarms/100)")
    print(f"step  {head}")
    for st in STEPS:
        row = ""
        for name in methods:
            t = Tally()
            for (_, _, s), c in res[name].items():
                if s == st:
                    t.series += c.series
                    t.stepped += c.stepped
                    t.found += c.found
                    t.error += c.error
                    t.false += c.false
            row += f" | {t.cells()}"
        print(f"{st:4.0%}  {row}")
    print("\nrecall at 5% / 10% steps and false alarms/100 (all steps), by family and layout")
    for f in FAMILIES:
        for lay in LAYOUTS:
            row = ""
            for name in methods:
                c5, c10 = res[name][(f, lay, 0.05)], res[name][(f, lay, 0.10)]
                fa = sum(res[name][(f, lay, st)].false for st in STEPS)
                n = sum(res[name][(f, lay, st)].series for st in STEPS)
                row += f" | {c5.found / c5.stepped:5.0%} {c10.found / c10.stepped:5.0%} {100.0 * fa / n:6.1f}"
            print(f"{f:8} {lay:5}{row}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=60, help="series per family, layout and step")
    ap.add_argument(
        "--calibration", type=int, default=100, help="no-step series per family and layout for calibration"
    )
    ap.add_argument("--seed", type=int, default=12)
    a = ap.parse_args()
    t0 = time.time()
    cal = build(a.seed + 1000, a.calibration, (0.0,))
    target, alpha, c = calibrate(cal)
    own = tally(run_iowall(ALPHA), cal).fa100()
    print(f"reverse: Otava tightened to iowall's default (alpha={ALPHA:g}: {own:.2f}/100)")
    op = otava_at(cal, own)
    print(
        f"chosen: iowall alpha={alpha:g}, pelt c={c:g} (target {target:.2f}/100); "
        f"otava max_pvalue={op:g} at iowall's default\n"
    )
    ev = build(a.seed, a.series, STEPS)
    methods = {
        f"iowall a={alpha:g}": run_iowall(alpha),
        "otava defaults": run_otava,
        f"pelt c={c:g}": run_pelt(c),
        f"iowall a={ALPHA:g}": run_iowall(ALPHA),
        f"otava p={op:g}": run_otava_p(op),
        f"iowall a={ALPHA:g} group": run_iowall(ALPHA, "group"),
    }
    report(methods, ev)
    print(f"\n{time.time() - t0:.0f} s in all; seed {a.seed} (calibration seed {a.seed + 1000})")


if __name__ == "__main__":
    main()
