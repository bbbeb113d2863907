"""Where the early gate misses a corpus's falls, fall by fall: for each fall of 5% or more,
its family, size and edge (an excursion's first edge, or its return: the fall back from a
shift up), whether the gate alarmed within 3 results, and whether the change-point search had
placed the change before it (an excursion's start, within 3) by the fall's third result, the
point the early test's baseline begins at.

The replay is ``replay.replay_early`` at ``--fdr`` on the history's change points of every
prefix (``--cache``: a pickle from ``replay.py --cache``, or computed here).

Run:  cd benchmarks && PYTHONPATH=/tmp/benchdeps ../.venv/bin/python early_misses.py
      --corpus 9 --seed 601 --families excursion [--cache /tmp/bw/c9.pkl]
"""

from __future__ import annotations

import argparse
import os
import pickle
from collections import Counter

import replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=int, default=9)
    ap.add_argument("--seed", type=int, default=601)
    ap.add_argument("--families", default="excursion", help="comma list of the corpus's families")
    ap.add_argument("--fdr", type=float, default=0.0075)
    ap.add_argument("--cache", help="pickle of the change points by prefix (replay.py --cache)")
    a = ap.parse_args()
    if a.cache and os.path.exists(a.cache):
        with open(a.cache, "rb") as fh:
            replay._CHANGES.update(pickle.load(fh))
    replay._memo_windows()
    wanted = set(a.families.split(","))
    series = [s for s in replay.build(a.corpus, a.seed, 12) if s.family in wanted]
    run = replay.replay_early(a.fdr)
    tally: Counter[tuple[str, str, bool]] = Counter()
    placed: Counter[tuple[bool, bool]] = Counter()
    print("family     size  edge    caught  alarms (results after the fall)  change before it placed")
    for s in series:
        alarms = run(s)
        for i, (at, f) in enumerate(s.changes):
            if f >= 1.0 or 1.0 / f - 1.0 < 0.049:
                continue
            edge = "first" if i == 0 else "return"
            caught = any(0 <= t - at < 3 for t in alarms)
            before = s.changes[i - 1][0] if i else None
            cps = replay._changes(s.values[: at + 3])
            found = before is not None and any(abs(c - before) <= 3 for c in cps)
            tally[(edge, f"{1.0 / f - 1.0:.2f}", caught)] += 1
            if edge == "return":
                placed[(found, caught)] += 1
            after = [t - at for t in alarms if 0 <= t - at < 10]
            said = "yes" if caught else "no"
            print(f"{s.family:10s} {1.0 / f - 1.0:4.2f}  {edge:6s}  {said:6s}  {after!s:31s}  {found}")
    print("\ncaught within 3, by edge and size:")
    for edge in ("first", "return"):
        for size in sorted({k[1] for k in tally}):
            n = tally[(edge, size, True)] + tally[(edge, size, False)]
            if n:
                print(f"  {edge:6s} {size}: {tally[(edge, size, True)]}/{n}")
    if placed:
        print("\nreturns: the excursion's start placed by the fall's third result, against caught:")
        for (found, caught), n in sorted(placed.items()):
            print(f"  start placed {found!s:5s}  caught {caught!s:5s}  {n}")


if __name__ == "__main__":
    main()
