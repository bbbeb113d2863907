"""The cost of ``iowall gate --series``: seconds to gate the newest result of many series
(each series' change points searched as the gate does: with its newest results, and again
without its newest 3), in a fresh process. Series are log-normal (CV 3%); half carry a 5% step
somewhere in their history and a third end in a 10% excursion up that has fallen back in its
newest 2 results (the case the second search is for); then a few of 1,000 results, a long
history's length (its second search reads the newest 120 before the window). Prints seconds
and the verdicts' counts.

Run a tree against another side by side (no other job measuring):
  for t in /tmp/old /work/main; do
    flock /tmp/iowall-tests.lock env PYTHONPATH=$t/src .venv/bin/python benchmarks/series_gate_time.py
  done
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from iowall.analysis.regress.series_gate import SeriesResults, gate_series


def series(count: int, length: int, seed: int) -> list[SeriesResults]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        x = 1000.0 * np.exp(rng.normal(0.0, 0.03, length))
        if i % 2:
            x[int(rng.integers(length // 4, 3 * length // 4)) :] *= 0.95
        if i % 3 == 0:
            x[length - 14 : length - 2] *= 1.10
        out.append(SeriesResults(f"s{i}", "bw", "MiB/s", "higher", tuple(map(str, range(length))), tuple(x)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--long", type=int, default=10, help="series of 1,000 results (a history's length)")
    a = ap.parse_args()
    for count, length in ((a.series, 60), (a.series, 200), (a.long, 1000)):
        s = series(count, length, a.seed)
        t = time.perf_counter()
        res, _ = gate_series(s)
        took = time.perf_counter() - t
        counts = Counter(v.status for v in res.verdicts)
        print(f"{count} series of {length} results: {took:.1f} s  {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
