"""A candidate for the batch search, measured post hoc: drop a change point that a move
settling in over 10-25 results explains better than a step (not in the detector yet).

For each change point of ``changepoints.analyse`` on a whole series, between its neighbours
(or the ends), the best single step within 3 results of it is compared with the best
logistic move whose 10%-90% span is 10-25 results (6 widths, centred within half a span of
the change point), each fitted by least squares on log values with an intercept: the
Gaussian log-likelihood ratio n log(RSS_step / RSS_logistic). The change point with the
largest ratio above ``T`` is dropped and the rest judged again. Post hoc: the search does not
re-prune after a drop, as it would with the veto inside it.

Prints, per corpus and seed and pooled, the batch cells of ``replay.Batch`` (F1, precision,
recall, false change points per 100 no-change series, excursions with both ends found) as
found and after the veto, and the families of corpus 6 that move and settle.

Run:  cd benchmarks && PYTHONPATH=/tmp/benchdeps ../.venv/bin/python settling_veto.py [--corpora 1,2,3,4,5,6]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from multiprocessing import Pool

import numpy as np
import replay

from iowall.analysis.regress.changepoints import analyse

#: Likelihood ratio above which a settling move explains a change point better than a step.
T = 4.0
#: The 10%-90% spans of the settling moves tried, and how far a step may move from the cut.
SPANS = tuple(float(w) for w in np.geomspace(10.0, 25.0, 6))
SLACK = 3


def _rss(yc: np.ndarray, shapes: np.ndarray) -> float:
    """Least residual sum of squares of centred ``yc`` on an intercept and one shape (rows)."""
    g = shapes - shapes.mean(axis=1, keepdims=True)
    nn = np.maximum(np.sum(g * g, axis=1), 1e-12)
    return max(float(np.min(np.sum(yc * yc) - (g @ yc) ** 2 / nn)), 1e-300)


def ratios(y: np.ndarray, cuts: Sequence[int]) -> list[float]:
    """Each change point's n log(RSS of the best step near it / RSS of the best settling move)."""
    out = []
    for i, c in enumerate(cuts):
        lo = cuts[i - 1] if i else 0
        hi = cuts[i + 1] if i + 1 < len(cuts) else y.size
        t = np.arange(lo, hi, dtype=np.float64)
        seg = y[lo:hi] - y[lo:hi].mean()
        near = range(max(lo + 1, c - SLACK), min(hi - 1, c + SLACK) + 1)
        steps = np.array([(t >= a).astype(np.float64) for a in near])
        moves = np.array(
            [
                1.0 / (1.0 + np.exp(-(t - mid) / (w / (2.0 * math.log(9.0)))))
                for w in SPANS
                for mid in np.arange(c - w / 2.0, c + w / 2.0 + 1.0)
            ]
        )
        out.append(seg.size * math.log(_rss(seg, steps) / _rss(seg, moves)))
    return out


def veto(values: Sequence[float], cuts: Sequence[int]) -> list[int]:
    """The change points no settling move explains better than a step (module docstring)."""
    y = np.log(np.asarray(values, dtype=np.float64))
    kept = sorted(cuts)
    if not np.all(np.isfinite(y)):
        return kept
    while kept:
        lr = ratios(y, kept)
        worst = int(np.argmax(lr))
        if lr[worst] <= T:
            break
        del kept[worst]
    return kept


def _work(pair: tuple[int, int]) -> tuple[tuple[int, int], list[list[int]]]:
    return pair, [[p.index for p in analyse(s.values).points] for s in replay.build(*pair, 12)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default="1,2,3,4,5,6", help="corpora, each at its seed and its seed + 1000")
    ap.add_argument("--one-seed", action="store_true", help="each corpus at its own seed only (a report)")
    a = ap.parse_args()
    t0 = time.time()
    pairs = []
    for c in (int(x) for x in a.corpora.split(",")):
        s0 = replay.CORPORA[c][1]
        pairs += [(c, s0)] if a.one_seed else [(c, s0), (c, s0 + 1000)]
    with Pool(2) as pool:
        found = dict(pool.map(_work, pairs, chunksize=1))
    print("F1, precision, recall, false change points/100 no-change series, excursions both found")
    total = {"as found": replay.Batch(), "vetoed": replay.Batch()}
    fams: dict[tuple[int, str, str], replay.Batch] = {}
    for pair in pairs:
        cells = {"as found": replay.Batch(), "vetoed": replay.Batch()}
        for s, cuts in zip(replay.build(*pair, 12), found[pair], strict=True):
            for name, d in (("as found", cuts), ("vetoed", veto(s.values, cuts))):
                cells[name].add(s, d)
                total[name].add(s, d)
                if pair[0] >= 6 and s.family != "excursion":
                    fams.setdefault((pair[0], s.family, name), replay.Batch()).add(s, d)
        print(
            f"  corpus {pair[0]} seed {pair[1]}: {cells['as found'].cells()}  ->  {cells['vetoed'].cells()}"
        )
    print(f"  pooled: {total['as found'].cells()}  ->  {total['vetoed'].cells()}")
    for (c, fam, name), b in sorted(fams.items()):
        if name == "as found":
            print(f"    corpus {c} {fam:<10} {b.cells()}  ->  {fams[(c, fam, 'vetoed')].cells()}")
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
