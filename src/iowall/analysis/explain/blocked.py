"""The wall of a workload blocked in the kernel for a reason other than I/O completion (pure;
the reasons are ``analysis.explain.offcpu``'s; a wait for I/O is named by the device side,
``analysis.explain.device``): fsync, with what held the writeback it waited for (the bed's kernel
threads' work, the loop device's worker, a full device); dirty throttling; reclaim (the memory
cgroup's limit when it was hit); kernel locks; voluntary sleep; the block layer's queueing (a
request tag, wbt, io.latency, io.cost, the io.max throttle, or a full device); any other reason
with its function and mechanism (``analysis.explain.kernel_knowledge``)."""

from __future__ import annotations

from collections.abc import Mapping

from ...vocab.units import fmt_share
from .budget import Budget
from .device import DEVICE_BUSY, DEVICE_QUEUED, Device, fullness
from .kernel_knowledge import BY_NAME, meaning
from .offcpu import LABELS, LOG_FORCE
from .verdict import Wall


def blocked_wall(
    reason: str, share: float, b: Budget, dev: Device, who: str, helpers: Mapping[str, float]
) -> Wall:
    """The wall of ``who`` blocked for ``reason``, named by the function sampled most, its caller and its
    mechanism: fsync, dirty throttling, reclaim, a lock, a sleep, block-layer queueing, any other."""
    fn, caller = b.top_functions.get(reason, ("", ""))
    mech = b.mechanisms.get(reason, ("", 0.0))[0]
    if reason == "fsync":
        return _fsync(share, b, who, fn, mech, dev, helpers)
    if reason == "dirty-throttle":
        return _dirty_throttle(share, who, dev, helpers)
    if reason == "writeback":
        return _writeback(share, b, who, dev, helpers)
    if reason == "reclaim":
        return _reclaim(share, b, who, fn, mech)
    if reason == "space":
        return _space(share, who, fn, caller, dev)
    if reason == "lock":
        where = f", taken in {caller}" if caller else ""
        return Wall(
            "lock",
            f"Lock contention: {who} waited {fmt_share(share)} of its time for kernel locks ({fn}{where}).",
            share,
            {"function": fn, "caller": caller},
            mech,
        )
    if reason == "sleep":
        return Wall(
            "sleep",
            f"{who} slept voluntarily {fmt_share(share)} of its time ({fn}): "
            "its own rate limit or think time holds it, not the I/O path.",
            share,
        )
    if reason == "block-queue":
        if mech in QUEUEING and saturated(dev):
            return _queued_at_device(share, who, fn, dev)
        return _block_queue(share, who, fn, mech, dev)
    return _blocked_on(share, b, who, reason, fn, caller, mech)


