"""compare when a side's runs come in invocations of several runs: the runs taken as independent
(``stats.compare_samples``, compare before 2026-12-03) against the invocation as the unit
(``invocations.by_invocation``), on the same simulated sides, side by side.

Synthetic data on the log scale: every result has a total spread of 3% (CV), of which a share
ICC is the invocation's (the machine's state of that minute, shared by its runs) and the rest
each run's own. Each cell draws the same number of invocations on both sides (or one on one
side: the shape of a label measured once against one measured several times) and gives, per
rule, the share of comparisons marked with no change (false positives, at a nominal 5%) and
with the new side 5% higher (power).

Run:  .venv/bin/python benchmarks/compare_invocations.py [--cases 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

sys.path.insert(0, "src")

from iowall.analysis.regress.invocations import by_invocation  # noqa: E402
from iowall.analysis.regress.stats import compare_samples  # noqa: E402

CV = 0.03
ICCS = (0.0, 0.2, 0.5, 0.8)
#: (base invocations, new invocations, runs an invocation)
SHAPES = ((2, 2, 5), (3, 3, 5), (3, 3, 3), (5, 5, 2), (2, 2, 2), (1, 3, 5), (3, 1, 5), (1, 2, 5), (2, 1, 5))


def _side(rng: random.Random, k: int, m: int, icc: float, shift: float) -> tuple[list[float], list[str]]:
    between, within = CV * math.sqrt(icc), CV * math.sqrt(1.0 - icc)
    values, batches = [], []
    for i in range(k):
        off = rng.gauss(0.0, between)
        for _ in range(m):
            values.append(1000.0 * math.exp(shift + off + rng.gauss(0.0, within)))
            batches.append(str(i))
    return values, batches


def cell(
    rng: random.Random, shape: tuple[int, int, int], icc: float, shift: float, cases: int
) -> tuple[float, float]:
    """Share marked (runs, by invocation) over ``cases`` comparisons of one cell."""
    kb, kn, m = shape
    marked = [0, 0]
    for _ in range(cases):
        b, bb = _side(rng, kb, m, icc, 0.0)
        n, nb = _side(rng, kn, m, icc, shift)
        marked[0] += compare_samples(b, n, direction="higher").significant
        marked[1] += by_invocation(b, n, bb, nb, direction="higher").significant
    return marked[0] / cases, marked[1] / cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"total CV {CV:.0%}, ICC the invocations' share of its variance; "
        f"{a.cases} comparisons a cell, seed {a.seed}"
    )
    print(
        f"{'shape':>9} {'ICC':>4} | {'no change: runs':>15} {'by inv':>6} | "
        f"{'5% higher: runs':>15} {'by inv':>6}"
    )
    worst = [0.0, 0.0]
    for shape in SHAPES:
        for icc in ICCS:
            rng = random.Random(a.seed * 100_000 + SHAPES.index(shape) * 100 + int(icc * 10))
            fp = cell(rng, shape, icc, 0.0, a.cases)
            pw = cell(rng, shape, icc, math.log(1.05), a.cases)
            worst = [max(worst[0], fp[0]), max(worst[1], fp[1])]
            name = f"{shape[0]}:{shape[1]}x{shape[2]}"
            print(
                f"{name:>9} {icc:4.1f} | {fp[0]:15.1%} {fp[1]:6.1%} | {pw[0]:15.1%} {pw[1]:6.1%}", flush=True
            )
    print(
        f"worst false positives: runs {worst[0]:.1%}, by invocation {worst[1]:.1%}; "
        f"{time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
