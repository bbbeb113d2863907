"""The device side of a point (pure): the bed's device over the I/O window from the
diskstats series' means, with what the run recorded of it (loop, zram, the queue limits in
force) and the workload's side, and the mechanism that made its requests smaller than the
workload's I/Os (``request_cause``). The wall of waiting for I/O it decides is
``analysis.explain.io_wall``'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...vocab.units import fmt_bytes, fmt_share

#: the device is the wall when busy at least this share of the window with requests queued
DEVICE_BUSY = 0.80
#: ... or when this many requests were in flight on it on average while it was busy at least
#: this share: they queue at the device, not above it (a limit above the device keeps them
#: from reaching it), so a deeper queue would not move the point
DEVICE_QUEUED = 8.0
DEVICE_QUEUED_BUSY = 0.50


@dataclass(frozen=True)
class Device:
    """The bed's device over the window: busy share, mean requests in flight, time per I/O
    (Little's law: time in queue / I/Os), I/Os per second; and its side of the point: the
    requests it completed (per second, bytes, merges) against the I/Os the workload issued,
    the queue limits in force and what the device is. None where not measured."""

    util: float | None = None
    queue_depth: float | None = None
    await_s: float | None = None
    iops: float | None = None
    #: the loop worker's CPUs over the window (a ram or loop bed's device is a kernel thread)
    loop_cpus: float | None = None
    name: str = ""
    #: ``loop`` (with ``backing``: its backing file, and ``dio``), ``zram`` (``comp``), ``disk``
    kind: str = ""
    backing: str = ""
    dio: bool = False
    comp: str = ""
    #: per direction (``read``, ``write``): requests, bytes and merges per second
    reqs: Mapping[str, float] = field(default_factory=dict)
    bytes_per_s: Mapping[str, float] = field(default_factory=dict)
    merges: Mapping[str, float] = field(default_factory=dict)
    #: the queue's attributes in force (queue/max_sectors_kb …, knobs applied)
    queue: Mapping[str, str] = field(default_factory=dict)
    #: the workload's side: its main direction, bytes per I/O it issued, bytes per second,
    #: whether its I/O was direct and sequential
    direction: str = ""
    io_bytes: float | None = None
    workload_bytes_per_s: float | None = None
    direct: bool = False
    sequential: bool = False
    #: fio's median completion latency of the workload's I/Os in its main direction (from
    #: submission to completion): with several in flight, what each I/O waited, where the
    #: workload's blocked time divided by its I/Os is not
    io_latency_s: float | None = None
    #: the I/Os in flight each of the workload's jobs asked for (fio's ``iodepth``; None: not set)
    iodepth: int | None = None
    #: the bed's filesystem at its fullest (the ``df`` probe): used share, least free bytes,
    #: capacity, and its inodes' used share (None: not measured, or no inode count)
    fs_used: float | None = None
    fs_free_bytes: float | None = None
    fs_bytes: float | None = None
    inodes_used: float | None = None

    def request_bytes(self, d: str = "") -> float | None:
        """Mean bytes per request the device completed in direction ``d`` (the workload's)."""
        d = d or self.direction
        r, b = self.reqs.get(d), self.bytes_per_s.get(d)
        return b / r if r and b is not None else None

    def queue_int(self, attr: str) -> int | None:
        try:
            return int(str(self.queue.get(attr, "")).strip())
        except ValueError:
            return None

    @property
    def what(self) -> str:
        """What the bed's device is, in words (``describe``)."""
        return self.describe()

    @property
    def request_size(self) -> float | None:
        """Mean bytes per request the device completed in the workload's direction."""
        return self.request_bytes()

    @property
    def cause(self) -> RequestCause | None:
        """Why its requests were smaller than the workload's I/Os (``request_cause``)."""
        return request_cause(self)

    def describe(self) -> str:
        """What the bed's device is, in words."""
        if self.kind == "loop":
            how = "direct I/O" if self.dio else "buffered"
            into = f" {self.backing}" if self.backing else " its backing file"
            return f"a loop device: its worker thread does each request against{into} ({how})"
        if self.kind == "zram":
            return f"zram: each page compressed ({self.comp or 'its compressor'}) in the submitter's context"
        if self.kind == "disk":
            return "a disk"
        return ""


def device_in_window(means: Mapping[str, float | None]) -> Device:
    """``Device`` from the diskstats series' means over the window (``DEV_util``,
    ``DEV_queue_depth``, ``DEV_read_iops``, ``DEV_write_iops``, ``DEV_*_bytes_per_s``,
    ``DEV_*_merges_per_s``: the busiest device) and the tasks probe's ``loop_cpus``
    (``analysis.explain.evidence.device_means``)."""
    best: Device | None = None
    for name in means:
        if not name.endswith("_util"):
            continue
        dev = name[: -len("_util")]
        util = means[name]
        qd = means.get(f"{dev}_queue_depth")
        per = {
            stem: {d: v for d in ("read", "write") if (v := means.get(f"{dev}_{d}_{stem}")) is not None}
            for stem in ("iops", "bytes_per_s", "merges_per_s")
        }
        reqs = per["iops"]
        iops = sum(reqs.values())
        aw = qd / iops if qd is not None and iops else None
        d = Device(
            util,
            qd,
            aw,
            iops,
            name=dev,
            reqs=reqs,
            bytes_per_s=per["bytes_per_s"],
            merges=per["merges_per_s"],
        )
        if best is None or (util or 0) > (best.util or 0):
            best = d
    return replace(best or Device(), loop_cpus=means.get("loop_cpus"))


def with_facts(
    dev: Device,
    bed: Mapping[str, Any],
    knobs: Mapping[str, Any],
    workload: Mapping[str, Any],
) -> Device:
    """``dev`` with what the run recorded around it: what the bed's device is (its facts:
    ``loop``, ``zram``), the queue attributes in force (the bed's, overridden by the point's
    ``sysfs:queue/…`` and ``sysfs:bdi/read_ahead_kb`` knobs), and the workload's side
    (``direction``, ``io_bytes`` per I/O, ``bytes_per_s``, ``direct``, ``sequential``,
    ``latency_p50_s``)."""
    queue = {str(k): str(v) for k, v in (bed.get("queue") or {}).items()}
    for k, v in knobs.items():
        if str(k).startswith("sysfs:queue/"):
            queue[str(k).removeprefix("sysfs:queue/")] = str(v)
        elif str(k) == "sysfs:bdi/read_ahead_kb":
            queue["read_ahead_kb"] = str(v)
    loop = bed.get("loop") if isinstance(bed.get("loop"), Mapping) else None
    zram = bed.get("zram") if isinstance(bed.get("zram"), Mapping) else None
    name = dev.name or str(bed.get("device") or "").rsplit("/", 1)[-1]
    kind = "loop" if loop is not None else "zram" if zram is not None else ""
    if not kind and name:
        kind = "loop" if name.startswith("loop") else "zram" if name.startswith("zram") else "disk"
    return replace(
        dev,
        name=name,
        kind=kind,
        backing=str((loop or {}).get("backing_file", "")),
        dio=str((loop or {}).get("dio", "0")) == "1",
        comp=str((zram or {}).get("comp_algorithm", "")),
        queue=queue,
        direction=str(workload.get("direction", "")),
        io_bytes=workload.get("io_bytes"),
        workload_bytes_per_s=workload.get("bytes_per_s"),
        direct=bool(workload.get("direct")),
        sequential=bool(workload.get("sequential")),
        io_latency_s=workload.get("latency_p50_s"),
        iodepth=workload.get("iodepth"),
    )


def with_space(dev: Device, metrics: Mapping[str, float]) -> Device:
    """``dev`` with the bed's filesystem at its fullest, from the ``df`` probe's metrics
    (``df_used_share_max``, ``df_free_bytes_min``, ``df_capacity_bytes``,
    ``df_inodes_used_share_max``); unchanged for runs without them."""
    return replace(
        dev,
        fs_used=metrics.get("df_used_share_max"),
        fs_free_bytes=metrics.get("df_free_bytes_min"),
        fs_bytes=metrics.get("df_capacity_bytes"),
        inodes_used=metrics.get("df_inodes_used_share_max"),
    )


def fullness(dev: Device) -> str:
    """How full the bed's filesystem got, in words ("97% full at its fullest, 31.0 MiB of 1.0
    GiB free; 40% of its inodes used"), or "" where the run did not measure it."""
    return fullness_of(dev.fs_used, dev.fs_free_bytes, dev.fs_bytes, dev.inodes_used)


def fullness_of(used: float | None, free: float | None, size: float | None, inodes: float | None) -> str:
    """``fullness`` from its four figures (the device side prints the JSON's rounded ones)."""
    if used is None or not size:
        return ""
    text = f"{fmt_share(used)} full at its fullest, {fmt_bytes(free or 0.0)} of {fmt_bytes(size)} free"
    return text + (f"; {fmt_share(inodes)} of its inodes used" if inodes is not None else "")


#: requests at most this share of the workload's I/O size were made smaller on the way down:
#: a 2 MiB buffered read served as three readahead requests of 690 KiB is readahead doing its
#: job, a 1 MiB write as 256 requests of 4 KiB is a wall (limits --quick, docs/explain.md)
SMALLER = 0.25
#: requests split at a cap are the cap's size (the last piece of each I/O smaller): their mean
#: is at least this share of the cap
AT_CAP = 0.5
#: the device moved at least this many times the workload's own bytes: most of its work was
#: somebody else's
SHARED = 4.0


@dataclass(frozen=True)
class RequestCause:
    """Why the device's requests were smaller than the workload's I/Os (or not merged): the
    mechanism, and the words that say it with its numbers."""

    mechanism: str
    said: str


def request_cause(dev: Device) -> RequestCause | None:
    """The mechanism that made the requests the device completed smaller than the I/Os the
    workload issued, when the numbers show one (pure):

    - ``split``: requests at the cap ``queue/max_sectors_kb`` set, below the I/O size;
    - ``no-readahead``: buffered reads with ``read_ahead_kb`` 0, each served page by page;
    - ``not-merged``: small sequential I/O with ``queue/nomerges`` set and no merge counted.

    None when the requests are the size asked for, when nothing is known of them, or when
    they are smaller for a reason the queue's settings do not show (the caller names the
    sizes then, not a cause)."""
    w, r, d = dev.io_bytes, dev.request_bytes(), dev.direction
    if not w or not r or not d:
        return None
    n = w / r
    what = f"each {fmt_bytes(w)} {d}"
    cap = dev.queue_int("max_sectors_kb")
    if (
        r <= SMALLER * w
        and cap is not None
        and cap * 1024 < w
        and AT_CAP * cap * 1024 <= r <= 1.1 * cap * 1024
    ):
        return RequestCause(
            "split",
            f"{what} reached the device as {n:.0f} requests of {fmt_bytes(r)}: queue/max_sectors_kb = "
            f"{cap} caps a request at {fmt_bytes(cap * 1024)}, so the block layer splits every I/O",
        )
    ra = dev.queue_int("read_ahead_kb")
    if d == "read" and not dev.direct and ra == 0 and r <= SMALLER * w:
        return RequestCause(
            "no-readahead",
            f"{what} reached the device as {n:.0f} requests of {fmt_bytes(r)}, read one after "
            "another: read_ahead_kb = 0, so the page cache reads each page on its own when the "
            "reader asks for it",
        )
    nomerges = dev.queue_int("nomerges")
    merged = dev.merges.get(d)
    if nomerges and dev.sequential and w <= 64 * 1024 and r <= 1.25 * w and not merged:
        return RequestCause(
            "not-merged",
            f"{what} reached the device as its own request of {fmt_bytes(r)}: queue/nomerges = "
            f"{nomerges} turns merging off, so neighbouring I/Os are not joined into larger requests",
        )
    return None
