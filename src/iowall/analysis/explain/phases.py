"""Pure: the two phases of a buffered write that ends with ``end_fsync``: copying into the page
cache, then writing back what is still dirty. fio's runtime covers both; its bandwidth series
shows the first as bandwidth and the second as zeros (no write completes while fsync runs).

Method: when the series runs on to the run's end with zeros (``workloads.fio_series`` pads
them; no write completes while fsync runs), the writeback phase is the time from the last step
in which fio logged any write to the series' end, and the copy phase the rest of fio's runtime;
fio's log misses its first ~0.1 s, so the start of the series is not used. Steps of a slow
copy tail count as copy however small: CI saw 0.17 s of steps under 5% of the peak carry 9%
of a run's bytes. A series that stops at its last busy step (stored before the padding) gives
the copy phase from its first step's start to its last step above 5% of its peak step
instead, and the writeback phase as the rest. The series' step (one resolution) bounds the
error of each phase's duration.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: Windows below this share of the peak are the tail of the copy, not the copy.
TAIL = 0.05


@dataclass(frozen=True)
class WritePhases:
    """Durations (s) and rates (B/s) of the copy and writeback phases of one point."""

    bytes: float
    runtime_s: float
    copy_s: float
    writeback_s: float
    resolution_s: float

    @property
    def copy_bytes_per_s(self) -> float:
        return self.bytes / self.copy_s if self.copy_s > 0 else 0.0

    @property
    def writeback_share(self) -> float:
        return self.writeback_s / self.runtime_s if self.runtime_s > 0 else 0.0


def step_of(samples: Sequence[tuple[float, float]]) -> float:
    """A series' step (s): the median gap between consecutive sample times (the last sample,
    stamped at the run's end, may come sooner than a step), 0 for fewer than two samples."""
    gaps = [b - a for (a, _), (b, _) in zip(samples, samples[1:], strict=False) if b > a]
    return round(statistics.median(gaps), 6) if gaps else 0.0


def write_phases(
    samples: Sequence[tuple[float, float]],
    *,
    total_bytes: float,
    runtime_s: float,
    interval_s: float | None = None,
) -> WritePhases | None:
    """Split ``runtime_s`` by fio's write bandwidth series ``samples`` (step end time in s,
    B/s; its step ``interval_s``, by default read from the samples), or None when the series
    has no step or no data."""
    if not samples or runtime_s <= 0 or total_bytes <= 0:
        return None
    step = interval_s if interval_s is not None else step_of(samples)
    peak = max(v for _, v in samples)
    if peak <= 0 or step <= 0:
        return None
    last_busy = max(t for t, v in samples if v >= TAIL * peak)
    last_moving = max(t for t, v in samples if v > 0.0)
    end = samples[-1][0]
    if samples[-1][1] == 0.0 and end > last_moving:  # zeros to the run's end: the writeback
        writeback_s = min(runtime_s, end - last_moving)
        copy_s = runtime_s - writeback_s
    else:
        copy_s = min(runtime_s, last_busy - (samples[0][0] - step))
        writeback_s = max(0.0, runtime_s - copy_s)
    return WritePhases(
        bytes=total_bytes, runtime_s=runtime_s, copy_s=copy_s, writeback_s=writeback_s, resolution_s=step
    )
