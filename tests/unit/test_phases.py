"""The copy / writeback split of a buffered write, on fio bandwidth logs."""

from __future__ import annotations

import pytest

from iowall.analysis.explain.phases import write_phases

GIB = 1 << 30


def test_split_by_the_log() -> None:
    # 100 ms windows: 0.3 s of copying (the last window a short tail), then nothing
    samples = [(0.4, 9.0 * GIB), (0.5, 9.5 * GIB), (0.6, 2.0 * GIB), (0.7, 0.1 * GIB)]
    ph = write_phases(samples, total_bytes=2 * GIB, runtime_s=1.0, interval_s=0.1)
    assert ph is not None
    assert ph.copy_s == pytest.approx(0.3)  # 0.3 → 0.6: the 0.7 window is under 5% of peak
    assert ph.writeback_s == pytest.approx(0.7)
    assert ph.writeback_share == pytest.approx(0.7)
    assert ph.copy_bytes_per_s == pytest.approx(2 * GIB / 0.3)


def test_no_split_without_data() -> None:
    assert write_phases([], total_bytes=GIB, runtime_s=1.0, interval_s=0.1) is None
    assert write_phases([(0.5, 0.0)], total_bytes=GIB, runtime_s=1.0, interval_s=0.1) is None
    # a log longer than fio's runtime (start-up skew) never gives a negative writeback
    ph = write_phases([(0.1, GIB), (1.5, GIB)], total_bytes=GIB, runtime_s=1.2, interval_s=0.1)
    assert ph is not None and ph.writeback_s == 0.0 and ph.copy_s == 1.2


def test_padded_series_takes_the_writeback_from_its_zero_tail() -> None:
    # fio misses its log's first ~0.1 s: the copy is the runtime less the zero tail, and the
    # step is read from the samples
    samples = [(0.2, 4.0 * GIB), (0.3, 4.0 * GIB), (0.4, 0.0), (0.5, 0.0), (0.6, 0.0)]
    ph = write_phases(samples, total_bytes=GIB, runtime_s=0.65)
    assert ph is not None and ph.resolution_s == pytest.approx(0.1)
    assert ph.writeback_s == pytest.approx(0.3) and ph.copy_s == pytest.approx(0.35)


def test_a_slow_copy_tail_before_the_zeros_is_copy() -> None:
    # a step at 2.5% of the peak, then fsync's zeros: that step still wrote (fio logged it)
    samples = [(0.2, 4.0 * GIB), (0.3, 4.0 * GIB), (0.4, 0.1 * GIB), (0.5, 0.0), (0.6, 0.0)]
    ph = write_phases(samples, total_bytes=GIB, runtime_s=0.65)
    assert ph is not None
    assert ph.writeback_s == pytest.approx(0.2) and ph.copy_s == pytest.approx(0.45)
