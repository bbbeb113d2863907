"""The wall of waiting for I/O (pure), named by the device side (``analysis.explain.device``):
smaller requests (split, no readahead, not merged), a shared device, completions held by
the kernel's work after the I/O (unwritten extents converted), I/O serialised inside its
submission (the filesystem serialising direct writes, buffered I/O run inside io_submit) or
below it (io_uring's workers queued behind a serialised write), the loop worker, a hold above
the device (a block-layer limit when the cgroup sets one), serial latency (one I/O in flight,
the device idle between them), the device busy with requests queued."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...vocab.units import fmt_duration, fmt_rate, fmt_share
from .budget import Budget
from .device import DEVICE_BUSY, DEVICE_QUEUED, DEVICE_QUEUED_BUSY, SHARED, Device
from .kernel_knowledge import meaning
from .offcpu import FORCED_WAIT, WQ_QUEUED
from .verdict import Wall

#: the workload's wait per I/O this many times the device's own time per I/O: held above it
HELD_RATIO = 3.0
#: work the kernel's threads do on an I/O after the device completed it, before the
#: workload sees it complete (kernel_knowledge mechanisms)
AFTER_IO = ("unwritten-conversion", "checksum", "compression", "encryption")
#: CPUs the threads outside the workload spent in one ``AFTER_IO`` mechanism for it to hold
#: the completions (as ``blocked.HELD_CPUS`` holds a writeback)
AFTER_IO_CPUS = 0.3
#: each I/O took at least this many times the device's own time per request: most of its
#: time was spent above the device (set at 2 after the unwritten case beside a neighbour
#: read 2.9, under HELD_RATIO's 3: the work after the I/O is shown by its CPUs, the ratio
#: only has to say that the device held the I/O for less than half its time)
AFTER_IO_RATIO = 2.0


def io_wall(
    share: float,
    b: Budget,
    dev: Device,
    who: str,
    devnos: Sequence[str] = (),
    tags: float = 0.0,
    behind_lock: bool = False,
    helpers: Mapping[str, float] | None = None,
    punted: bool = False,
) -> Wall:
    """The wall of waiting for I/O, the first the device side shows of: smaller requests, a shared device,
    completions held by work after the I/O, the loop worker, a hold above the device, serial latency,
    a busy device; else the wait itself.
    ``tags``: the share of time waiting for request tags the smaller requests caused, said in a
    request-size wall; ``behind_lock``: the I/O beside a lock wall, issued by the lock's holder;
    ``helpers``: the CPUs threads outside the workload spent per kernel-knowledge mechanism;
    ``punted``: the lock waits counted in the wait are io-wq workers queued behind a serialised
    write (``punted_queue``)."""
    ev, per_io = _io_evidence(b, dev)
    limits = _io_limits(b, devnos)
    busy = f"{fmt_share(dev.util)} busy" if dev.util is not None else "busy time not measured"
    w = (
        _request_size(share, dev, who, busy, ev)
        or _shared(share, dev, who, busy, ev)
        or _after_io(share, dev, who, busy, ev, helpers or {})
        or (_punted(share, b, dev, who, ev) if punted else None)
        or _serialised(share, b, dev, who, ev)
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
    if tags and w.kind == "request-size":
        return _with_tag_waits(w, tags)
    return _behind_lock(w) if behind_lock and w.kind == "io-latency" else w


def _with_tag_waits(wall: Wall, tags: float) -> Wall:
    """A request-size wall with the tag waits its smaller requests caused (``_tags_of_split``):
    counted in its wait, said beside it."""
    return Wall(
        wall.kind,
        wall.sentence + f" The smaller requests also took every request tag: {fmt_share(tags)} of its "
        "time (counted in the wait above) went to waiting for a free one (blk_mq_get_tag).",
        wall.share,
        wall.evidence | {"tag_wait_share": round(tags, 4)},
        wall.mechanism,
    )


def _behind_lock(w: Wall) -> Wall:
    """An I/O-latency wall beside a lock wall: one I/O in flight because the lock's holder
    issues them one at a time, so more jobs would wait on the lock, not deepen the queue."""
    said = w.sentence.replace(
        ": more jobs or a deeper queue would move it.",
        ": the lock's holder issues them one at a time, so more jobs would wait on the lock.",
    )
    return Wall(w.kind, said, w.share, w.evidence | {"behind_lock": True}, w.mechanism)


def _io_evidence(b: Budget, dev: Device) -> tuple[dict[str, Any], float | None]:
    """What every I/O wall shows: the device's busy share, requests in flight and time per I/O against
    the workload's wait per read/write call (returned too), with request and I/O sizes when known."""
    ios = b.calls
    wait = b.totals.get("blocked:io", 0.0)
    per_io = wait / ios if ios else None
    ev: dict[str, Any] = {
        "device_util": dev.util,
        "device_queue_depth": dev.queue_depth,
        "device_await_s": dev.await_s,
        "workload_wait_per_io_s": per_io,
    }
    r = dev.request_size
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
    cause = dev.cause
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


