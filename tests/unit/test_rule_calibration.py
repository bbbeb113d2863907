"""The compare rule where a gate lives: unequal sizes and spreads, and its power.

Fixed seeds; the vectorised ``stats.rule_calls`` is checked to make exactly the calls of
``compare_samples`` and then used to simulate many comparisons quickly. The rule is
calibrated to at most 5% false positives in every cell of its calibration; a simulated rate
scatters around its true value by its binomial standard error, so with 20000 cases a cell
whose true rate is 5.0% passes the 5.5% bound with probability above 99.9%, and one whose
true rate is 6% (the old rule at 10:3 runs was at 10.7%) fails it with the same odds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from iowall.analysis.regress import calibration
from iowall.analysis.regress.calibration import CAL_LEVELS, CAL_SIZES, kappa
from iowall.analysis.regress.stats import calibrate_kappa, compare_samples, rule_calls

LIMIT = 0.055


def values(rng: np.random.Generator, shape: tuple[int, int], cv: float) -> np.ndarray:
    """Normal noise on the raw scale with coefficient of variation ``cv`` and mean 1."""
    return 1.0 + cv * rng.standard_normal(shape)


@pytest.mark.parametrize(
    ("m", "n", "cv_base", "cv_new"),
    [
        (2, 20, 0.03, 0.03),
        (3, 20, 0.03, 0.03),
        (10, 3, 0.03, 0.09),
        (3, 3, 0.03, 0.09),
        (20, 2, 0.03, 0.09),
    ],
)
def test_false_positive_rate_in_the_hardest_cells(m: int, n: int, cv_base: float, cv_new: float) -> None:
    cases = 20000
    rng = np.random.default_rng(m * 1000 + n)
    b, x = values(rng, (cases, m), cv_base), values(rng, (cases, n), cv_new)
    rate = float(np.mean(rule_calls(np.log(b), np.log(x)) != 0))
    assert rate <= LIMIT, rate


def test_power_at_ten_a_side_for_a_five_percent_change() -> None:
    cases = 1500
    rng = np.random.default_rng(2010)
    sd = math.sqrt(math.log1p(0.03**2))
    b = np.exp(rng.normal(0.0, sd, (cases, 10)))
    x = 1.05 * np.exp(rng.normal(0.0, sd, (cases, 10)))
    found = sum(
        bool(compare_samples(b[i].tolist(), x[i].tolist(), direction="higher").better) for i in range(cases)
    )
    assert found / cases >= 0.86


def test_vectorised_calls_are_compare_samples_calls() -> None:
    rng = np.random.default_rng(7)
    for m, n in ((2, 2), (2, 20), (3, 7), (10, 3), (13, 60)):
        b = np.exp(rng.normal(0.0, 0.05, (150, m)))
        x = np.exp(rng.normal(0.04, 0.05, (150, n)))
        fast = rule_calls(np.log(b), np.log(x))
        for i in range(150):
            c = compare_samples(b[i].tolist(), x[i].tolist(), direction="higher")
            assert fast[i] == (0 if not c.significant else (1 if c.better else -1)), (m, n, i)


def test_kappa_is_the_table_on_the_grid_and_between_it_elsewhere() -> None:
    for (m, n), row in calibration._KAPPA.items():
        assert kappa(m, n, 0.95) == pytest.approx(row[CAL_LEVELS.index(0.95)])
        assert kappa(n, m, 0.95) == kappa(m, n, 0.95)
    lo, hi = sorted((kappa(2, 20), kappa(2, 30)))
    assert lo <= kappa(2, 25) <= hi
    assert kappa(60, 500) == kappa(50, 50) and kappa(2, 400) == kappa(2, 50)
    assert set(CAL_SIZES) == {m for m, _ in calibration._KAPPA} | {n for _, n in calibration._KAPPA}


def test_calibration_table_reproduces() -> None:
    # A fresh, smaller simulation agrees with the stored table within Monte Carlo error.
    fresh = calibrate_kappa(3, 10, sims=20000, seed=99)
    stored = calibration._KAPPA[(3, 10)]
    assert fresh[2] == pytest.approx(stored[2], rel=0.04)
    assert fresh[1] == pytest.approx(stored[1], rel=0.04)
