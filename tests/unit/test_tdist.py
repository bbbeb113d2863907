"""The plain-Python Student t quantile against scipy's ``stdtrit`` (what the compare rule used
before), and the rule's intervals unchanged by the swap."""

from __future__ import annotations

import random

import pytest
from scipy.special import stdtrit

from iowall.analysis.regress import stats
from iowall.analysis.regress.tdist import CF_FROM, t_quantile, upper_tail

DFS = [
    0.3,
    1,
    1.5,
    2,
    2.7,
    3,
    4.2,
    5,
    7.9,
    10,
    17.3,
    30,
    55.5,
    100,
    250,
    998,
    5000,
    CF_FROM - 1,
    CF_FROM,
    1e6,
    1e9,
]
LEVELS = [0.01, 0.2, 0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.999, 0.9999, 0.999999]


@pytest.mark.parametrize("df", DFS)
def test_quantile_matches_scipy(df: float) -> None:
    for c in LEVELS:
        for p in (0.5 + c / 2, 0.5 - c / 2):
            want = float(stdtrit(df, p))
            assert t_quantile(df, p) == pytest.approx(want, rel=1e-12, abs=1e-300), (df, p)


def test_quantile_inverts_the_tail() -> None:
    for df in (1.0, 3.3, 40.0, 700.0):
        t = t_quantile(df, 0.975)
        assert upper_tail(t, df) == pytest.approx(0.025, rel=1e-12)
    assert t_quantile(12.0, 0.5) == 0.0


@pytest.mark.parametrize("bad", [(0.0, 0.9), (-1.0, 0.9), (5.0, 0.0), (5.0, 1.0), (float("nan"), 0.9)])
def test_quantile_refuses_what_has_none(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        t_quantile(*bad)


def test_compare_intervals_unchanged_from_the_scipy_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed inputs (2 to 60 runs a side, unequal spreads, a zero): the same ratio, interval
    ends and call as with scipy's quantile, to 1e-12."""
    rng = random.Random(7)
    cases = []
    for m, n in [(2, 2), (3, 5), (5, 5), (8, 12), (20, 20), (60, 45)]:
        for shift, sd_new in [(1.0, 0.03), (1.04, 0.03), (0.9, 0.1)]:
            base = [1e9 * (1 + rng.gauss(0, 0.03)) for _ in range(m)]
            new = [1e9 * shift * (1 + rng.gauss(0, sd_new)) for _ in range(n)]
            cases.append((base, new))
    cases.append(([0.0, 1.0, 2.0, 1.5], [1.0, 2.5, 3.0, 2.0]))
    ours = [stats.compare_samples(b, x, direction="higher") for b, x in cases]
    monkeypatch.setattr(stats, "t_quantile", lambda df, p: float(stdtrit(df, p)))
    theirs = [stats.compare_samples(b, x, direction="higher") for b, x in cases]
    for a, b in zip(ours, theirs, strict=True):
        assert a.significant == b.significant and a.better == b.better
        for f in ("ratio", "ci_low", "ci_high"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12), f
