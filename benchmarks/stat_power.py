"""Power of iowall's comparison rule against the rules of mmtests and lkp-tests.

Synthetic data: log-normal repeats with a 3% coefficient of variation, n runs per side,
the new side's median higher by 0% (false positives), 2%, 5% or 10%. For each rule and n
the table gives its false-positive rate and its power (the fraction of cases flagged as
an improvement), and in parentheses the power of the two-sided pooled two-sample t-test on
log values at the same false-positive rate: the most any test can do on this data.

Rules (written out here, not imported from those projects):

- iowall: ``compare_samples`` (Hodges–Lehmann ratio, calibrated bootstrap interval,
  2% floor on the estimate).
- mmtests: Welch's t-test on the means at 5%, degrees of freedom rounded down, as its
  docs/regression-detection.md describes (it uses harmonic means for rates; at 3% CV they
  differ from arithmetic means by under 0.05%, so arithmetic means are used here).
- CI separation: a change is flagged when the 95% Student-t confidence intervals of the
  two means do not overlap (the informal rule often applied to mmtests-style tables).
- lkp-tests: flagged when the ranges [min, max] of the two sides do not overlap and the
  means differ by more than 5%.

``--noise outliers`` replaces the log-normal noise by the same noise plus an occasional bad
run (each run independently 15% slow with probability 10%); ``--noise t3`` uses Student-t
noise with 3 degrees of freedom (heavy tails) scaled to the same standard deviation.

``--gate`` instead measures the cells where a regression gate lives: unequal sizes (2, 3, 5,
10, 20, 50 runs a side, every pair, plus a few sizes between the calibration grid's), equal
and 1:3 spreads (CV 3% against 9%, either side the wider), normal (on the raw scale),
log-normal and t3 noise. Per cell: iowall's false-positive rate with the upper end of its 95%
Monte-Carlo interval, and its power for a 5% change, next to Welch's t-test on the raw
values (both at nominal 5%). It ends with the time one ``compare_samples`` call takes.

Run:  .venv/bin/python benchmarks/stat_power.py [--cases 2000] [--seed 1] [--noise lognormal]
      flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/stat_power.py --gate [--cases 20000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import numpy as np
from scipy import stats as sst

from iowall.analysis.regress.stats import compare_samples, rule_calls

CV = 0.03
LOG_SD = math.sqrt(math.log1p(CV**2))
SHIFTS = (0.0, 0.02, 0.05, 0.10)
SIZES = (3, 5, 10)

# A rule maps (base, new) to +1 (new better, i.e. higher), -1 (worse) or 0 (no call).
Rule = Callable[[np.ndarray, np.ndarray], int]


def rule_iowall(b: np.ndarray, x: np.ndarray) -> int:
    c = compare_samples(b.tolist(), x.tolist(), direction="higher")
    return 0 if not c.significant else (1 if c.better else -1)


def rule_mmtests_welch(b: np.ndarray, x: np.ndarray) -> int:
    m, n = b.size, x.size
    vb, vx = b.var(ddof=1) / m, x.var(ddof=1) / n
    if vb + vx == 0:
        return 0
    k = (m - 1) * (n - 1) * (vb + vx) ** 2 / ((n - 1) * vb**2 + (m - 1) * vx**2)
    k = max(1, math.floor(k))
    t = (x.mean() - b.mean()) / math.sqrt(vb + vx)
    if abs(t) > sst.t.ppf(0.975, k):
        return 1 if t > 0 else -1
    return 0


def rule_ci_separation(b: np.ndarray, x: np.ndarray) -> int:
    def ci(a: np.ndarray) -> tuple[float, float]:
        h = sst.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)
        return a.mean() - h, a.mean() + h

    (bl, bh), (xl, xh) = ci(b), ci(x)
    if xl > bh:
        return 1
    if xh < bl:
        return -1
    return 0


def rule_lkp(b: np.ndarray, x: np.ndarray) -> int:
    change = x.mean() / b.mean() - 1.0
    if x.min() > b.max() and change > 0.05:
        return 1
    if x.max() < b.min() and change < -0.05:
        return -1
    return 0


RULES: dict[str, Rule] = {
    "iowall": rule_iowall,
    "mmtests (Welch t)": rule_mmtests_welch,
    "CI separation": rule_ci_separation,
    "lkp-tests": rule_lkp,
}


def t_test_power(n: int, shift: float, alpha: float) -> float:
    """Exact power of the pooled two-sample t-test on log values, improvement side only."""
    if alpha <= 0:
        return 0.0
    df = 2 * n - 2
    ncp = math.log1p(shift) / LOG_SD * math.sqrt(n / 2.0)
    crit = float(sst.t.ppf(1.0 - alpha / 2.0, df))
    return float(sst.nct.sf(crit, df, ncp))


NOISES = ("lognormal", "outliers", "t3")


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    """Multiplicative noise factors with median 1 and a 3% log standard deviation."""
    z = rng.normal(0.0, LOG_SD, shape)
    if kind == "t3":
        z = rng.standard_t(3, shape) * LOG_SD / math.sqrt(3.0)
    elif kind == "outliers":
        z = z + np.where(rng.random(shape) < 0.10, math.log(0.85), 0.0)
    return np.exp(z)


def simulate(cases: int, seed: int, kind: str) -> dict[tuple[str, int, float], float]:
    """Flag rates: for shift 0 any call (false positive), else calls of 'better'."""
    out: dict[tuple[str, int, float], float] = {}
    for n in SIZES:
        for shift in SHIFTS:
            rng = np.random.default_rng([seed, n, int(shift * 1000)])
            base = noise(rng, kind, (cases, n))
            new = (1.0 + shift) * noise(rng, kind, (cases, n))
            for name, rule in RULES.items():
                calls = np.array([rule(base[i], new[i]) for i in range(cases)])
                rate = np.mean(calls != 0) if shift == 0 else np.mean(calls == 1)
                out[(name, n, shift)] = float(rate)
    return out


def table(rates: dict[tuple[str, int, float], float], cases: int, kind: str) -> str:
    lines = [
        f"{kind} noise, 3% log standard deviation, {cases} simulated comparisons per cell; "
        "(t) = power of the t-test on log values at the same false-positive rate "
        "(for normal noise)",
        "",
        "| n/side | rule | false pos. | 2% shift | 5% shift | 10% shift |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for n in SIZES:
        for name in RULES:
            fpr = rates[(name, n, 0.0)]
            cells = [f"{rates[(name, n, s)]:.2f} ({t_test_power(n, s, fpr):.2f})" for s in SHIFTS[1:]]
            lines.append(f"| {n} | {name} | {fpr:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------- gate cells

GATE_SIZES = (2, 3, 5, 10, 20, 50)
#: Sizes between the calibration grid's (interpolated) and beyond it (its edge).
GATE_EXTRA = ((4, 9), (9, 11), (7, 25), (25, 40), (2, 100), (3, 100))
#: (base CV, new CV): equal spreads and 1:3 either way.
GATE_SPREADS = ((0.03, 0.03), (0.03, 0.09), (0.09, 0.03))
GATE_NOISES = ("normal", "lognormal", "t3")


def gate_values(rng: np.random.Generator, kind: str, shape: tuple[int, int], cv: float) -> np.ndarray:
    """Positive run values with median about 1 and coefficient of variation ``cv``."""
    if kind == "normal":  # normal on the raw scale, as many throughput figures look
        return np.maximum(1.0 + cv * rng.standard_normal(shape), 1e-6)
    sd = math.sqrt(math.log1p(cv**2))
    if kind == "t3":
        return np.exp(rng.standard_t(3, shape) * sd / math.sqrt(3.0))
    return np.exp(rng.normal(0.0, sd, shape))


def welch_calls(b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Welch's t-test on raw values at 5% (mmtests' rule), vectorised: +1, -1 or 0."""
    p = sst.ttest_ind(x, b, axis=1, equal_var=False).pvalue
    return np.where(p < 0.05, np.sign(x.mean(axis=1) - b.mean(axis=1)), 0).astype(int)


