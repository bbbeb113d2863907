"""Tests for iowall.analysis.regress.level: a level that random-walks or cycles is found to
wander and its apparent steps are dropped; a real step under flat noise is kept, and flat
noise is not found to wander."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iowall.analysis.regress import level


def walk(seed: int, step: float = 0.008, white: float = 0.01, n: int = 60) -> np.ndarray:
    """Runs around 1000 whose log level random-walks by ``step`` a run, under white noise."""
    rng = np.random.default_rng(seed)
    return 1000.0 * np.exp(np.cumsum(rng.normal(0.0, step, n)) + rng.normal(0.0, white, n))


def flat(seed: int, cv: float = 0.02, n: int = 60) -> np.ndarray:
    return 1000.0 * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))


def biggest_moves(x: np.ndarray, k: int = 2, w: int = 5) -> list[int]:
    """The k cuts (w runs apart at least) where the means of w runs either side differ most:
    where a search that assumes a flat level would put its steps."""
    y = np.log(x)
    d = {c: abs(y[c : c + w].mean() - y[c - w : c].mean()) for c in range(w, y.size - w + 1)}
    out: list[int] = []
    for c in sorted(d, key=d.__getitem__, reverse=True):
        if all(abs(c - o) >= w for o in out):
            out.append(c)
        if len(out) == k:
            break
    return sorted(out)


def test_a_random_walk_wanders_and_most_of_its_apparent_steps_are_dropped() -> None:
    # each step is tested at 5%, and the screen (the level still wanders with the steps in)
    # lets through walks whose moves the steps absorb: most, not all, are dropped
    kept = 0
    for seed in range(10):
        x = walk(seed)
        fit = level.wanders(x)
        assert fit is not None and fit.p_value < 0.01 and fit.ratio > 0.0
        kept += len(level.beyond_wander(x, biggest_moves(x), 3))
    assert kept <= 4  # of 20


@pytest.mark.parametrize("seed", range(6))
def test_a_step_under_flat_noise_is_kept_and_flat_noise_does_not_wander(seed: int) -> None:
    x = flat(seed)
    fit = level.wanders(x)
    assert fit is not None and fit.p_value > 0.01
    x[30:] *= 0.95
    assert level.beyond_wander(x, [30], 3) == [30]


@pytest.mark.parametrize("seed", range(4))
def test_a_big_step_under_a_walk_is_kept(seed: int) -> None:
    # (the walk's own biggest move beside it may stay: with both steps in, the level left
    # between them may no longer wander beyond chance, and the screen lets both through)
    x = walk(seed)
    x[40:] *= 0.80
    assert 40 in level.beyond_wander(x, sorted({*biggest_moves(x[:35], 1), 40}), 3)


def test_one_far_result_is_not_a_moving_level() -> None:
    # a dropout (one run at 40% of the level) is pulled in before the fit
    x = flat(11)
    x[25] *= 0.4
    fit = level.wanders(x)
    assert fit is not None and fit.p_value > 0.01


def test_recent_window_narrows_as_the_level_moves_faster() -> None:
    assert level.recent_window(flat(2)) is None
    slow, fast = level.recent_window(walk(1, step=0.004)), level.recent_window(walk(1, step=0.02))
    assert slow is not None and fast is not None and fast < slow


def test_the_model_does_not_apply_to_short_long_or_non_positive_series() -> None:
    assert level.wanders(flat(0, n=level.MIN_RUNS - 1)) is None
    assert level.wanders(flat(0, n=level.MAX_RUNS + 1)) is None
    x = flat(0)
    x[4] = 0.0
    assert level.wanders(x) is None
    assert level.beyond_wander(x, [20], 3) == [20]
    assert math.isclose(level._mixture_p(0.0), 1.0)


def test_the_eigendecompositions_kept_stay_within_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache drops the least recently used beyond ``EIG_BYTES`` and what it returns is
    the decomposition of the covariance it was asked for."""
    monkeypatch.setattr(level, "EIG_BYTES", 200_000)
    level._EIGS.clear()
    for m in range(40, 121, 10):
        for phi in (0.5, 1.0):
            lam, vec = level._eig(m, phi)
            i = np.arange(1, m + 1, dtype=np.float64)
            cov = np.minimum.outer(i, i) if phi >= 1.0 else phi ** np.abs(np.subtract.outer(i, i)) / 0.75
            assert np.allclose(vec @ np.diag(lam) @ vec.T, cov)
            held = level._EIGS.entries
            assert level._EIGS.held == sum(a.nbytes + b.nbytes for a, b in held.values())
            assert level._EIGS.held <= 200_000 or len(held) == 1
    assert (120, 1.0) in level._EIGS.entries and (40, 0.5) not in level._EIGS.entries
    level._EIGS.clear()
