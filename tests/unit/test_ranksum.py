"""Tests for iowall.analysis.regress.ranksum: the exact tails are the rank sums counted by hand,
ties add no evidence, and past the exact tables the evidence is the normal tail's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from iowall.analysis.regress import ranksum


def test_exact_tails_are_the_rank_sums_counted_by_hand() -> None:
    # the subset-sum recursion against every k-subset of 1..n enumerated, two-sided
    n = 11
    table = ranksum.exact_tails(n)
    for k in range(1, n // 2 + 1):
        sums = [sum(c) for c in itertools.combinations(range(1, n + 1), k)]
        for s in sorted(set(sums)):
            below = sum(v <= s for v in sums) / len(sums)
            above = sum(v >= s for v in sums) / len(sums)
            assert table[k, s] == pytest.approx(-math.log(min(1.0, 2.0 * min(below, above))), abs=1e-12)


def test_a_tied_sum_is_given_no_more_evidence_than_the_whole_sum_nearer_the_mean() -> None:
    k = np.asarray([4], dtype=np.int64)
    tied = ranksum.evidence(40, k, np.asarray([[12.5]]))[0, 0]  # 4 lowest, two of them tied
    assert (
        tied
        == ranksum.evidence(40, k, np.asarray([[13.0]]))[0, 0]
        < ranksum.evidence(40, k, np.asarray([[10.0]]))[0, 0]
    )


def test_past_the_short_side_the_evidence_is_the_normal_tail() -> None:
    k = np.asarray([80], dtype=np.int64)
    sums = np.asarray([[80 * 161 / 2.0 - 700.0]], dtype=np.float64)
    z = 700.0 / math.sqrt(80 * 80 * 161 / 12.0)
    want = -math.log(math.erfc(z / math.sqrt(2.0)))
    assert ranksum.evidence(160, k, sums)[0, 0] == pytest.approx(want, rel=1e-9)
    far = ranksum.evidence(400, k, np.asarray([[80 * 401 / 2.0 - 700.0]]))[0, 0]  # past EXACT_MAX_RUNS
    z = 700.0 / math.sqrt(80 * 320 * 401 / 12.0)
    assert far == pytest.approx(-math.log(math.erfc(z / math.sqrt(2.0))), rel=1e-9)


def test_a_segment_past_the_exact_tables_builds_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # a segment of more than EXACT_MAX_RUNS runs is judged by the normal tail alone: building
    # its exact table (seconds and megabytes at 1,000 runs) would be spent for nothing
    def no_table(n: int) -> None:
        raise AssertionError(f"an exact table of {n} runs was built")

    monkeypatch.setattr(ranksum, "tail_table", no_table)
    n = ranksum.EXACT_MAX_RUNS + 1
    k = np.asarray([3, 50, n - 3], dtype=np.int64)
    sums = np.asarray([[6, 50 * 51 // 2, (n - 3) * (n - 2) // 2 + 3 * n]], dtype=np.int64)
    assert ranksum.evidence(n, k, sums).shape == (1, 3)
    assert ranksum.max_evidence(n, k, sums).shape == (1,)