def _after_io(
    share: float, dev: Device, who: str, busy: str, ev: dict[str, Any], helpers: Mapping[str, float]
) -> Wall | None:
    """Completions held above the device by the kernel's work after each I/O: every I/O took
    ``AFTER_IO_RATIO`` times the device's own time per request from submission to completion
    (fio's median: with many in flight, the blocked time over the I/Os would not say it) while
    threads outside the workload spent ``AFTER_IO_CPUS`` in one ``AFTER_IO`` mechanism (the
    profile's stacks): XFS converting unwritten extents as direct writes complete, in its
    ``dio/`` workers, and btrfs verifying sha256 data checksums in its endio workers are the
    two seen here (docs/explain.md)."""
    lat, dev_s = dev.io_latency_s, dev.await_s
    work = _after_io_work(helpers)
    if not lat or not dev_s or lat < AFTER_IO_RATIO * dev_s or work is None:
        return None
    k, v = work
    inflight = f", {dev.queue_depth:.1f} requests in flight there" if dev.queue_depth is not None else ""
    return Wall(
        "above-device",
        f"Held above the device after each I/O: {who} waited {fmt_share(share)} of its time for I/O, "
        f"each I/O {fmt_duration(lat)} from submission to completion (fio's median) against "
        f"{fmt_duration(dev_s)} on the device (the device {busy}{inflight}), while the kernel's threads "
        f"spent {v:.2f} CPU in {k}: {meaning(k)}. The completions wait for that work.",
        share,
        ev | {"io_latency_s": lat, "after_io_cpus": v},
        k,
    )


def workers_work(helpers: Mapping[str, float]) -> str:
    """What the threads outside the workload did on the CPUs it queued for, when they spent
    ``AFTER_IO_CPUS`` in work done after the I/O (a conversion, checksums …): the same work
    holds its completions (``_after_io``), so it costs the workload both ways."""
    work = _after_io_work(helpers)
    return f"; the kernel's threads spent {work[1]:.2f} CPU in {work[0]} ({meaning(work[0])})" if work else ""


def _after_io_work(helpers: Mapping[str, float]) -> tuple[str, float] | None:
    """The ``AFTER_IO`` mechanism the threads outside the workload spent most CPUs in, with
    those CPUs, when at least ``AFTER_IO_CPUS``."""
    work = [(k, v) for k, v in helpers.items() if k in AFTER_IO and v >= AFTER_IO_CPUS]
    return max(work, key=lambda kv: kv[1]) if work else None


def _loop_worker(share: float, dev: Device, who: str, ev: dict[str, Any]) -> Wall | None:
    """Device-bound at the loop device's worker: the kernel thread that is the bed's device
    was on a CPU at least ``DEVICE_BUSY`` of the window."""
    if dev.loop_cpus is not None and dev.loop_cpus >= DEVICE_BUSY:
        what = f" ({dev.what})" if dev.kind == "loop" else " (the bed's device is that kernel thread)"
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


#: what a buffered I/O waited for, by the function it slept in (else a folio being read)
_PAGE_WAITS = {"folio_wait_writeback": "for a folio's writeback"}
#: the share of the I/O wait's samples in the filesystem's serialisation for it to hold the I/O
SERIALISED_SHARE = 0.5


def _serialised(share: float, b: Budget, dev: Device, who: str, ev: dict[str, Any]) -> Wall | None:
    """Serialised: most of the I/O wait in ``dio-serialised`` (a drain of the inode's direct
    I/O, or a direct write made to wait for itself inside io_submit) or ``buffered-aio`` (a
    buffered I/O run inside io_submit), so the I/Os go one at a time whatever depth the job
    asked for: io-latency, named by why."""
    mech, part = b.mechanisms.get("io", ("", 0.0))
    if mech not in ("dio-serialised", "buffered-aio") or part < SERIALISED_SHARE:
        return None
    fn, caller = b.top_functions.get("io", ("", ""))
    call = b.syscalls.get("io", "")
    if mech == "buffered-aio":
        how, why = (
            _PAGE_WAITS.get(fn, "for the page cache to read a folio"),
            "An io_submit is asynchronous only for direct I/O, so each buffered I/O ran in its call; "
            "direct I/O, or io_uring (which reads buffered files asynchronously), keeps them in flight.",
        )
    else:
        how = (
            "for the inode's direct I/O in flight to drain"
            if fn.startswith("inode_dio_wait")
            else "for its own I/O to complete before the call returned"
        )
        why = (
            "The filesystem does this for a direct write that extends the file or is not "
            "block-aligned; writes into allocated blocks, aligned, go in parallel."
        )
    where = f"{fn} < {caller}" if caller else fn
    flight, each = _flight(dev), each_io(dev)
    head = "Serialised by the filesystem" if mech == "dio-serialised" else "Synchronous inside its submission"
    return Wall(
        "io-latency",
        f"{head}: {who} waited {fmt_share(share)} of its time for I/O, "
        f"{fmt_share(part)} of that waiting {how}{f' inside {call}' if call else ''} ({where}), "
        f"the I/Os one at a time: {flight}{each}. {why}",
        share,
        ev | {"function": fn, "caller": caller, "syscall": call, "serialised_share": round(part, 4)},
        mech,
    )


