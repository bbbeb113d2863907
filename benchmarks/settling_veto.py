"""The batch search with and without its settling check (``analysis/regress/settling.py``: a
change point that a move settling in over 10-25 results explains better than a step is
dropped), on the replay corpora.

Prints, per corpus and seed and pooled, the batch cells of ``replay.Batch`` (F1, precision,
recall, false change points per 100 no-change series, excursions with both ends found)
without the check and with it, and per family for corpora 6 and up (their moves that settle).
The first version of this script (commit 2257cbf) applied the check after the search, post
hoc; now the search re-prunes after each drop, as ``changepoints.analyse`` does.

Run:  cd benchmarks && PYTHONPATH=/tmp/benchdeps ../.venv/bin/python settling_veto.py [--corpora 1,2,7]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from multiprocessing import Pool

import replay

from iowall.analysis.regress import changepoints

CHECK = changepoints.sudden


def _off(values: Sequence[float], cuts: Sequence[int], allowed: object = None) -> list[int]:
    return sorted(cuts)


def _work(job: tuple[int, int, bool]) -> tuple[tuple[int, int, bool], list[list[int]]]:
    c, seed, on = job
    changepoints.sudden = CHECK if on else _off  # type: ignore[assignment]
    return job, [[p.index for p in changepoints.analyse(s.values).points] for s in replay.build(c, seed, 12)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpora", default="1,2,3,4,5,6,7", help="corpora, each at its seed and its seed + 1000"
    )
    ap.add_argument("--one-seed", action="store_true", help="each corpus at its own seed only (a report)")
    a = ap.parse_args()
    t0 = time.time()
    pairs = []
    for c in (int(x) for x in a.corpora.split(",")):
        s0 = replay.CORPORA[c][1]
        pairs += [(c, s0)] if a.one_seed else [(c, s0), (c, s0 + 1000)]
    with Pool(2) as pool:
        found = dict(pool.map(_work, [(c, s, on) for c, s in pairs for on in (False, True)], chunksize=1))
    print("F1, precision, recall, false change points/100 no-change series, excursions both found")
    total = {False: replay.Batch(), True: replay.Batch()}
    fams: dict[tuple[int, str, bool], replay.Batch] = {}
    for c, seed in pairs:
        cells = {False: replay.Batch(), True: replay.Batch()}
        for i, s in enumerate(replay.build(c, seed, 12)):
            for on in (False, True):
                d = found[(c, seed, on)][i]
                cells[on].add(s, d)
                total[on].add(s, d)
                if c >= 6 and s.family != "excursion":
                    fams.setdefault((c, s.family, on), replay.Batch()).add(s, d)
        print(f"  corpus {c} seed {seed}: {cells[False].cells()}  ->  {cells[True].cells()}")
    print(f"  pooled: {total[False].cells()}  ->  {total[True].cells()}")
    for (c, fam, on), b in sorted(fams.items()):
        if not on:
            print(f"    corpus {c} {fam:<10} {b.cells()}  ->  {fams[(c, fam, True)].cells()}")
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
