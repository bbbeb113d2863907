"""``diskstats``: IOPS, bytes, utilisation and queue depth of the bed's block devices."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model import Metric, Series
from .sampling import SampledProbe, intervals, metric, read_text, series, span

#: /proc/diskstats columns after ``major minor name`` (Documentation/admin-guide/iostats.rst).
COLUMNS = (
    "reads",
    "reads_merged",
    "read_sectors",
    "read_ms",
    "writes",
    "writes_merged",
    "write_sectors",
    "write_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
    "discards",
    "discards_merged",
    "discard_sectors",
    "discard_ms",
    "flushes",
    "flush_ms",
)
#: diskstats sectors are always 512 bytes, whatever the device's block size.
SECTOR = 512

Snapshot = dict[str, dict[str, int]]


def parse_diskstats(text: str, wanted: Sequence[str] = ()) -> Snapshot:
    """Devices of /proc/diskstats by name → columns; ``wanted`` filters by name or MAJ:MIN."""
    out: Snapshot = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        name, devno = parts[2], f"{parts[0]}:{parts[1]}"
        if wanted and name not in wanted and devno not in wanted:
            continue
        out[name] = dict(zip(COLUMNS, (int(x) for x in parts[3:]), strict=False))
    return out


def _d(a: dict[str, int], b: dict[str, int], k: str) -> int:
    return max(0, b.get(k, 0) - a.get(k, 0))


Rate = Callable[[float, dict[str, int], dict[str, int]], float]
#: Per-device series: name stem, unit, value over an interval (dt seconds, counters a → b).
_SERIES: tuple[tuple[str, str, Rate], ...] = (
    ("read_iops", "ops_per_s", lambda dt, a, b: _d(a, b, "reads") / dt),
    ("write_iops", "ops_per_s", lambda dt, a, b: _d(a, b, "writes") / dt),
    ("read_bytes_per_s", "bytes_per_s", lambda dt, a, b: _d(a, b, "read_sectors") * SECTOR / dt),
    ("write_bytes_per_s", "bytes_per_s", lambda dt, a, b: _d(a, b, "write_sectors") * SECTOR / dt),
    ("read_merges_per_s", "ops_per_s", lambda dt, a, b: _d(a, b, "reads_merged") / dt),
    ("write_merges_per_s", "ops_per_s", lambda dt, a, b: _d(a, b, "writes_merged") / dt),
    ("util", "share", lambda dt, a, b: min(1.0, _d(a, b, "io_ticks_ms") / (dt * 1000))),
    ("queue_depth", "requests", lambda dt, a, b: _d(a, b, "time_in_queue_ms") / (dt * 1000)),
)


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """Per-device series; totals over the devices (bytes, IOs), busiest device's utilisation."""
    out: list[Series] = []
    metrics: list[Metric] = []
    if len(samples) < 2:
        return out, metrics
    first, last = samples[0][1], samples[-1][1]
    devs = [d for d in last if d in first]
    ivs = list(intervals(samples))
    util_max = 0.0
    for dev in devs:
        rows = [(t, dt, a[dev], b[dev]) for t, dt, a, b in ivs if dev in a and dev in b]
        for stem, unit, fn in _SERIES:
            pts = [(t, fn(dt, a, b)) for t, dt, a, b in rows]
            out.append(series("diskstats", f"{dev}_{stem}", unit, pts))
            if stem == "util":
                util_max = max([util_max, *(v for _, v in pts)])
    wall = span(samples)

    def total(k: str) -> int:
        return sum(_d(first[d], last[d], k) for d in devs)

    rb, wb = total("read_sectors") * SECTOR, total("write_sectors") * SECTOR
    metrics += [
        metric("disk_read_bytes", rb, "bytes", "higher"),
        metric("disk_write_bytes", wb, "bytes", "higher"),
        metric("disk_read_ios", total("reads"), "ops", "higher"),
        metric("disk_write_ios", total("writes"), "ops", "higher"),
        metric("disk_read_merges", total("reads_merged"), "ops"),
        metric("disk_write_merges", total("writes_merged"), "ops"),
        metric("disk_util_max", util_max, "share"),
    ]
    if wall > 0:
        busiest = max((_d(first[d], last[d], "io_ticks_ms") for d in devs), default=0)
        metrics += [
            metric("disk_read_bytes_per_s", rb / wall, "bytes_per_s", "higher"),
            metric("disk_write_bytes_per_s", wb / wall, "bytes_per_s", "higher"),
            metric("disk_read_iops", total("reads") / wall, "ops_per_s", "higher"),
            metric("disk_write_iops", total("writes") / wall, "ops_per_s", "higher"),
            metric("disk_util", min(1.0, busiest / (wall * 1000)), "share"),
            metric("disk_queue_depth", total("time_in_queue_ms") / (wall * 1000), "requests"),
        ]
    return out, metrics


class DiskstatsProbe(SampledProbe[Snapshot]):
    """Block-layer counters of the bed's device(s) (``ctx.devnos`` or ``ctx.devices``)."""

    name = "diskstats"
    summarize = staticmethod(summarize)

    def _wanted(self) -> tuple[str, ...]:
        return self.ctx.devnos or self.ctx.devices

    def unavailable(self) -> str | None:
        if not self._wanted():
            return "the bed has no block device (tmpfs or dir bed)"
        found = parse_diskstats(read_text("/proc/diskstats"), self._wanted())
        if not found:
            return f"{', '.join(self._wanted())} not in /proc/diskstats"
        return None

    def read(self) -> Snapshot:
        return parse_diskstats(read_text("/proc/diskstats"), self._wanted())
