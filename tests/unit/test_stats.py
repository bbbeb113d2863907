"""Tests for iowall.analysis.regress.stats: helpers, the calibrated comparison rule, "decided".

The simulation tests use fixed seeds and synthetic log-normal data with a 3% coefficient
of variation. The rule is calibrated to flag at most 5% of no-change comparisons in its
worst calibration cell (unequal spreads); with equal spreads it flags 3.2%, 4.5% and 4.5% at
3, 5 and 10 runs a side (docs/statistics.md). A simulated rate scatters around its true
value by its binomial standard error; rate assertions allow two standard errors of that
Monte Carlo noise and no more (see ``allowance``). The unequal cells are checked in
test_rule_calibration.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from iowall.analysis.regress.calibration import kappa
from iowall.analysis.regress.repeat_rule import decided, decision_state, median_ci
from iowall.analysis.regress.samples import median
from iowall.analysis.regress.stats import (
    compare_samples,
    critical_value,
    geomean,
    ratio_ci,
    spread,
)

CV = 0.03
LOG_SD = math.sqrt(math.log1p(CV**2))

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
samples = st.lists(positive, min_size=2, max_size=8)


def lognormal(rng: np.random.Generator, cases: int, n: int, factor: float) -> np.ndarray:
    """(cases, n) log-normal samples with 3% CV and median ``factor``."""
    return factor * np.exp(rng.normal(0.0, LOG_SD, size=(cases, n)))


def flag_rate(n: int, shift: float, seed: int, cases: int) -> tuple[float, float]:
    """(rate flagged at all, rate flagged as better) for a true ratio 1+shift, n per side."""
    rng = np.random.default_rng(seed)
    base = lognormal(rng, cases, n, 1.0)
    new = lognormal(rng, cases, n, 1.0 + shift)
    flagged = better = 0
    for i in range(cases):
        c = compare_samples(base[i].tolist(), new[i].tolist(), direction="higher", seed=i)
        flagged += c.significant
        better += bool(c.better)
    return flagged / cases, better / cases


def allowance(p: float, cases: int) -> float:
    """Two binomial standard errors of a rate p measured on ``cases`` simulations."""
    return 2.0 * math.sqrt(p * (1.0 - p) / cases)


def t_test_power(n: int, shift: float, alpha: float) -> float:
    """Exact power of the two-sided pooled two-sample t-test on log values at level alpha."""
    if alpha <= 0:
        return 0.0
    df = 2 * n - 2
    ncp = math.log1p(shift) / LOG_SD * math.sqrt(n / 2.0)
    crit = float(sst.t.ppf(1.0 - alpha / 2.0, df))
    return float(sst.nct.sf(crit, df, ncp) + sst.nct.cdf(-crit, df, ncp))


# ------------------------------------------------------------------------------ helpers


def test_median_and_spread() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 10.0]) == 2.5
    s = spread([90.0, 100.0, 110.0])
    assert s.rel_range == pytest.approx(0.2)
    assert s.iqr == pytest.approx(10.0)
    assert s.rel_iqr == pytest.approx(0.1)
    zero = spread([0.0, 0.0])
    assert zero.rel_range == 0.0 and zero.iqr == 0.0
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        spread([1.0, math.nan])


def test_geomean() -> None:
    assert geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert geomean([1.1]) == pytest.approx(1.1)
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.lists(positive, min_size=1, max_size=10))
def test_geomean_of_inverses_is_inverse(r: list[float]) -> None:
    assert geomean([1.0 / v for v in r]) == pytest.approx(1.0 / geomean(r), rel=1e-9)
    assert min(r) * (1 - 1e-12) <= geomean(r) <= max(r) * (1 + 1e-12)


# ------------------------------------------------------------------------------ ratio_ci


def test_ratio_ci_is_deterministic_given_seed() -> None:
    b, x = [100.0, 103.0, 98.0, 101.0], [106.0, 109.0, 104.0, 108.0]
    assert ratio_ci(b, x, seed=7) == ratio_ci(b, x, seed=7)
    assert ratio_ci(b, x, seed=7).ratio == ratio_ci(b, x, seed=8).ratio


@settings(derandomize=True, max_examples=40, deadline=None)
@given(samples, samples, st.floats(min_value=1e-3, max_value=1e3))
def test_ratio_ci_contains_estimate_and_is_scale_free(b: list[float], x: list[float], k: float) -> None:
    ci = ratio_ci(b, x)
    assert ci.low <= ci.ratio <= ci.high
    scaled = ratio_ci([v * k for v in b], [v * k for v in x])
    assert scaled.ratio == pytest.approx(ci.ratio, rel=1e-9)
    assert scaled.low == pytest.approx(ci.low, rel=1e-6)
    assert scaled.high == pytest.approx(ci.high, rel=1e-6)


def test_ratio_is_median_of_pairwise_ratios() -> None:
    b, x = [100.0, 110.0, 90.0], [120.0, 100.0, 130.0]
    pairwise = sorted(xv / bv for bv in b for xv in x)
    assert ratio_ci(b, x).ratio == pytest.approx(pairwise[4])


def test_ratio_ci_one_run_is_unbounded() -> None:
    ci = ratio_ci([100.0], [150.0, 151.0, 149.0])
    assert ci.ratio == pytest.approx(1.5)
    assert ci.low == 0.0 and math.isinf(ci.high)


def test_ratio_ci_zeros_switch_to_raw_scale() -> None:
    ci = ratio_ci([0.0, 0.0, 0.0], [1.0, 1.2, 0.9])
    assert ci.scale == "raw" and math.isinf(ci.ratio)
    both = ratio_ci([0.0, 0.0], [0.0, 0.0])
    assert both.ratio == 1.0 and both.low == 1.0 and both.high == 1.0
    mixed = ratio_ci([0.0, 10.0, 10.0, 10.0], [12.0, 12.0, 12.0, 12.0])
    assert mixed.scale == "raw" and mixed.ratio == pytest.approx(1.2)
    with pytest.raises(ValueError):
        ratio_ci([-1.0, 1.0], [1.0, 1.0])


def test_critical_values_follow_student_t_for_larger_samples() -> None:
    # The multiplier of Student's t tends to 1 as n grows: calibrated values approach t.
    assert critical_value(10, 10) == pytest.approx(float(sst.t.ppf(0.975, 18)), rel=0.05)
    assert critical_value(40, 40) == pytest.approx(float(sst.t.ppf(0.975, 78)), rel=0.05)
    # At the data's Welch df, which is what ratio_ci passes.
    assert critical_value(5, 5, df=4.5) == pytest.approx(kappa(5, 5) * float(sst.t.ppf(0.975, 4.5)))
    # ... but not for tiny or very unbalanced samples, where the calibration matters most.
    assert critical_value(2, 20, df=19.0) > 1.5 * float(sst.t.ppf(0.975, 19))
    assert math.isinf(critical_value(1, 10))
    # Monotone in the confidence level; symmetric in the two sizes.
    assert critical_value(5, 5, 0.9) < critical_value(5, 5, 0.95) < critical_value(5, 5, 0.99)
    assert critical_value(3, 7) == critical_value(7, 3)


# ------------------------------------------------------------------------ compare_samples


def test_identical_samples_are_not_significant() -> None:
    s = [100.0, 102.0, 98.0, 101.0, 99.0]
    c = compare_samples(s, s, direction="higher")
    assert c.ratio == pytest.approx(1.0)
    assert not c.significant and c.better is None
    const = compare_samples([5.0] * 4, [5.0] * 4, direction="lower")
    assert const.ratio == 1.0 and not const.significant and const.better is None


def test_one_run_is_never_significant() -> None:
    c = compare_samples([100.0], [200.0, 201.0, 199.0], direction="higher")
    assert not c.significant and c.better is None and c.n_base == 1
    c = compare_samples([100.0, 100.5, 99.5], [200.0], direction="higher")
    assert not c.significant and c.n_new == 1


def test_direction_lower_means_smaller_is_better() -> None:
    base = [10.0, 10.2, 9.9, 10.1, 10.0]
    faster = [8.0, 8.1, 7.9, 8.05, 8.0]
    c = compare_samples(base, faster, direction="lower")
    assert c.significant and c.better is True and c.ratio < 1
    c = compare_samples(faster, base, direction="lower")
    assert c.significant and c.better is False
    c = compare_samples(base, faster, direction="higher")
    assert c.significant and c.better is False


def test_floor_applies_to_the_estimate() -> None:
    base = [1000.0, 1001.0, 999.0, 1000.5, 999.5]
    new = [v * 1.015 for v in base]  # a precise 1.5% change: interval excludes 1
    c = compare_samples(base, new, direction="higher")
    assert c.ci_low > 1.0
    assert not c.significant and c.better is None
    c = compare_samples(base, new, direction="higher", floor=0.01)
    assert c.significant and c.better is True
    # A noisy 3% change whose interval reaches 1 stays unflagged whatever the floor.
    noisy = compare_samples([100.0, 90.0, 110.0], [103.0, 93.0, 113.0], direction="higher")
    assert noisy.ci_low < 1.0 and not noisy.significant


def test_zeros_compare_on_raw_scale() -> None:
    c = compare_samples([0.0, 0.0, 0.0], [3.0, 3.2, 2.9], direction="lower")
    assert c.significant and c.better is False and math.isinf(c.ratio)
    c = compare_samples([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], direction="lower")
    assert not c.significant and c.ratio == 1.0


def test_comparison_fields() -> None:
    c = compare_samples([100.0, 101.0, 99.0], [110.0, 111.0, 109.0], direction="higher")
    assert (c.base_median, c.new_median, c.n_base, c.n_new) == (100.0, 110.0, 3, 3)
    assert c.change_pct == pytest.approx(10.0)
    assert c.ci_low <= c.ratio <= c.ci_high
    with pytest.raises(ValueError):
        compare_samples([1.0], [1.0], direction="sideways")  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "cases"), [(3, 3000), (5, 2000), (10, 1200)])
def test_no_shift_flags_at_most_five_percent(n: int, cases: int) -> None:
    flagged, _ = flag_rate(n, 0.0, seed=1000 + n, cases=cases)
    assert flagged <= 0.05 + allowance(0.05, cases)
    # ... and it is calibrated, not merely conservative (3.2% at n=3, 4.5% at 5 and 10).
    assert flagged >= 0.025


def test_five_percent_shift_with_ten_runs_is_found() -> None:
    cases = 1500
    _, better = flag_rate(10, 0.05, seed=2010, cases=cases)
    assert better >= 0.90 - allowance(0.90, cases)
    # The two-sample t-test, the most powerful test for this data, reaches 0.93.
    assert t_test_power(10, 0.05, 0.05) == pytest.approx(0.93, abs=0.01)


def test_power_with_five_runs_is_near_the_t_test() -> None:
    cases = 2000
    fpr, _ = flag_rate(5, 0.0, seed=3005, cases=cases)
    _, power = flag_rate(5, 0.05, seed=4005, cases=cases)
    limit = t_test_power(5, 0.05, fpr)
    assert power >= limit - 0.05, (power, limit, fpr)


def test_percentile_bootstrap_of_medians_would_be_anti_conservative() -> None:
    # The reason for the calibration: a plain percentile bootstrap of the ratio of
    # medians flags far more than 5% of no-change comparisons at n=3.
    rng = np.random.default_rng(5)
    cases, n, boots = 400, 3, 1000
    base = lognormal(rng, cases, n, 1.0)
    new = lognormal(rng, cases, n, 1.0)
    flagged = 0
    for i in range(cases):
        bi = np.median(base[i][rng.integers(0, n, (boots, n))], axis=1)
        ni = np.median(new[i][rng.integers(0, n, (boots, n))], axis=1)
        lo, hi = np.quantile(ni / bi, [0.025, 0.975])
        flagged += lo > 1 or hi < 1
    assert flagged / cases > 0.07


# ---------------------------------------------------------------------------- decided


def test_median_ci_is_exact_order_statistic_interval() -> None:
    xs = list(range(1, 11))  # n=10: k=2 gives coverage 1 - 2*P(Bin <= 1) = 97.9%
    assert median_ci([float(v) for v in xs]) == (2.0, 9.0)
    lo, hi = median_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    assert math.isinf(lo) and math.isinf(hi)  # n=5 cannot reach 95%
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == (1.0, 6.0)


def test_median_ci_covers_at_least_nominal() -> None:
    rng = np.random.default_rng(11)
    data = rng.exponential(size=(2000, 9))
    true_median = math.log(2.0)
    cover = sum(lo <= true_median <= hi for lo, hi in (median_ci(row.tolist()) for row in data))
    assert cover / 2000 >= 0.95 - 0.01


def test_decided() -> None:
    tight = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9]
    assert decided(tight)
    assert not decided(tight[:5])  # too few for a bounded 95% interval
    assert not decided([100.0, 110.0, 90.0, 105.0, 95.0, 100.0, 103.0])
    assert decided([100.0, 110.0, 90.0, 105.0, 95.0, 100.0, 103.0], rel_halfwidth=0.2)


def test_decision_state_reasons() -> None:
    tight = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9]
    s = decision_state(tight, max_repeats=10)
    assert s.decided and s.stop and s.n == 7 and "decided after 7 runs" in s.reason
    s = decision_state(tight[:3], max_repeats=10)
    assert not s.stop and "at least 6 runs" in s.reason
    noisy = [100.0, 110.0, 90.0, 105.0, 95.0, 100.0, 103.0]
    s = decision_state(noisy, max_repeats=10)
    assert not s.decided and not s.stop and "undecided after 7 runs" in s.reason
    s = decision_state(noisy, max_repeats=7)
    assert s.stop and not s.decided and "maximum of 7 runs" in s.reason
    assert s.achieved > s.target