def _fsync(
    share: float, b: Budget, who: str, fn: str, mech: str, dev: Device, helpers: Mapping[str, float]
) -> Wall:
    """In fsync (or fadvise64 writing back): the mechanism most of its wait was in (journal
    commit, log force …) or, when none holds half of it, each part of the wait
    (``_wait_parts``); and what held the writeback it waited for (``_held_by``)."""
    on = _on_cpu(b, "fsync", share)
    log = " in the filesystem's log force" if LOG_FORCE.match(fn) else ""
    call = b.syscalls.get("fsync", "")
    what = (
        "fsync"
        if call in ("", "fsync")
        else f"{call} writing back its dirty pages"
        if call == "fadvise64"
        else call
    )
    leaf = b.leaves.get("fsync", "")
    where = f"{fn}, asleep in {leaf}" if leaf and leaf != fn else fn
    said = f"{who} spent {fmt_share(share)} of its time in {what}{on}"
    parts = _wait_parts(b.mechanism_shares.get("fsync", {}), dev)
    if mech in QUEUEING and saturated(dev):
        # wbt or tags in the fsync's own writeback, in front of a device that is full
        # anyway: they decide where the queue forms, the device how fast it drains (the
        # limits --quick point: wbt_lat_usec 0 against 2000, 2614 vs 2292 MiB/s, ±26%)
        mech = "writeback"
    if mech and not parts:  # the mechanism sampled most holds under a tenth of the wait
        mech = ""
    if mech and max(parts.values()) < MOST:
        # no mechanism holds most of the wait: its parts, each with its share
        held, held_said = _held_by("writeback", helpers, dev) if "writeback" in parts else ("", "")
        other = b.mechanism_shares.get("fsync", {}).get("", 0.0)
        if len(parts) == 1:
            ((m, x),) = parts.items()
            said += f", {fmt_share(x)} of its wait {'on' if m == 'writeback' else 'in'} {_part_words(m)}"
        else:
            said += f", its wait split: {_parts_said(parts)}" + (
                f", other waits {fmt_share(other)}" if other >= PART else ""
            )
        return Wall(
            "fsync",
            said + held_said + ".",
            share,
            {"function": fn, "syscall": call, "sleeps_in": leaf, "waits_in": "", "wait_parts": parts},
            held,
        )
    held, held_said = _held_by(mech, helpers, dev)
    if mech and mech != "writeback":
        said += f", most of its wait in {_mech_words(mech)}" + (f" ({where})" if where else "")
    elif mech == "writeback":  # the wait is on the writeback of its own pages
        said += ", most of its wait on its pages' writeback" + (f" ({where})" if where else "")
    elif log:
        said += f", most of its wait{log} ({where})"
    elif where:
        said += f", most of its wait in {where}"
    return Wall(
        "fsync",
        said + held_said + ".",
        share,
        {"function": fn, "syscall": call, "sleeps_in": leaf, "waits_in": mech},
        held or (mech if mech != "writeback" else "") or ("writeback" if mech else ""),
    )


#: a mechanism holds "most" of a wait from this share of its samples on
MOST = 0.5
#: a part of a split wait is named from this share of its samples on
PART = 0.10
#: a part's words where they differ from the mechanism's own
_PART_WORDS = {"writeback": "its pages' writeback"}


def _part_words(mech: str) -> str:
    return _PART_WORDS.get(mech) or _mech_words(mech)


def _parts_said(parts: Mapping[str, float]) -> str:
    """``its pages' writeback 49%, the filesystem's log force 29%``: a split wait's parts."""
    return ", ".join(f"{_part_words(m)} {fmt_share(x)}" for m, x in parts.items())


def _wait_parts(shares: Mapping[str, float], dev: Device) -> dict[str, float]:
    """The known mechanisms of a wait holding at least ``PART`` of its samples, largest
    first; in front of a saturated device the block layer's queueing counts as writeback
    (``QUEUEING``): it says where the queue forms, not why."""
    merged: dict[str, float] = {}
    for m, x in shares.items():
        k = "writeback" if m in QUEUEING and saturated(dev) else m
        if k:
            merged[k] = merged.get(k, 0.0) + x
    return dict(sorted(((m, x) for m, x in merged.items() if x >= PART), key=lambda kv: -kv[1]))


#: fsync and dirty throttling each hold at least this share for their waits to count as one
WRITEBACK_PART = 0.10


def writeback_waits(b: Budget, dev: Device, states: Mapping[str, float]) -> bool:
    """Whether the workload's fsync and dirty-throttling waits are one wait, for writeback:
    each holds ``WRITEBACK_PART`` of the time and the fsync's largest part is its pages'
    writeback (not a journal commit or a log force). A writer whose writes exceed the dirty
    limit cannot dirty pages faster than writeback cleans them, in whichever state it waits."""
    if min(states.get("blocked:fsync", 0.0), states.get("blocked:dirty-throttle", 0.0)) < WRITEBACK_PART:
        return False
    parts = _wait_parts(b.mechanism_shares.get("fsync", {}), dev)
    return next(iter(parts), "") == "writeback"


