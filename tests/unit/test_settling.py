"""Tests for iowall.analysis.regress.settling: a change point placed on a move that settles in
over many results is dropped, a step is kept (also next to a settling move), and values it
cannot take logs of leave the cuts alone."""

from __future__ import annotations

import math

import numpy as np

from iowall.analysis.regress import settling

T = np.arange(60, dtype=np.float64)


def settles(
    seed: int, size: float = 0.06, span: float = 15.0, mid: float = 30.0, cv: float = 0.01
) -> np.ndarray:
    """Runs around 1000 whose level moves by ``size`` along a logistic curve, 10%-90% in ``span``."""
    noise = np.random.default_rng(seed).normal(0.0, cv, T.size)
    return 1000.0 * np.exp(
        math.log1p(size) / (1.0 + np.exp(-(T - mid) / (span / (2.0 * math.log(9.0))))) + noise
    )


def steps(seed: int, size: float = 0.05, at: int = 30, cv: float = 0.01) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0.0, cv, T.size)
    return 1000.0 * np.exp(math.log1p(size) * (T >= at) + noise)


def test_a_cut_on_a_settling_move_is_dropped_and_a_step_kept() -> None:
    dropped = sum(not settling.sudden(settles(seed), [30]) for seed in range(20))
    kept = sum(settling.sudden(steps(seed), [30]) == [30] for seed in range(20))
    assert dropped >= 18
    assert kept == 20


def test_the_ratio_favours_the_move_only_where_it_settles() -> None:
    y = np.log(settles(3, size=0.08, cv=0.005))
    z = np.log(steps(3, size=0.08, cv=0.005))
    assert settling.ratios(y, [30])[0] > settling.RATIO
    assert settling.ratios(z, [30])[0] < 0.0


def test_a_step_beside_a_settling_move_is_kept_and_judged_again() -> None:
    # a 10% step at run 12, then a 6% move settling around run 40: the cut on the move goes,
    # the step stays (each is judged between its neighbours, and again after a drop)
    noise = np.random.default_rng(5).normal(0.0, 0.008, T.size)
    y = math.log1p(0.10) * (T >= 12) + math.log1p(0.06) / (1.0 + np.exp(-(T - 40.0) / 3.0)) + noise
    assert settling.sudden(1000.0 * np.exp(y), [12, 40]) == [12]


def test_values_without_a_log_leave_the_cuts_alone() -> None:
    x = settles(0)
    x[5] = 0.0
    assert settling.sudden(x, [30]) == [30]
    x[5] = float("nan")
    assert settling.sudden(x, [30]) == [30]
