"""The change-point search reads a series' serial structure (``analysis.regress.serial``):
runs in groups sharing an offset are shuffled in blocks, and a cut a slow drift explains is
not a change point; a step is still found."""

from __future__ import annotations

import numpy as np

from iowall.analysis.regress.changepoints import analyse
from iowall.analysis.regress.serial import block_length, drift_slope


def _groups(seed: int, n: int = 60) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * np.exp(np.repeat(rng.normal(0.0, 0.04, n // 3), 3) + rng.normal(0.0, 0.005, n))


def test_groups_sharing_an_offset_are_moved_together() -> None:
    assert block_length(_groups(1)) >= 2
    rng = np.random.default_rng(2)
    assert block_length(100.0 * np.exp(rng.normal(0.0, 0.03, 60))) == 1
    x = 100.0 * np.exp(rng.normal(0.0, 0.03, 60))
    x[30:] *= 0.9  # a step is not dependence: the running median follows it
    assert block_length(x) == 1


def test_no_change_found_in_groups_of_shared_offsets() -> None:
    found = sum(len(analyse(list(_groups(seed))).points) for seed in range(10, 20))
    assert found <= 1


def test_a_drift_is_not_a_change_point_and_a_step_still_is() -> None:
    rng = np.random.default_rng(5)
    drift = 100.0 * np.exp(np.linspace(0.0, -0.06, 60) + rng.normal(0.0, 0.01, 60))
    assert analyse(list(drift)).points == ()
    step = drift.copy()
    step[35:] *= 0.93
    assert any(abs(p.index - 35) <= 1 for p in analyse(list(step)).points)


def test_drift_slope_is_not_moved_by_a_step() -> None:
    y = np.concatenate([np.zeros(20), np.ones(20)]) + 0.01 * np.arange(40)
    assert abs(drift_slope(y, 20) - 0.01) < 1e-12