def _writeback(share: float, b: Budget, who: str, dev: Device, helpers: Mapping[str, float]) -> Wall:
    """Waiting for writeback in two states (``writeback_waits``): paused in balance_dirty_pages
    and in fsync, each with its part of ``share``, the fsync's own wait by mechanism, and what
    held the writeback (``_held_by``)."""
    fs, ts = b.share("blocked:fsync"), b.share("blocked:dirty-throttle")
    f, t = share * fs / (fs + ts), share * ts / (fs + ts)
    parts = _wait_parts(b.mechanism_shares.get("fsync", {}), dev)
    call = b.syscalls.get("fsync", "") or "fsync"
    inside = (
        "mostly on its pages' writeback"
        if parts["writeback"] >= MOST
        else f"{_parts_said(parts)} of that wait"
    )
    held, held_said = _held_by("writeback", helpers, dev)
    return Wall(
        "writeback",
        f"Waiting for writeback: {who} spent {fmt_share(share)} of its time waiting for dirty pages "
        f"to be written back: paused in balance_dirty_pages {fmt_share(t)} (dirty throttling) and "
        f"in {call} {fmt_share(f)} ({inside}){held_said}.",
        share,
        {"dirty_throttle_share": round(t, 4), "fsync_share": round(f, 4), "fsync_parts": parts},
        held or "writeback",
    )


def _dirty_throttle(share: float, who: str, dev: Device, helpers: Mapping[str, float]) -> Wall:
    """Paused in balance_dirty_pages, waiting for writeback to bring the dirty pages under
    the limit, with what held that writeback (``_held_by``)."""
    held, held_said = _held_by("writeback", helpers, dev)
    return Wall(
        "dirty-throttle",
        f"Dirty throttling: {who} was paused in "
        f"balance_dirty_pages {fmt_share(share)} of its time, waiting for writeback "
        f"to bring the dirty pages under the limit{held_said}.",
        share,
        {},
        held,
    )


#: what a caller of the ENOSPC flush was doing when its reservation failed
_RESERVING = {
    "xfs_create": "a create",
    "xfs_file_buffered_write": "a buffered write",
    "ext4_create": "a create",
    "ext4_da_write_begin": "a buffered write",
    "ext4_write_begin": "a buffered write",
}
#: what each filesystem's space wait is, by the function it waits in
_SPACE = {
    "xfs_flush_inodes": "{doing} could not reserve its blocks, so XFS wrote back every dirty inode of the "
    "filesystem and tried again",
    "ext4_nonda_switch": "ext4's free blocks ran low against what delayed allocation holds, so it stopped "
    "delaying allocation and wrote back the filesystem's dirty inodes, and the writer waited for that",
    "ext4_should_retry_alloc": "ext4 found no free blocks for {doing}, so before trying again it forced the "
    "journal to commit, which releases the blocks the running transaction had freed, and waited for that",
    "__reserve_bytes": "btrfs's space for the reservation was used up, so it waited on a reservation ticket "
    "while btrfs flushed delalloc, ran delayed items and committed transactions to free space",
}


#: space waits of a filesystem out of blocks after ENOSPC (not a reservation's worst case)
_OUT_OF_BLOCKS = frozenset({"ext4_should_retry_alloc"})


#: space waits for metadata space kept apart from the data's: df shows the data's
_METADATA_WAITS = frozenset({"__reserve_bytes"})
_METADATA = (
    " (df counts the data's space; the reservation is of metadata, which btrfs keeps in chunks of "
    "its own: `btrfs filesystem df` shows them)"
)


def _space(share: float, who: str, fn: str, caller: str, dev: Device) -> Wall:
    """Waiting for the filesystem to free space for a reservation: XFS's ENOSPC flush
    (``xfs_flush_inodes``), ext4's switch out of delayed allocation (``ext4_nonda_switch``),
    btrfs's reservation tickets (``__reserve_bytes``): each writes back or commits what
    delayed allocation and reservations hold before the caller goes on; ext4 out of blocks
    (``ext4_should_retry_alloc``) forces the journal's commit before a retry."""
    doing = _RESERVING.get(caller, "a reservation")
    where = f", from {caller}" if caller else ""
    what = _SPACE.get(fn, "the filesystem freed space for a reservation before going on").format(doing=doing)
    why = (
        # out of blocks, not short of them against a reservation: only room moves it
        "The filesystem is out of blocks: a larger filesystem, or fewer files, removes the wait."
        if fn in _OUT_OF_BLOCKS
        else "Until writeback allocates them, delayed allocation and the filesystem's reservations "
        "hold the worst case of the blocks and metadata each dirty file may need, so many small "
        "dirty files hold far more than their data: a larger filesystem, or less dirty data at a "
        "time, removes the wait."
    )
    full = fullness(dev)
    seen = f" df saw the filesystem {full}{_METADATA if fn in _METADATA_WAITS else ''}." if full else ""
    return Wall(
        "space",
        f"Out of free space: {who} waited {fmt_share(share)} of its time for the filesystem to free "
        f"space ({fn}{where}): {what}. {why}{seen}",
        share,
        {"function": fn, "caller": caller},
        "space-flush",
    )