#: the share of the lock waits that must be io-wq workers queued inside direct writes, and the
#: share of the workload's time in serialised direct writes (the lock's holder), for the lock
#: to be the job's queue: with W workers one holds the lock and W - 1 wait, so the holder's
#: drain is about 1/W of the waits (8 workers on 2 CPUs: 6% of the time against 66%; 32, the
#: most one job at iodepth 32 can have busy, would leave it near 2.5%)
QUEUED_SHARE = 0.5
HOLDER_SHARE = 0.01


def punted_queue(b: Budget) -> bool:
    """The lock waits are io_uring's io-wq workers queued on an inode's lock inside direct writes
    (``offcpu.WQ_QUEUED``, most of them) while the write holding it was serialised (waiting for
    the inode's direct I/O to drain, or for itself: ``dio-serialised``): the lock stands in for
    the job's queue, its writes issued one at a time. A lock the job's own threads wait for
    (writers of one file in their own calls) is not this: their lock is the wall."""
    queued = b.mechanism_shares.get("lock", {}).get(WQ_QUEUED, 0.0)
    held = sum(
        b.totals.get(f"blocked:{r}", 0.0) * shares.get(FORCED_WAIT, 0.0)
        for r, shares in b.mechanism_shares.items()
    )
    return queued >= QUEUED_SHARE and held >= HOLDER_SHARE * (b.wall_s or 1.0)


def _punted(share: float, b: Budget, dev: Device, who: str, ev: dict[str, Any]) -> Wall:
    """Serialised below the job (``punted_queue``): io_uring handed the writes to its io-wq
    workers, which queued on the inode's lock behind the write holding it; io-latency, named
    ``dio-serialised`` as the same writes issued by io_submit are."""
    workers = [t for t in b.threads if t.comm.startswith("iou-wrk")]
    wall = sum(t.wall_s for t in workers)
    waited = sum(t.seconds.get("blocked:lock", 0.0) for t in workers) / wall if wall else 0.0
    fn, caller = b.top_functions.get("lock", ("", ""))
    where = f" ({fn} < {caller})" if fn and caller else f" ({fn})" if fn else ""
    n = len(workers)
    return Wall(
        "io-latency",
        f"Serialised by the filesystem, below the job: {who} waited {fmt_share(share)} of its time for "
        f"I/O. io_uring could not issue the writes without blocking and handed them to {n} io-wq "
        f"worker{'s' if n != 1 else ''}, which waited {fmt_share(waited)} of their time for the "
        f"inode's lock{where} while the write holding it waited for the direct I/O in flight: "
        f"the I/Os one at a time: {_flight(dev)}{each_io(dev)}. The filesystem does this for a direct "
        "write that extends the file or is not block-aligned; writes into allocated blocks, "
        "aligned, are issued at once and go in parallel.",
        share,
        ev | {"function": fn, "caller": caller, "io_wq_workers": n, "io_wq_lock_share": round(waited, 4)},
        FORCED_WAIT,
    )


def _flight(dev: Device) -> str:
    """The requests in flight on average, against the depth the job asked for."""
    asked = f" against the {dev.iodepth} the job asked for" if dev.iodepth and dev.iodepth > 1 else ""
    if dev.queue_depth is None:
        return "the device's requests in flight not measured"
    return f"{dev.queue_depth:.1f} request(s) in flight on average{asked}"


def each_io(dev: Device) -> str:
    """Each I/O's time from submission to completion and on the device, when both are known."""
    if not (dev.io_latency_s and dev.await_s):
        return ""
    return (
        f"; each I/O took {fmt_duration(dev.io_latency_s)} from submission to completion, "
        f"{fmt_duration(dev.await_s)} of it on the device"
    )


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
        what = f" The bed's device is {dev.what}." if dev.kind in ("loop", "zram") else ""
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
