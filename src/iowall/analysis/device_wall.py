"""The device side of a point (pure): the bed's device over the I/O window from the
diskstats series, and the name of a wall of waiting for I/O, where the device side decides
between the device (busy, with requests queued), serial latency (one I/O in flight, the device
idle between them) and a hold above the device (the workload waits far longer per I/O than
the device takes: a block-layer limit when the cgroup sets one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .budget import Budget
from .wall_verdict import Wall, pct, us

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
    (Little's law: time in queue / I/Os), I/Os per second; None where not measured."""

    util: float | None = None
    queue_depth: float | None = None
    await_s: float | None = None
    iops: float | None = None
    #: the loop worker's CPUs over the window (a ram or loop bed's device is a kernel thread)
    loop_cpus: float | None = None


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
    ``DEV_read_iops``, ``DEV_write_iops``: the busiest device) and the tasks probe's
    ``loop_cpus``."""
    best: Device | None = None
    for name, pts in series.items():
        if not name.endswith("_util"):
            continue
        dev = name[: -len("_util")]
        util = window_mean(pts, w0, w1)
        qd = window_mean(series.get(f"{dev}_queue_depth", ()), w0, w1)
        iops = sum(
            x
            for x in (window_mean(series.get(f"{dev}_{d}_iops", ()), w0, w1) for d in ("read", "write"))
            if x is not None
        )
        aw = qd / iops if qd is not None and iops else None
        d = Device(util, qd, aw, iops)
        if best is None or (util or 0) > (best.util or 0):
            best = d
    loop = window_mean(series.get("loop_cpus", ()), w0, w1)
    b = best or Device()
    return Device(b.util, b.queue_depth, b.await_s, b.iops, loop)


def io_wall(share: float, b: Budget, dev: Device, who: str, devnos: Sequence[str] = ()) -> Wall:
    ios = sum(t.syscalls for t in b.threads)
    wait = b.totals.get("blocked:io", 0.0)
    per_io = wait / ios if ios else None
    ev = {
        "device_util": dev.util,
        "device_queue_depth": dev.queue_depth,
        "device_await_s": dev.await_s,
        "workload_wait_per_io_s": per_io,
    }
    limits = [
        lim
        for c in b.cgroups
        for lim in c.get("limits", {}).get("io_limits") or ()
        if not devnos or lim.get("dev") in devnos
    ]
    busy = f"{pct(dev.util)} busy" if dev.util is not None else "busy time not measured"
    if dev.loop_cpus is not None and dev.loop_cpus >= DEVICE_BUSY:
        return Wall(
            "device",
            f"Device-bound: {who} waited {pct(share)} of its time for I/O "
            f"while the loop device's worker was on a CPU {pct(min(1, dev.loop_cpus))} "
            "of the window (the bed's device is that kernel thread).",
            share,
            ev,
        )
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
            f" (each I/O waited {us(per_io)} against the device's {us(dev.await_s)})"
            if per_io and dev.await_s
            else ""
        )
        if limits:
            return Wall(
                "block-throttle",
                f"Held by a block-layer limit ({what}) while the "
                f"device was {busy}: {who} waited {pct(share)} of its time for I/O"
                f"{detail}.",
                share,
                ev | {"io_limits": limits},
            )
        return Wall(
            "above-device",
            f"Held above the device: {who} waited {pct(share)} of its "
            f"time for I/O while the device was {busy}{detail}: the requests queue in "
            "the layers above it.",
            share,
            ev,
        )
    if dev.queue_depth is not None and dev.queue_depth <= 1.5:
        lat = f"each I/O took {us(dev.await_s)} on the device" if dev.await_s else "one I/O at a time"
        return Wall(
            "io-latency",
            f"Latency-bound: {who} waited {pct(share)} of its time for "
            f"I/O with {dev.queue_depth:.1f} request(s) in flight on average; {lat}, "
            f"and the device was {busy}: more jobs or a deeper queue would move it.",
            share,
            ev,
        )
    queued = (dev.queue_depth or 0) >= DEVICE_QUEUED and (dev.util or 0) >= DEVICE_QUEUED_BUSY
    if dev.util is not None and (dev.util >= DEVICE_BUSY or queued):
        return Wall(
            "device",
            f"Device-bound: {who} waited {pct(share)} of its time for I/O "
            f"while the device was {busy} with {dev.queue_depth or 0:.1f} requests in "
            f"flight on average (each took {us(dev.await_s or 0)}).",
            share,
            ev,
        )
    return Wall(
        "io",
        f"{who} waited {pct(share)} of its time for I/O to complete; the "
        f"device was {busy}"
        + (f" with {dev.queue_depth:.1f} requests in flight" if dev.queue_depth is not None else "")
        + ".",
        share,
        ev,
    )


def _io_limit(x: Mapping[str, Any]) -> str:
    parts = [
        f"{k} {v / 2**20:.0f} MiB/s" if k.endswith("bps") else f"{k} {v:,.0f}"
        for k, v in x.items()
        if k != "dev" and v
    ]
    return f"{x.get('dev', '?')} " + " ".join(parts)
