"""The early test on results stored on a grain as coarse as their noise (a harness that keeps
fio's human-readable 1.1 GiB/s, whole microseconds, counts): the baseline's model of counts
(``predictive.Counts``, ``predictive.on_grain``). A value one grain away is not a fall by
itself; a fall of one grain under every result is shown but not its size (inconclusive), a
fall of two grains fails the gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iowall.analysis.regress.gate import Verdict
from iowall.analysis.regress.history import SeriesRow, from_rows
from iowall.analysis.regress.predictive import Counts, on_grain, predictive, step_of
from iowall.analysis.regress.series_gate import gate_newest
from iowall.report.history import newest_line


def _status(values: np.ndarray | list[float]) -> str:
    v = gate_newest(list(values))
    return v.status if isinstance(v, Verdict) else "untested"


def _human(mib_s: np.ndarray) -> np.ndarray:
    """fio's figure as a harness stores it: whole MiB/s under 1024, GiB/s to one decimal above."""
    return np.where(mib_s < 1024.0, np.round(mib_s), np.round(mib_s / 1024.0, 1) * 1024.0)


def _gibs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return _human(rng.uniform(1000.0, 1100.0) * np.exp(rng.normal(0.0, 0.02, 60)))


def _usecs(seed: int) -> np.ndarray:
    """Operations per second from a latency stored in whole microseconds (8 us, CV 6%)."""
    rng = np.random.default_rng(seed)
    return 1e6 / np.round(8.0 * np.exp(rng.normal(0.0, 0.06, 60)))


@pytest.mark.parametrize("make", [_gibs, _usecs], ids=["gibs", "usecs"])
def test_noise_on_a_coarse_grain_does_not_alarm(make) -> None:  # type: ignore[no-untyped-def]
    """6 series of 60 with no change replayed, every other result gated (144 gated results):
    none is a regression. Before the model of counts: 9 (gibs) and 10 (usecs)."""
    fails = sum(
        _status(x[: t + 1]) == "regression" for x in map(make, range(700, 706)) for t in range(12, 60, 2)
    )
    assert fails == 0


def test_a_fall_of_one_grain_is_inconclusive_and_of_two_fails() -> None:
    """30 results all stored as 1.1 GiB/s, then 1.0 GiB/s: two results the baseline never
    showed in 30 (Jeffreys: P(both <= 1.0) = 0.5 x 1.5 / (31 x 32)), but each figure may sit
    anywhere within half a step of 0.1 GiB/s, so the fall is of any size from nothing to
    17.4%: inconclusive, saying so (a regression of -9.1% [-9.1%, -9.1%] before). Where the
    history shows the step (1.0 now and then) a fall to 0.9 is two steps: a regression."""
    x = [1126.4] * 30 + [1024.0, 1024.0]
    assert _status(x[:31]) in ("same", "inconclusive")
    v = gate_newest(x)
    assert isinstance(v, Verdict) and v.status == "inconclusive" and "grain" in v.reason
    assert v.row.cmp.ci_low == pytest.approx((1024.0 - 51.2) / (1126.4 + 51.2), rel=0.01)
    assert v.row.cmp.ci_high >= 1.0
    shows = ([1126.4] * 4 + [1024.0]) * 6
    assert _status([*shows, 921.6, 921.6]) == "regression"
    assert _status([*shows, 1024.0, 1024.0]) == "same"


def test_a_value_the_baseline_shows_is_not_a_fall() -> None:
    """Results mostly 1.1 GiB/s and now and then 1.0: the newest two at 1.1 and 1.0 (or
    three of them at 1.0, as often as the baseline shows 1.0 at all) are the same level."""
    base = [1126.4] * 6 + [1024.0] + [1126.4] * 6 + [1024.0, 1126.4, 1126.4]
    assert _status([*base, 1024.0, 1126.4]) == "same"
    alt = [1024.0, 1126.4] * 8
    assert _status([*alt, 1024.0, 1024.0, 1024.0]) == "same"


def test_counts_tails_by_hand() -> None:
    """Beta(c + 1/2, n - c + 1/2) predictive: n = 4 with c = 1 at or below: F 1.5/5, both of
    two 1.5 x 2.5 / (5 x 6), the newest and one of two before 2E[F²] - E[F³]."""
    c = Counts((0.0, 0.0, 0.0, -0.1), 0.1)
    assert math.isclose(c.tail(-0.1, 1, False), 0.3)
    assert math.isclose(c.tail(-0.1, 2, False), 0.125)
    assert math.isclose(c.tail(-0.1, 3, False), 2 * 0.125 - 0.125 * 3.5 / 7.0)
    assert math.isclose(c.tail(0.0, 2, True), 3.5 * 4.5 / 30.0)


def test_the_grain_is_read_only_where_it_is_coarse() -> None:
    """Continuous noise: none; whole MiB/s on a spread of 4 MiB/s: none (the grain is fine);
    stale repeats (a result stored twice) on continuous noise: none; two values a grain
    apart, a pile at one value below which values are whole MiB/s, or a single value: the
    grain."""
    rng = np.random.default_rng(7)
    assert on_grain(np.log(1000.0 * np.exp(rng.normal(0.0, 0.01, 40)))) == 0.0
    assert on_grain(np.log(np.round(1000.0 * np.exp(rng.normal(0.0, 0.004, 40))))) == 0.0
    stale = 1000.0 * np.exp(rng.normal(0.0, 0.01, 40))
    stale[1::4] = stale[0::4]
    assert on_grain(np.log(stale)) == 0.0
    assert on_grain(np.log(np.array([1024.0, 1126.4] * 10))) == pytest.approx(math.log(1.1))
    piled = np.log(np.array([1024.0] * 6 + [1001.0, 1010.0, 1017.0, 996.0, 1020.0, 1013.0]))
    assert on_grain(piled) > 0.0
    assert on_grain(np.zeros(9)) == 1.0
    assert len(predictive(np.zeros(9)).models) == 2
    one, rest = np.log(np.full(9, 1126.4)), np.log(np.array([1126.4, 921.6, 1024.0, 1126.4]))
    assert step_of(one, rest) == pytest.approx(math.log(1.1))  # the nearest other value's step
    assert step_of(one, one) == 0.0
    assert step_of(np.log(1000.0 * np.exp(rng.normal(0.0, 0.01, 40))), rest) == 0.0


def test_history_says_a_one_step_fall_is_of_a_size_the_figures_do_not_hold() -> None:
    """`iowall history --series`'s newest line on 30 results of 1.1 GiB/s and two of 1.0: the
    interval a step either side, and why."""
    rows = [SeriesRow("bw", str(i), v) for i, v in enumerate([1126.4] * 30 + [1024.0] * 2)]
    (h,) = from_rows(rows)
    assert h.newest is not None
    line = newest_line(h, h.newest)
    assert "grain of about 10% a step" in line and "[-17.4%, +0.0%]" in line
