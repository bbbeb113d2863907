"""The change-point search's time on a long history: 1,000 log-normal runs (CV 3%) with three
steps and a 30-run excursion inside a 200-run segment, searched once in a fresh process (the
permutation nulls drawn), again (the nulls cached), and rounded into 1% steps (ties: each
segment's own permutations). Prints the seconds and the change points found. Then the
replay's pattern: every prefix (12 runs on) of 20 series of 60 runs, each with a step, searched
in turn, as ``iowall gate --series`` does one result at a time (the moving level's
eigendecompositions are cached by length).

Run a tree against another side by side (no other job measuring):
  for t in /tmp/old /work/main; do
    flock /tmp/iowall-tests.lock env PYTHONPATH=$t/src .venv/bin/python benchmarks/changepoints_time.py
  done
"""

from __future__ import annotations

import math
import time

import numpy as np

from iowall.analysis.regress.changepoints import analyse


def series(seed: int = 7) -> np.ndarray:
    """Runs 300-599 5% slower, 600 on back up, 700-729 8% lower again, 800 on 4% lower."""
    rng = np.random.default_rng(seed)
    x = 1000.0 * np.exp(rng.normal(0.0, math.sqrt(math.log1p(0.03**2)), 1000))
    x[300:] *= 0.95
    x[600:] *= 1.05
    x[700:730] *= 0.92
    x[800:] *= 0.96
    return x


def timed(values: np.ndarray) -> tuple[float, list[int]]:
    t = time.perf_counter()
    found = analyse(values.tolist())
    return time.perf_counter() - t, [p.index for p in found.points]


def prefixes(count: int = 20) -> tuple[float, int]:
    """Seconds to search every prefix of ``count`` 60-run series (CV 2%, a 5% step), and how
    many change points were found in all."""
    rng = np.random.default_rng(11)
    t = time.perf_counter()
    found = 0
    for _ in range(count):
        x = 1000.0 * np.exp(rng.normal(0.0, 0.02, 60))
        x[int(rng.integers(15, 45)) :] *= 0.95
        for n in range(12, 61):
            found += len(analyse(x[:n].tolist()).points)
    return time.perf_counter() - t, found


def main() -> None:
    x = series()
    first, points = timed(x)
    again, _ = timed(x)
    tied, tied_points = timed(np.round(x / 10.0) * 10.0)
    print(f"first {first:.2f} s  again {again:.2f} s  tied {tied:.2f} s")
    print(f"change points {points}  tied {tied_points}")
    took, found = prefixes()
    print(f"every prefix of 20 series {took:.1f} s, {found} change points in all")


if __name__ == "__main__":
    main()