def _blocked_on(share: float, b: Budget, who: str, reason: str, fn: str, caller: str, mech: str) -> Wall:
    """Blocked on any other reason (a worker, a fault, a wait): its label, the function
    sampled most and its caller, and what its mechanism means when the table knows it."""
    on = _on_cpu(b, reason, share)
    label = LABELS.get(reason, reason)
    via = f", from {caller}" if caller and caller != fn else ""
    named = f" ({fn}{via})" if fn else ""
    inside = f": {meaning(mech)}" if mech and mech in BY_NAME else ""
    return Wall(
        reason,
        f"{who} spent {fmt_share(share)} of its time blocked on {label}{on}{named}{inside}.",
        share,
        {"function": fn, "caller": caller},
        mech,
    )


#: what a mechanism is called in a sentence (the table's own line is longer)
_WORDS = {
    "journal-commit": "the jbd2 journal commit",
    "journal-space": "jbd2 journal space",
    "log-force": "the filesystem's log force",
    "log-space": "waiting for XFS log space",
    "log-tree": "btrfs's log-tree commit",
    "transaction-commit": "a btrfs transaction commit",
    "writeback": "writeback",
    "cache-flush": "the device's cache flush",
    "wbt": "writeback throttling (wbt)",
    "tags": "waiting for a request tag",
    "space-flush": "the ENOSPC flush",
}


def _mech_words(mech: str) -> str:
    return _WORDS.get(mech, mech)


#: the helpers' CPUs in one mechanism that make it the holder of the writeback
HELD_CPUS = 0.3
#: mechanisms of the threads outside the workload that can hold its writeback
_HOLDERS = ("compression", "checksum", "encryption", "block-allocation", "unwritten-conversion")


def _held_by(mech: str, helpers: Mapping[str, float], dev: Device) -> tuple[str, str]:
    """What held the writeback a wait is for (``mech`` is ``writeback`` or unknown): work
    the bed's kernel threads did on it (compression in btrfs's workers …, from the profile)
    when it took at least ``HELD_CPUS``, else the loop worker when it was on a CPU at least
    ``DEVICE_BUSY`` of the window; the mechanism and the words, or ("", "")."""
    if mech not in ("writeback", ""):
        return "", ""
    work = [(k, v) for k, v in helpers.items() if k in _HOLDERS and v >= HELD_CPUS]
    if work:
        k, v = max(work, key=lambda kv: kv[1])
        return k, (
            f"; the writeback it waited for was {k}: the kernel's threads spent {v:.2f} CPU in it "
            f"({meaning(k)})"
        )
    if dev.loop_cpus is not None and dev.loop_cpus >= DEVICE_BUSY:
        what = f": {dev.what}" if dev.kind == "loop" else ""
        return "loop-worker", (
            f"; the writeback ran at the pace of the loop device's worker, on a CPU "
            f"{fmt_share(min(1.0, dev.loop_cpus))} of the window{what}"
        )
    if saturated(dev):
        worker = (
            f", its worker on a CPU {fmt_share(min(1.0, dev.loop_cpus))} of the window"
            if dev.loop_cpus is not None
            else ""
        )
        what = f" ({dev.what}{worker})" if dev.kind else ""
        return ("loop-worker" if dev.kind == "loop" else "device"), (
            f"; the writeback waited for the device, {fmt_share(dev.util or 0)} busy with "
            f"{dev.queue_depth or 0:.0f} requests in flight{what}"
        )
    return "", ""


#: waits in the block layer's queueing: in front of a saturated device they only say where
#: the queue forms
QUEUEING = ("wbt", "rq-qos", "tags")


