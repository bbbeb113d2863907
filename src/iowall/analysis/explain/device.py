"""The device side of a point (pure): the bed's device over the I/O window from the
diskstats series, and the name of a wall of waiting for I/O, where the device side decides
between the device (busy, with requests queued), serial latency (one I/O in flight, the device
idle between them) and a hold above the device (the workload waits far longer per I/O than
the device takes: a block-layer limit when the cgroup sets one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...vocab.units import fmt_bytes, fmt_duration, fmt_rate, fmt_share
from .budget import Budget
from .verdict import Wall

#: the device is the wall when busy at least this share of the window with requests queued
DEVICE_BUSY = 0.80
#: ... or when this many requests were in flight on it on average while it was busy at least
#: this share: they queue at the device, not above it (a limit above the device keeps them
#: from reaching it), so a deeper queue would not move the point
DEVICE_QUEUED = 8.0
DEVICE_QUEUED_BUSY = 0.50
#: the workload's wait per I/O this many times the device's own time per I/O: held above it
HELD_RATIO = 3.0


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


def window_mean(samples: Sequence[tuple[float, float]], w0: float, w1: float) -> float | None:
    """The mean of a probe series' values over ``[w0, w1]``: of the samples whose intervals
    lie wholly inside it when there are any, else of those whose intervals end inside it. A
    sample straddling the window's start carries what happened before it: the file layout's
    writes, completing in a direct-read point's first second, counted 4.4 requests in flight
    on the device against 0.6 in every second after."""
    ending, inside = [], []
    prev: float | None = None
    for t, v in samples:
        if w0 < t <= w1 + 1e-9:
            ending.append(v)
            if prev is not None and prev >= w0 - 1e-9:
                inside.append(v)
        prev = t
    vals = inside or ending
    return sum(vals) / len(vals) if vals else None


def device_in_window(series: Mapping[str, Sequence[tuple[float, float]]], w0: float, w1: float) -> Device:
    """``Device`` from the diskstats series (``DEV_util``, ``DEV_queue_depth``,
    ``DEV_read_iops``, ``DEV_write_iops``, ``DEV_*_bytes_per_s``, ``DEV_*_merges_per_s``:
    the busiest device) and the tasks probe's ``loop_cpus``."""
    best: Device | None = None
    for name, pts in series.items():
        if not name.endswith("_util"):
            continue
        dev = name[: -len("_util")]
        util = window_mean(pts, w0, w1)
        qd = window_mean(series.get(f"{dev}_queue_depth", ()), w0, w1)

        def per(stem: str, dev: str = dev) -> dict[str, float]:
            out = {}
            for d in ("read", "write"):
                v = window_mean(series.get(f"{dev}_{d}_{stem}", ()), w0, w1)
                if v is not None:
                    out[d] = v
            return out

        reqs = per("iops")
        iops = sum(reqs.values())
        aw = qd / iops if qd is not None and iops else None
        d = Device(
            util,
            qd,
            aw,
            iops,
            name=dev,
            reqs=reqs,
            bytes_per_s=per("bytes_per_s"),
            merges=per("merges_per_s"),
        )
        if best is None or (util or 0) > (best.util or 0):
            best = d
    loop = window_mean(series.get("loop_cpus", ()), w0, w1)
    return replace(best or Device(), loop_cpus=loop)


def with_facts(
    dev: Device,
    bed: Mapping[str, Any],
    knobs: Mapping[str, Any],
    workload: Mapping[str, Any],
) -> Device:
    """``dev`` with what the run recorded around it: what the bed's device is (its facts:
    ``loop``, ``zram``), the queue attributes in force (the bed's, overridden by the point's
    ``sysfs:queue/…`` and ``sysfs:bdi/read_ahead_kb`` knobs), and the workload's side
    (``direction``, ``io_bytes`` per I/O, ``bytes_per_s``, ``direct``, ``sequential``)."""
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
    )


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


