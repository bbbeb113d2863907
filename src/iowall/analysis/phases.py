"""Pure: the two phases of a buffered write that ends with ``end_fsync``: copying into the page
cache, then writing back what is still dirty. fio's runtime covers both; its bandwidth log
(100 ms windows) shows only the first, since no write completes while fsync runs.

Method: the copy phase spans fio's bandwidth log from the start of its first window to the end
of its last window above 5% of the peak window; the writeback phase is the rest of fio's
runtime. The log's resolution (one window) bounds the error of each phase's duration.
"""

from __future__ import annotations

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


def write_phases(samples: Sequence[tuple[float, float]], *, total_bytes: float,
                 runtime_s: float, interval_s: float) -> WritePhases | None:
    """Split ``runtime_s`` by fio's write bandwidth log ``samples`` (window end time in s,
    B/s), or None when the log has no window or the split is below its resolution."""
    if not samples or runtime_s <= 0 or interval_s <= 0 or total_bytes <= 0:
        return None
    peak = max(v for _, v in samples)
    if peak <= 0:
        return None
    active = [t for t, v in samples if v >= TAIL * peak]
    copy_s = min(runtime_s, max(active) - (min(t for t, _ in samples) - interval_s))
    return WritePhases(bytes=total_bytes, runtime_s=runtime_s, copy_s=copy_s,
                       writeback_s=max(0.0, runtime_s - copy_s), resolution_s=interval_s)