def saturated(dev: Device) -> bool:
    """The device busy at least ``DEVICE_BUSY`` of the window with at least
    ``DEVICE_QUEUED`` requests in flight: requests queue at it, whatever queues above it."""
    return (dev.util or 0) >= DEVICE_BUSY and (dev.queue_depth or 0) >= DEVICE_QUEUED


def _queued_at_device(share: float, who: str, fn: str, dev: Device) -> Wall:
    """A wait for a tag (or in wbt) in front of a device busy with requests queued: the
    device drains the queue, the tags only say where it forms (four buffered readers of the
    limits run waited 47% for tags of a loop device 97% busy with 60 requests in flight)."""
    worker = (
        f", its worker on a CPU {fmt_share(min(1.0, dev.loop_cpus))} of the window"
        if dev.loop_cpus is not None
        else ""
    )
    what = f" The bed's device is {dev.what}{worker}." if dev.kind in ("loop", "zram") else ""
    return Wall(
        "device",
        f"Device-bound: {who} waited {fmt_share(share)} of its time to queue its requests ({fn}) "
        f"while the device was {fmt_share(dev.util or 0)} busy with {dev.queue_depth or 0:.0f} requests "
        f"in flight: they queue for a device that is full.{what}",
        share,
        {"function": fn, "device_util": dev.util, "device_queue_depth": dev.queue_depth},
        "loop-worker" if dev.kind == "loop" and not dev.dio else "",
    )


def _block_queue(share: float, who: str, fn: str, mech: str, dev: Device) -> Wall:
    """A wait in the block layer's queueing, told apart by the function it sleeps in: a
    request tag (nr_requests), wbt, io.latency, io.cost, the io.max throttle."""
    q = dev.queue
    if mech == "tags":
        nr = q.get("nr_requests")
        depth = f": queue/nr_requests = {nr} in force" if nr else ""
        said = (
            f"waited {fmt_share(share)} of its time for a free request tag (blk_mq_get_tag){depth}, "
            "so no more requests could be in flight on the device"
        )
    elif mech == "wbt":
        lat = q.get("wbt_lat_usec")
        target = f", wbt_lat_usec = {lat}" if lat else ""
        said = f"waited {fmt_share(share)} of its time in writeback throttling (wbt{target}): {meaning(mech)}"
    elif mech in ("iolatency", "iocost", "blk-throttle", "rq-qos"):
        said = f"waited {fmt_share(share)} of its time held by {meaning(mech)} ({fn})"
    else:
        said = (
            f"waited {fmt_share(share)} of its time in the block layer's queueing ({fn}) "
            "before its I/O reached the device"
        )
    return Wall("block-queue", f"{who} {said}.", share, {"function": fn, "queue": dict(q)}, mech)


def _on_cpu(b: Budget, reason: str, share: float) -> str:
    """`` (12% of it on a CPU)`` when a mechanism's time was partly on a CPU."""
    part = b.kernel_contexts.get(reason, 0.0) / (b.wall_s or 1.0)
    return f" ({fmt_share(part / share)} of it on a CPU)" if share and part >= 0.05 * share else ""


def _reclaim(share: float, b: Budget, who: str, fn: str, mech: str = "") -> Wall:
    cg = next((c for c in b.cgroups if c.get("limits", {}).get("mem_limit_bytes")), None)
    if cg is not None:
        lim = cg["limits"]["mem_limit_bytes"]
        hits = cg.get("delta", {}).get("cg_mem_max_events", 0.0)
        if hits > 0:
            return Wall(
                "memcg-reclaim",
                f"Reclaiming memory in its own context: the memory "
                f"cgroup's {lim / 2**20:.0f} MiB limit was hit {hits:,.0f} times; "
                f"{who} spent {fmt_share(share)} of its time in reclaim"
                f"{_on_cpu(b, 'reclaim', share)} ({fn}).",
                share,
                {"limit_bytes": lim, "hits": hits},
                mech,
            )
    return Wall(
        "reclaim",
        f"Memory reclaim: {who} spent {fmt_share(share)} of its time reclaiming memory itself ({fn}).",
        share,
        {},
        mech,
    )
