"""The gate on a fall the history has shown before and come back from (``episodes``): a
clocksource that falls back until a cold boot, a patrol scan, a neighbour for a few nights.
Such a fall is that episode again or a regression: inconclusive, never a pass; a fall deeper
than any episode, or shown only by single results, is still a regression."""

from __future__ import annotations

import numpy as np

from iowall.analysis.regress.episodes import deviations, shown
from iowall.analysis.regress.gate import Verdict
from iowall.analysis.regress.series_gate import SeriesResults, gate_newest, gate_series


def _verdict(values: np.ndarray) -> Verdict:
    v = gate_newest(list(values))
    assert isinstance(v, Verdict)
    return v


def _history(seed: int, at: int, length: int, depth: float, n: int = 42) -> np.ndarray:
    """n results of normal noise (CV 1%) with a slowdown of ``depth`` for ``length`` results
    from ``at`` that went, and the newest two results down by 30%."""
    rng = np.random.default_rng(seed)
    x = 1000.0 * np.exp(rng.normal(0.0, 0.01, n))
    x[at : at + length] *= 1.0 - depth
    x[n - 2 :] *= 0.7
    return x


def test_a_fall_the_history_came_back_from_is_inconclusive() -> None:
    """A 30% slowdown of 2, 6 or 8 results that went (6 and 8: found as two change points,
    an episode between levels that agree), then two results 30% down, 6 seeds each: none a
    regression, 17 inconclusive with why (one the early test already calls the same).
    Before the episodes were read: a regression in those 17."""
    seen = 0
    for length in (2, 6, 8):
        for seed in range(6):
            v = _verdict(_history(seed, 20, length, 0.3))
            assert v.status != "regression", (length, seed, v.reason)
            seen += v.status == "inconclusive" and "came back 1 time before" in v.reason
    assert seen == 17


def test_a_fall_deeper_than_any_episode_is_a_regression() -> None:
    """The history came back from 5% down for three results; 30% down is new: a regression."""
    assert all(_verdict(_history(seed, 20, 3, 0.05)).status == "regression" for seed in range(6))


def test_single_results_far_down_are_no_episode_of_two() -> None:
    """Two lone results 30% down in the history (dropouts) show no window of two that far:
    two results 30% down now are still a regression."""
    for seed in range(6):
        x = _history(seed, 0, 0, 0.0)
        x[[15, 28]] *= 0.7
        assert _verdict(x).status == "regression", seed


def test_an_episode_still_going_is_the_newest_results_own() -> None:
    """Windows count only when a later result came back: the slowdown the newest results
    are in is not one the series came back from."""
    going = np.concatenate((np.zeros(20), np.full(3, -0.3)))
    assert shown(going, -0.3, 2, True).count == 0
    went = np.concatenate((going, np.zeros(5)))
    seen = shown(went, -0.3, 2, True)
    assert (seen.count, seen.episodes, seen.windows) == (2, 1, 27)
    assert shown(went, 0.3, 2, False).count == 0  # nothing as far the other way


def test_deviations_read_an_episode_from_the_level_around_it() -> None:
    """Four results 30% down between two segments at one level are measured from that level
    (the early test's noise drops them: a segment under 6 results); a step down that stays
    (the levels either side differ) is measured from its own median."""
    logs = np.concatenate((np.zeros(20), np.full(4, -0.3), np.zeros(16)))
    d = deviations(logs, [20, 24], 40, least=6, most=120)
    assert d.size == 40 and np.count_nonzero(d <= -0.3) == 4
    assert deviations(logs, [20, 24], 40, least=6, most=120, back=False).size == 36
    stairs = np.concatenate((np.zeros(20), np.full(10, -0.3), np.full(10, -0.6)))
    assert not np.any(deviations(stairs, [20, 30], 40, least=6, most=120))


def test_the_series_gate_says_why() -> None:
    """``iowall gate --series``'s row: inconclusive, and the reason names the episode."""
    x = _history(1, 20, 6, 0.3)
    s = SeriesResults("s", "bw", "MiB/s", "higher", tuple(map(str, range(x.size))), tuple(x))
    res, (t,) = gate_series([s])
    assert res.verdicts[0].status == "inconclusive"
    assert t.early.window is not None and t.early.window.shown is not None
    assert t.early.window.shown.episodes == 1
