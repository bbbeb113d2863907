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

Run:  .venv/bin/python benchmarks/stat_power.py [--cases 2000] [--seed 1] [--noise lognormal]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import numpy as np
from scipy import stats as sst

from iowall.analysis.stats import compare_samples

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--cases", type=int, default=2000, help="simulated comparisons per cell")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", choices=NOISES, default="lognormal")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    rates = simulate(args.cases, args.seed, args.noise)
    print(table(rates, args.cases, args.noise))
    print(f"\n({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