def io_wall(share: float, b: Budget, dev: Device, who: str, devnos: Sequence[str] = ()) -> Wall:
    """The wall of waiting for I/O, the first the device side shows of: smaller requests, a shared device,
    the loop worker, a hold above the device, serial latency, a busy device; else the wait itself."""
    ev, per_io = _io_evidence(b, dev)
    limits = _io_limits(b, devnos)
    busy = f"{fmt_share(dev.util)} busy" if dev.util is not None else "busy time not measured"
    return (
        _request_size(share, dev, who, busy, ev)
        or _shared(share, dev, who, busy, ev)
        or _loop_worker(share, dev, who, ev)
        or _held(share, dev, who, busy, ev, per_io, limits)
        or _serial(share, dev, who, busy, ev)
        or _device_busy(share, dev, who, busy, ev)
        or Wall(
            "io",
            f"{who} waited {fmt_share(share)} of its time for I/O to complete; the "
            f"device was {busy}"
            + (f" with {dev.queue_depth:.1f} requests in flight" if dev.queue_depth is not None else "")
            + ".",
            share,
            ev,
        )
    )


def _io_evidence(b: Budget, dev: Device) -> tuple[dict[str, Any], float | None]:
    """What every I/O wall shows: the device's busy share, requests in flight and time per I/O against
    the workload's wait per read/write call (returned too), with request and I/O sizes when known."""
    ios = sum(t.syscalls for t in b.threads)
    wait = b.totals.get("blocked:io", 0.0)
    per_io = wait / ios if ios else None
    ev: dict[str, Any] = {
        "device_util": dev.util,
        "device_queue_depth": dev.queue_depth,
        "device_await_s": dev.await_s,
        "workload_wait_per_io_s": per_io,
    }
    r = dev.request_bytes()
    if r is not None:
        ev |= {"request_bytes": round(r), "io_bytes": dev.io_bytes, "direction": dev.direction}
    return ev, per_io


def _io_limits(b: Budget, devnos: Sequence[str]) -> list[Any]:
    """The block-layer limits (io.max) the workload's cgroups set, on the bed's devices only
    when those are known (``devnos``, MAJ:MIN)."""
    return [
        lim
        for c in b.cgroups
        for lim in c.get("limits", {}).get("io_limits") or ()
        if not devnos or lim.get("dev") in devnos
    ]


def _request_size(share: float, dev: Device, who: str, busy: str, ev: dict[str, Any]) -> Wall | None:
    """Requests made smaller on the way down, when ``request_cause`` names the mechanism
    (split at max_sectors_kb, no readahead, not merged)."""
    cause = request_cause(dev)
    if cause is None:
        return None
    return Wall(
        "request-size",
        f"Requests made smaller on the way down: {who} waited {fmt_share(share)} of its time for "
        f"I/O, and {cause.said} (the device {busy}"
        + (f", its loop worker on a CPU {fmt_share(min(1, dev.loop_cpus))}" if dev.loop_cpus else "")
        + ").",
        share,
        ev | {"queue": dict(dev.queue)},
        cause.mechanism,
    )


def _shared(share: float, dev: Device, who: str, busy: str, ev: dict[str, Any]) -> Wall | None:
    """A shared device: it moved ``SHARED`` times the workload's own bytes while working (busy, or its
    loop worker on a CPU: ``DEVICE_QUEUED_BUSY``), so the requests queue behind other I/O."""
    moved = sum(dev.bytes_per_s.values())
    own = dev.workload_bytes_per_s
    working = (dev.util or 0) >= DEVICE_QUEUED_BUSY or (dev.loop_cpus or 0) >= DEVICE_QUEUED_BUSY
    if own and moved >= SHARED * own and working:
        worker = f", its loop worker on a CPU {fmt_share(min(1, dev.loop_cpus))}" if dev.loop_cpus else ""
        return Wall(
            "device",
            f"A shared device: {who} waited {fmt_share(share)} of its time for I/O while the device "
            f"moved {fmt_rate(moved)}, of which {who}'s own I/O was {fmt_rate(own)} "
            f"({fmt_share(own / moved)}): "
            f"its requests queue behind other I/O (the device {busy}{worker}).",
            share,
            ev | {"device_bytes_per_s": round(moved), "workload_bytes_per_s": round(own)},
            "shared",
        )
    return None