def gate_cells() -> list[tuple[int, int]]:
    pairs = [(m, n) for i, m in enumerate(GATE_SIZES) for n in GATE_SIZES[i:]]
    return pairs + list(GATE_EXTRA)


def gate_table(cases: int, seed: int) -> tuple[str, float]:
    """The gate cells as a markdown table, and the worst upper bound of iowall's false rate."""
    lines = [
        f"{cases} simulated comparisons per cell and shift; fp: false-positive rate "
        "(any call, no change), [..]: upper end of its 95% Monte-Carlo interval; "
        "power: calls of 'higher' for a 5% increase",
        "",
        "| base:new runs | CV base:new | noise | iowall fp | Welch fp | iowall power | Welch power |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for m, n in gate_cells():
        for cvb, cvx in GATE_SPREADS:
            for kind in GATE_NOISES:
                rng = np.random.default_rng(
                    [seed, m, n, int(cvb * 100), int(cvx * 100), GATE_NOISES.index(kind)]
                )
                cells = []
                for shift in (0.0, 0.05):
                    b = gate_values(rng, kind, (cases, m), cvb)
                    x = (1.0 + shift) * gate_values(rng, kind, (cases, n), cvx)
                    ours = rule_calls(np.log(b), np.log(x))
                    theirs = welch_calls(b, x)
                    if shift == 0.0:
                        cells += [float(np.mean(ours != 0)), float(np.mean(theirs != 0))]
                    else:
                        cells += [float(np.mean(ours == 1)), float(np.mean(theirs == 1))]
                fp = cells[0]
                upper = fp + 1.96 * math.sqrt(max(fp * (1 - fp), 1e-12) / cases)
                worst = max(worst, upper)
                lines.append(
                    f"| {m}:{n} | {cvb:.0%}:{cvx:.0%} | {kind} | {fp:.3f} [{upper:.3f}] | "
                    f"{cells[1]:.3f} | {cells[2]:.2f} | {cells[3]:.2f} |"
                )
    return "\n".join(lines), worst


def time_per_comparison(n: int, reps: int = 300) -> float:
    """Seconds per ``compare_samples`` call with n runs a side (after a warm-up call)."""
    rng = np.random.default_rng(n)
    b, x = (np.exp(rng.normal(0, LOG_SD, (reps, n))) for _ in range(2))
    compare_samples(b[0].tolist(), x[0].tolist(), direction="higher")
    t0 = time.perf_counter()
    for i in range(reps):
        compare_samples(b[i].tolist(), x[i].tolist(), direction="higher")
    return (time.perf_counter() - t0) / reps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--cases", type=int, default=2000, help="simulated comparisons per cell")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", choices=NOISES, default="lognormal")
    ap.add_argument("--gate", action="store_true", help="the gate cells (unequal sizes and spreads)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.gate:
        text, worst = gate_table(args.cases, args.seed)
        print(text)
        print(f"\nworst upper bound of iowall's false-positive rate: {worst:.3f}")
        print(
            "time per compare_samples call: "
            + ", ".join(f"{n} a side {time_per_comparison(n) * 1e6:.0f} us" for n in (3, 10, 50))
        )
        print(f"\n({time.monotonic() - t0:.0f} s)")
        return 0
    rates = simulate(args.cases, args.seed, args.noise)
    print(table(rates, args.cases, args.noise))
    print(f"\n({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
