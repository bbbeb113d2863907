"""Tests for iowall.analysis.scaling.usl: efficiency, knee, USL fit and its intervals.

Coverage is checked on 200 simulated noisy curves per case (3% log-normal noise): an
interval with true 95% coverage shows at least 90% there with probability > 99.5%, while
one with 85% coverage would pass only about 3% of the time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iowall.analysis.scaling.usl import (
    collapse,
    efficiency,
    knee,
    usl,
    usl_fit,
    weak_to_rate,
)

# ------------------------------------------------------------------- efficiency and knee


def test_efficiency_linear_is_one() -> None:
    assert efficiency([1, 2, 4, 8], [10.0, 20.0, 40.0, 80.0]) == pytest.approx([1.0] * 4)


def test_efficiency_from_smallest_n_in_input_order() -> None:
    eff = efficiency([8, 2, 4], [40.0, 20.0, 30.0])
    assert eff == pytest.approx([0.5, 1.0, 0.75])


def test_efficiency_with_repeats_uses_median_at_n0() -> None:
    eff = efficiency([1, 1, 1, 2], [9.0, 10.0, 11.0, 18.0])
    assert eff == pytest.approx([0.9, 1.0, 1.1, 0.9])


def test_knee() -> None:
    assert knee([1, 2, 4, 8, 16], [10.0, 20.0, 38.0, 60.0, 70.0]) == 8
    assert knee([1, 2, 4, 8], [10.0, 20.0, 40.0, 79.0]) is None  # always efficient
    assert knee([1, 2, 4], [10.0, 19.0, 36.0], threshold=0.95) == 4
    # Repeats: the median per N decides.
    assert knee([1, 1, 4, 4, 4], [10.0, 10.0, 20.0, 40.0, 41.0]) is None
    assert knee([1, 1, 4, 4, 4], [10.0, 10.0, 20.0, 21.0, 41.0]) == 4


def test_collapse() -> None:
    assert collapse([4, 1, 4, 1], [3.0, 1.0, 5.0, 2.0]) == ([1.0, 4.0], [1.5, 4.0])


def test_weak_to_rate() -> None:
    assert weak_to_rate([1, 2, 4], 1000, [2.0, 2.0, 4.0]) == pytest.approx([500.0, 1000.0, 1000.0])
    assert weak_to_rate([1, 2], [10, 20], [1.0, 2.0]) == pytest.approx([10.0, 20.0])
    with pytest.raises(ValueError):
        weak_to_rate([1, 2], 10, [1.0, 0.0])
    with pytest.raises(ValueError):
        weak_to_rate([1, 2], 10, [1.0])


def test_input_validation() -> None:
    with pytest.raises(ValueError):
        efficiency([1, 2], [1.0])
    with pytest.raises(ValueError):
        efficiency([0, 2], [1.0, 2.0])
    with pytest.raises(ValueError):
        usl_fit([1, 2, 2], [1.0, 2.0, 2.1])  # only 2 distinct N
    with pytest.raises(ValueError):
        usl_fit([1, 2, 4], [1.0, 0.0, 2.0])


# --------------------------------------------------------------------------------- USL

N_SETS = [
    [1, 2, 4],
    [1, 2, 3, 4],
    [1, 2, 4, 8, 16],
    [1, 2, 4, 8, 16, 32],
    [2, 4, 6, 8, 12, 16, 24],
    list(range(1, 11)),
]


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    st.sampled_from(N_SETS),
    st.floats(min_value=0.01, max_value=0.4),
    st.floats(min_value=1e-4, max_value=0.02),
    st.floats(min_value=1.0, max_value=1e9),
)
def test_usl_recovers_parameters_without_noise(ns: list[int], sigma: float, kappa: float, lam: float) -> None:
    x = usl(np.asarray(ns, dtype=float), lam, sigma, kappa).tolist()
    f = usl_fit(ns, x)
    assert f.sigma == pytest.approx(sigma, rel=0.10)
    assert f.kappa == pytest.approx(kappa, rel=0.10)
    assert f.lam == pytest.approx(lam, rel=0.01)
    assert f.r2 == pytest.approx(1.0, abs=1e-9)


def test_usl_peak() -> None:
    ns = [1, 2, 4, 8, 16, 32, 64]
    f = usl_fit(ns, usl(np.asarray(ns, dtype=float), 100.0, 0.05, 0.001).tolist())
    assert f.n_star == pytest.approx(math.sqrt(0.95 / 0.001), rel=0.01)
    grid = np.linspace(1, 200, 20000)
    assert f.x_peak == pytest.approx(float(usl(grid, 100.0, 0.05, 0.001).max()), rel=1e-4)
    assert f.predict(f.n_star) == pytest.approx(f.x_peak)


def test_usl_without_coherency_has_no_peak() -> None:
    ns = [1, 2, 4, 8, 16]
    f = usl_fit(ns, usl(np.asarray(ns, dtype=float), 50.0, 0.1, 0.0).tolist())
    assert f.kappa == pytest.approx(0.0, abs=1e-9)
    assert math.isinf(f.n_star)
    assert f.x_peak == pytest.approx(50.0 / f.sigma)
    linear = usl_fit(ns, [50.0 * v for v in ns])
    assert linear.sigma == pytest.approx(0.0, abs=1e-9) and math.isinf(linear.x_peak)


def test_usl_with_repeats_and_no_dof() -> None:
    ns = [1, 1, 1, 2, 2, 2, 4, 4, 4, 8, 8, 8]
    rng = np.random.default_rng(3)
    x = usl(np.asarray(ns, dtype=float), 100.0, 0.1, 0.01) * np.exp(rng.normal(0, 0.03, 12))
    f = usl_fit(ns, x.tolist())
    assert f.n_obs == 12 and f.dof == 9
    assert f.sigma_ci[0] <= f.sigma <= f.sigma_ci[1]
    exact = usl_fit([1, 2, 4], [100.0, 180.0, 300.0])  # 3 points, 3 parameters
    assert exact.dof == 0 and math.isinf(exact.kappa_ci[1]) and exact.sigma_ci[0] == 0.0


@pytest.mark.parametrize(
    ("ns", "reps", "sigma", "kappa", "seed"),
    [
        ([1, 2, 4, 8, 16, 32], 1, 0.05, 0.001, 1),
        ([1, 2, 3, 4, 5, 6, 7, 8], 3, 0.1, 0.01, 2),
        ([1, 2, 4, 8, 16], 1, 0.05, 0.002, 3),
        ([2, 4, 8, 16, 32], 2, 0.05, 0.001, 4),
    ],
)
def test_usl_intervals_cover_at_nominal_rate(
    ns: list[int], reps: int, sigma: float, kappa: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    nn = np.repeat(np.asarray(ns, dtype=float), reps)
    curves = 200
    cover_s = cover_k = 0
    for _ in range(curves):
        x = usl(nn, 100.0, sigma, kappa) * np.exp(rng.normal(0.0, 0.03, nn.size))
        f = usl_fit(nn.tolist(), x.tolist())
        cover_s += f.sigma_ci[0] <= sigma <= f.sigma_ci[1]
        cover_k += f.kappa_ci[0] <= kappa <= f.kappa_ci[1]
    assert cover_s / curves >= 0.90
    assert cover_k / curves >= 0.90