def _loop_worker(share: float, dev: Device, who: str, ev: dict[str, Any]) -> Wall | None:
    """Device-bound at the loop device's worker: the kernel thread that is the bed's device
    was on a CPU at least ``DEVICE_BUSY`` of the window."""
    if dev.loop_cpus is not None and dev.loop_cpus >= DEVICE_BUSY:
        what = f" ({dev.describe()})" if dev.kind == "loop" else " (the bed's device is that kernel thread)"
        return Wall(
            "device",
            f"Device-bound: {who} waited {fmt_share(share)} of its time for I/O "
            f"while the loop device's worker was on a CPU {fmt_share(min(1, dev.loop_cpus))} "
            f"of the window{what}.",
            share,
            ev,
            "loop-worker",
        )
    return None


def _held(
    share: float,
    dev: Device,
    who: str,
    busy: str,
    ev: dict[str, Any],
    per_io: float | None,
    limits: Sequence[Any],
) -> Wall | None:
    """Held above a device under half busy: by a block-layer limit (io.max) the cgroup sets, else in the
    layers above it when each I/O waited ``HELD_RATIO`` times the device's own time per I/O."""
    held = (
        per_io is not None
        and dev.await_s is not None
        and dev.await_s > 0
        and per_io >= HELD_RATIO * dev.await_s
        and (dev.util or 0) < 0.5
    )
    if held or (limits and (dev.util or 0) < 0.5):
        what = ", ".join(_io_limit(x) for x in limits)
        detail = (
            f" (each I/O waited {fmt_duration(per_io)} against the device's {fmt_duration(dev.await_s)})"
            if per_io and dev.await_s
            else ""
        )
        if limits:
            return Wall(
                "block-throttle",
                f"Held by a block-layer limit ({what}) while the "
                f"device was {busy}: {who} waited {fmt_share(share)} of its time for I/O"
                f"{detail}.",
                share,
                ev | {"io_limits": limits},
            )
        return Wall(
            "above-device",
            f"Held above the device: {who} waited {fmt_share(share)} of its "
            f"time for I/O while the device was {busy}{detail}: the requests queue in "
            "the layers above it.",
            share,
            ev,
        )
    return None


def _serial(share: float, dev: Device, who: str, busy: str, ev: dict[str, Any]) -> Wall | None:
    """Latency-bound: at most 1.5 requests in flight on average, the I/Os one after another,
    so the time each takes sets the pace, not the device's capacity."""
    if dev.queue_depth is not None and dev.queue_depth <= 1.5:
        lat = (
            f"each I/O took {fmt_duration(dev.await_s)} on the device" if dev.await_s else "one I/O at a time"
        )
        return Wall(
            "io-latency",
            f"Latency-bound: {who} waited {fmt_share(share)} of its time for "
            f"I/O with {dev.queue_depth:.1f} request(s) in flight on average; {lat}, "
            f"and the device was {busy}: more jobs or a deeper queue would move it.",
            share,
            ev,
        )
    return None


def _device_busy(share: float, dev: Device, who: str, busy: str, ev: dict[str, Any]) -> Wall | None:
    """Device-bound: the device busy at least ``DEVICE_BUSY`` of the window, or at least
    ``DEVICE_QUEUED_BUSY`` with ``DEVICE_QUEUED`` requests in flight (they queue at it)."""
    queued = (dev.queue_depth or 0) >= DEVICE_QUEUED and (dev.util or 0) >= DEVICE_QUEUED_BUSY
    if dev.util is not None and (dev.util >= DEVICE_BUSY or queued):
        what = f" The bed's device is {dev.describe()}." if dev.kind in ("loop", "zram") else ""
        return Wall(
            "device",
            f"Device-bound: {who} waited {fmt_share(share)} of its time for I/O "
            f"while the device was {busy} with {dev.queue_depth or 0:.1f} requests in "
            f"flight on average (each took {fmt_duration(dev.await_s or 0)}).{what}",
            share,
            ev,
            "loop-worker" if dev.kind == "loop" and not dev.dio else "",
        )
    return None


def _io_limit(x: Mapping[str, Any]) -> str:
    parts = [
        f"{k} {fmt_rate(v)}" if k.endswith("bps") else f"{k} {v:,.0f}"
        for k, v in x.items()
        if k != "dev" and v
    ]
    return f"{x.get('dev', '?')} " + " ".join(parts)
