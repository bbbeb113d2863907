"""Keeping track one result at a time: iowall's early detection replayed beside Apache Otava and
PELT on the corpus of ``benchmarks/corpus.py``, and the batch detectors on the whole series.

Replay: each series is gated at every result from the ``START``-th on, on the history so far.

- ``iowall early``: the gate of ``iowall gate --series`` for one series
  (``analysis.regress.series_gate.gate_newest``): the change points of the history
  (``changepoints.analyse``) set where the baseline starts, ``early.early`` tests the newest
  1-3 results, and the result fails when the gate calls it a regression at ``--fdr``;
- ``iowall batch``, ``otava``, ``pelt``: detect on the history so far and alarm on a new
  downward change point in the last 10 results (one that was not alarmed before, ±3).

An alarm is true when a true fall of the level started at most 9 results before it (so an
alarm on a 2% fall is true too), false otherwise. Reported: the share of falls of 5% or more
alarmed within 3 and 10 results of their first bad result, and false alarms per 100 gated
results. Batch: every detector on the whole series; a detection within ±3 of a true change
matches it (each change once); pooled precision, recall, F1, false alarms per 100 no-change
series, and the share of excursions whose both changes were found.

PELT: ``ruptures.Pelt(model="l2", min_size=3)`` on log values, penalty ``c·σ²·log n`` with σ
from the MAD of first differences, ``c`` the smallest on a grid whose false alarms per 100
no-change series of the calibration corpus (another seed) are at most ``FA_BATCH``. Otava:
``compute_change_points(values, window_len=50, max_pvalue=0.001, min_magnitude=0)``, its
defaults. iowall's early level is the loosest ``--fdr`` on a grid whose replayed false alarms
on the calibration corpus are at most ``FA_REPLAY`` per 100 gated results.

Run:  nice -n 19 .venv/bin/python benchmarks/replay.py [--per-cell 8] [--seed 24]
Needs the ``bench`` extra (apache-otava with --no-deps, ruptures).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import ruptures
from corpus import Series, build
from otava.analysis import compute_change_points

from iowall.analysis.regress.changepoints import ALPHA, analyse
from iowall.analysis.regress.series_gate import FDR_SERIES, gate_newest

START = 12
WITHIN = (3, 10)
FA_REPLAY = 0.77
FA_BATCH = 5.0
FDRS = (0.005, 0.01, 0.015, 0.02, 0.03)
PELT_CS = (4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)
Detector = Callable[[Sequence[float]], list[int]]


def iowall_batch(alpha: float = ALPHA) -> Detector:
    return lambda v: [c.index for c in analyse(v, alpha=alpha).points]


def otava(v: Sequence[float]) -> list[int]:
    cps, _ = compute_change_points(list(v), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    return [int(c.index) for c in cps]


def pelt(c: float) -> Detector:
    def run(v: Sequence[float]) -> list[int]:
        y = np.log(np.asarray(v))
        d = np.diff(y)
        sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        pen = c * max(sigma, 1e-9) ** 2 * math.log(y.size)
        return [int(b) for b in ruptures.Pelt(model="l2", min_size=3).fit(y).predict(pen=pen)[:-1]]

    return run


def falls(s: Series) -> list[int]:
    return [at for at, f in s.changes if f < 1.0]


def _level(v: Sequence[float], lo: int, hi: int) -> float:
    return float(np.median(v[max(lo, 0) : hi])) if hi > lo else math.nan


@dataclass
class Replay:
    """Replayed alarms of one method."""

    gated: int = 0
    false: int = 0
    big: int = 0
    caught: dict[int, int] = field(default_factory=lambda: {w: 0 for w in WITHIN})

    def add(self, s: Series, alarms: Sequence[int]) -> None:
        self.gated += len(s.values) - START
        f = falls(s)
        self.false += sum(not any(0 <= t - c <= 9 for c in f) for t in alarms)
        for at, fac in s.changes:
            if fac < 1.0 and 1.0 / fac - 1.0 >= 0.049:
                self.big += 1
                for w in WITHIN:
                    self.caught[w] += any(at <= t < at + w for t in alarms)

    def cells(self) -> str:
        return (
            " ".join(f"{self.caught[w] / max(self.big, 1):6.1%}" for w in WITHIN)
            + f" {100.0 * self.false / max(self.gated, 1):6.2f}"
        )


def replay_batch(det: Detector) -> Callable[[Series], list[int]]:
    """Alarm times of a batch detector replayed: a new downward change in the last 10."""

    def run(s: Series) -> list[int]:
        seen: list[int] = []
        out = []
        for t in range(START, len(s.values)):
            v = s.values[: t + 1]
            cps = sorted(det(v))
            bounds = [0, *cps, len(v)]
            for i, c in enumerate(cps):
                if t - c >= 10 or any(abs(c - p) <= 3 for p in seen):
                    continue
                if _level(v, c, bounds[i + 2]) < _level(v, bounds[i], c):
                    seen.append(c)
                    if not out or out[-1] != t:
                        out.append(t)
        return out

    return run


def replay_early(fdr: float) -> Callable[[Series], list[int]]:
    """Alarm times of the series gate: the newest result fails at ``fdr``."""

    def run(s: Series) -> list[int]:
        return [
            t
            for t in range(START, len(s.values))
            if getattr(gate_newest(s.values[: t + 1], fdr=fdr), "status", "") == "regression"
        ]

    return run


def replay(method: Callable[[Series], list[int]], corpus: Sequence[Series]) -> Replay:
    r = Replay()
    for s in corpus:
        r.add(s, method(s))
    return r


@dataclass
class Batch:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    null: int = 0
    null_fa: int = 0
    exc: int = 0
    exc_both: int = 0

    def add(self, s: Series, dets: Sequence[int]) -> None:
        left = sorted(dets)
        found = 0
        for at, _ in s.changes:
            near = [d for d in left if abs(d - at) <= 3]
            if near:
                left.remove(min(near, key=lambda d: abs(d - at)))
                found += 1
        self.tp += found
        self.fn += len(s.changes) - found
        self.fp += len(left)
        if not s.changes:
            self.null += 1
            self.null_fa += len(left)
        if s.family == "excursion":
            self.exc += 1
            self.exc_both += found == 2

    def cells(self) -> str:
        p = self.tp / max(self.tp + self.fp, 1)
        r = self.tp / max(self.tp + self.fn, 1)
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        return (
            f"{f1:5.3f} {p:5.3f} {r:5.3f} {100.0 * self.null_fa / max(self.null, 1):5.1f} "
            f"{self.exc_both / max(self.exc, 1):6.1%}"
        )


def batch(det: Detector, corpus: Sequence[Series]) -> Batch:
    b = Batch()
    for s in corpus:
        b.add(s, det(s.values))
    return b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-cell", type=int, default=8, help="series per family and step")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--skip-peers-replay", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    cal, ev = build(a.seed + 1000, a.per_cell), build(a.seed, a.per_cell)
    print(f"corpus: {len(ev)} series ({len(cal)} for calibration), {len(ev[0].values)} results")
    c_pelt = PELT_CS[-1]
    for c in PELT_CS:
        fa = batch(pelt(c), cal)
        print(f"  calibration pelt c={c:g}: {fa.cells()}")
        if 100.0 * fa.null_fa / fa.null <= FA_BATCH:
            c_pelt = c
            break
    level = FDRS[0]
    for q in FDRS:
        r = replay(replay_early(q), cal)
        print(f"  calibration iowall early fdr={q:g}: {r.cells()}")
        if 100.0 * r.false / r.gated <= FA_REPLAY:
            level = q
    print(f"chosen: pelt c={c_pelt:g}, iowall early fdr={level:g} (default {FDR_SERIES:g})")
    print(
        f"\nreplay from result {START}: caught within {WITHIN} results (falls >= 5%), "
        "false alarms/100 gated results"
    )
    methods: dict[str, Callable[[Series], list[int]]] = {
        f"iowall early fdr={level:g}": replay_early(level),
        f"iowall early fdr={FDR_SERIES:g} (default)": replay_early(FDR_SERIES),
    }
    if not a.skip_peers_replay:
        methods |= {
            f"iowall batch a={ALPHA:g}": replay_batch(iowall_batch()),
            "otava defaults": replay_batch(otava),
            f"pelt c={c_pelt:g}": replay_batch(pelt(c_pelt)),
        }
    for name, m in methods.items():
        t1 = time.time()
        print(f"  {name:32} {replay(m, ev).cells()}   ({time.time() - t1:.0f} s)", flush=True)
    print(
        "\nbatch: F1, precision, recall (±3), false alarms/100 no-change series, "
        "excursions with both changes found"
    )
    for name, det in {
        f"iowall a={ALPHA:g}": iowall_batch(),
        "otava defaults": otava,
        f"pelt c={c_pelt:g}": pelt(c_pelt),
    }.items():
        print(f"  {name:32} {batch(det, ev).cells()}", flush=True)
    print(f"\n{time.time() - t0:.0f} s; seed {a.seed} (calibration {a.seed + 1000})")


if __name__ == "__main__":
    main()
