"""The wall of a point, read from its workload's wall-clock budget (pure).

The wall is the state that holds most of the workload threads' time (``analysis.explain.budget``),
named with its mechanism and the numbers that show it:

- on a CPU: the copy (bytes moved per on-CPU second against the memory-copy ceiling, when
  one was measured), another kernel path, or user space;
- runnable but not running: the cgroup's CPU quota (its throttling counters) or other
  processes (their CPU time);
- blocked: on I/O completion, named by the device side (``analysis.explain.device``); fsync
  and the log; dirty throttling; reclaim (the memory cgroup's limit when it was hit); locks
  (the part of a lock wait the CPUs could have served: ``lock_turns``); voluntary sleeps;
  faults.

No verdict (silence) when the window is too short, when no state holds at least
``MIN_SHARE`` of the time, or when the unaccounted time is the largest part: a confident
wrong verdict is worse than none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...vocab.units import fmt_share
from .budget import MIN_WINDOW_S, Budget
from .cpu import cpu_wall
from .device import DEVICE_BUSY, DEVICE_QUEUED, Device, io_wall, request_cause
from .kernel_knowledge import BY_NAME, meaning
from .offcpu import LABELS, LOG_FORCE
from .verdict import TURNS, Wall, who_of

#: the largest state must hold at least this share of the workload's time to be the wall
MIN_SHARE = 0.40
#: a second state holding at least this share is named beside the wall
ALSO_SHARE = 0.25


def lock_turns(b: Budget, ctx: Mapping[str, float]) -> float:
    """Seconds of the workload's sleep on kernel locks that stood in for a wait for a CPU.

    A lock wait costs throughput only when it keeps the waiter from a CPU it could have used:
    the critical section runs anyway, so removing the lock adds parallelism, not work. Freed,
    a lock-wait second would be spent like the threads' other time: on a CPU the share ``c``
    their time outside the lock was (user and kernel, lock spinning left out), blocked
    otherwise. It needs ``c`` CPU-seconds, and only the CPU-seconds the point's threads left
    to others or idle (``cpus`` less their mean CPUs, over the window) can serve it: of the
    lock wait ``L``, ``L - spare / c`` (when positive) would have waited runnable. Eight 4k
    buffered writers of one XFS file on 2 CPUs slept 36% of their time on its i_rwsem and
    wrote as fast as eight writers of eight files (1325 and 1141 MiB/s against 1150 and
    1089); four 512-byte direct writers of one file slept 59% on it, the CPUs two-thirds idle,
    and wrote at 5 MiB/s against 8 (docs/explain.md). 0 without the tasks probe's CPUs or the
    machine's CPU count."""
    lock, cpus = b.totals.get("blocked:lock", 0.0), ctx.get("cpus")
    if not lock or not cpus or b.cpus is None:
        return 0.0
    spin = b.kernel_paths.get("lock", 0.0)
    oncpu = b.totals.get("user", 0.0) + b.totals.get("kernel", 0.0) - spin
    rest = b.wall_s - lock - spin
    if oncpu <= 0 or rest <= 0:
        return 0.0
    # the tasks probe's per-class CPUs come from tick counts; the threads' own schedstat
    # time is exact, and more than it in 2 of 8 runs of eight writers on 2 CPUs (1.54 CPUs
    # against 1.31, while a quarter of their time went runnable behind each other)
    working = max(b.cpus[1], (oncpu + spin) / b.window_s) if b.window_s else b.cpus[1]
    spare = max(0.0, cpus - working) * b.window_s
    return max(0.0, lock - spare / min(1.0, oncpu / rest))


def _states(b: Budget, ctx: Mapping[str, float]) -> dict[str, float]:
    """The budget's shares grouped into candidate walls: on a CPU as one state (its path is
    named after), except the time on a CPU inside a mechanism that also blocks (fsync, a
    fault, reclaim, dirty throttling; lock slow paths), which counts with that mechanism.
    Lock waits the CPUs could not have run (``lock_turns``) count as waits for a CPU."""
    s = {c: b.share(c) for c in b.totals}
    wall = b.wall_s or 1.0
    inside = {r: v / wall for r, v in b.kernel_contexts.items()}
    if "reclaim" not in inside:  # a profile without contexts (older runs): its paths
        inside["reclaim"] = b.kernel_paths.get("reclaim", 0.0) / wall
    inside["lock"] = b.kernel_paths.get("lock", 0.0) / wall
    oncpu = s.get("user", 0) + s.get("kernel", 0)
    moved = min(sum(inside.values()), s.get("kernel", 0))
    scale = moved / sum(inside.values()) if sum(inside.values()) else 0.0
    # runnable behind its own threads and the bed's workers: more runnable threads than
    # CPUs, so the CPUs are the wall
    turns = ctx.get(TURNS, 0.0)
    out = {
        "cpu": oncpu - moved + s.get("runnable:own", 0) + turns,
        "runnable:quota": s.get("runnable:quota", 0),
        "runnable:others": s.get("runnable:others", 0),
        "unaccounted": s.get("unaccounted", 0),
    }
    for c, v in s.items():
        if c.startswith("blocked:"):
            out[c] = v
    for r, v in inside.items():
        out[f"blocked:{r}"] = out.get(f"blocked:{r}", 0.0) + v * scale
    if turns:
        out["blocked:lock"] -= turns
    return out


@dataclass(frozen=True)
class Decision:
    """The wall (None: silence), a second state that holds a large share too, and notes."""

    wall: Wall | None
    also: tuple[Wall, ...] = ()
    notes: tuple[str, ...] = ()


def decide(
    b: Budget,
    device: Device,
    ctx: Mapping[str, float],
    neighbours: Sequence[tuple[str, float]] = (),
    devnos: Sequence[str] = (),
    helpers: Mapping[str, float] | None = None,
) -> Decision:
    """The wall, a second state of at least ``ALSO_SHARE``, and the notes that go with them
    (too short, unaccounted time, the neighbours' share). ``ctx``: ``memcopy_bytes_per_s``,
    ``jobs`` and ``cpus`` when known; ``neighbours``: the busiest other processes as (name,
    CPU-seconds); ``devnos``: the bed's devices (MAJ:MIN) when known, so that an I/O limit
    the cgroup sets on another device is not taken for this point's; ``helpers``: the CPUs
    the threads outside the workload spent in each mechanism of ``analysis.explain.kernel_knowledge``
    (``why.helper_mechanisms``), to name what held the writeback an fsync waited for.

    Time spent runnable behind other processes stretches every other state alike: unless it
    is the largest state itself, the workload's own wall is chosen among the other states,
    their shares taken of the time the neighbours left (the neighbours' share is noted)."""
    notes: list[str] = []
    if b.window_s < MIN_WINDOW_S:
        return Decision(
            None,
            (),
            (
                f"The I/O lasted {b.window_s:.2f} s: too short to explain "
                f"(start-up and the ends weigh too much under "
                f"{MIN_WINDOW_S:.0f} s); run it longer (a larger size or a "
                "runtime).",
            ),
        )
    # the lock waits that stood in for a wait for a CPU, as a share of the time: computed
    # once, read by the states and by the CPU wall's sentences
    ctx = {**ctx, TURNS: lock_turns(b, ctx) / (b.wall_s or 1.0)}
    states = _states(b, ctx)
    tags = _tags_of_split(b, device, states)
    if tags:  # the split's own requests took every tag: one wall, not two
        states["blocked:io"] = states.get("blocked:io", 0.0) + states.pop("blocked:block-queue")
    unacc = states.pop("unaccounted")
    if unacc > 0.10:
        notes.append(
            f"{fmt_share(unacc)} of the workload's time is unaccounted (blocked with no stack sampled)."
        )
    others = states.get("runnable:others", 0.0)
    ranked = sorted(states.items(), key=lambda kv: -kv[1])
    if ranked[0][0] != "runnable:others" and others < 1.0:
        ranked = [(k, v / (1.0 - others)) for k, v in ranked if k != "runnable:others"]
    top, share = ranked[0]
    if others >= 0.05 or top == "runnable:others":
        names = ", ".join(f"{n} {s:.1f} CPU-s" for n, s in neighbours[:3]) or "not named"
        rest = (
            ""
            if top == "runnable:others"
            else f"; the wall's share is of the {fmt_share(1 - others)} they left it"
        )
        notes.append(
            f"Other processes shared the CPUs ({names}): the workload waited "
            f"{fmt_share(others)} of its time runnable behind them{rest}."
        )
    if share < MIN_SHARE or unacc >= share:
        notes.append(
            f"No single state holds most of the workload's time (largest: "
            f"{top} {fmt_share(share)}): no wall is named."
        )
        return Decision(None, (), tuple(notes))
    hp = dict(helpers or {})
    wall = _name(top, share, b, device, ctx, neighbours, devnos, hp)
    if tags and wall.kind == "request-size":
        wall = Wall(
            wall.kind,
            wall.sentence + f" The smaller requests also took every request tag: {fmt_share(tags)} of its "
            "time (counted in the wait above) went to waiting for a free one (blk_mq_get_tag).",
            wall.share,
            wall.evidence | {"tag_wait_share": round(tags, 4)},
            wall.mechanism,
        )
    also = tuple(
        _name(k, v, b, device, ctx, neighbours, devnos, hp) for k, v in ranked[1:2] if v >= ALSO_SHARE
    )
    if wall.kind == "lock":  # the I/O is serial because one lock holder issues it at a time
        also = tuple(_behind_lock(a) if a.kind == "io-latency" else a for a in also)
    return Decision(wall, tuple(a for a in also if a.kind != wall.kind), tuple(notes))


def _tags_of_split(b: Budget, device: Device, states: Mapping[str, float]) -> float:
    """The share of time waiting for request tags that the requests made smaller (split,
    not merged) caused, to count with them: one I/O split into 256 requests needs 256 tags.
    0 when there is no such wait or no such cause."""
    q = states.get("blocked:block-queue", 0.0)
    if not q or b.mechanisms.get("block-queue", ("", 0.0))[0] != "tags":
        return 0.0
    return q if request_cause(device) is not None else 0.0


def _behind_lock(w: Wall) -> Wall:
    """An I/O-latency wall beside a lock wall: one I/O in flight because the lock's holder
    issues them one at a time, so more jobs would wait on the lock, not deepen the queue."""
    said = w.sentence.replace(
        ": more jobs or a deeper queue would move it.",
        ": the lock's holder issues them one at a time, so more jobs would wait on the lock.",
    )
    return Wall(w.kind, said, w.share, w.evidence | {"behind_lock": True}, w.mechanism)


def _name(
    top: str,
    share: float,
    b: Budget,
    dev: Device,
    ctx: Mapping[str, float],
    neighbours: Sequence[tuple[str, float]],
    devnos: Sequence[str] = (),
    helpers: Mapping[str, float] | None = None,
) -> Wall:
    who = who_of(b)
    if top == "cpu":
        return cpu_wall(share, b, ctx, who, dev)
    if top == "runnable:quota":
        return _quota(share, b, who)
    if top == "runnable:others":
        names = ", ".join(n for n, _ in neighbours[:3]) or "other processes"
        return Wall(
            "cpu-contention",
            f"Waiting for a CPU: {who} was runnable but not running "
            f"{fmt_share(share)} of its time while other processes used the CPUs "
            f"({names}).",
            share,
        )
    reason = top.split(":", 1)[1]
    fn, caller = b.top_functions.get(reason, ("", ""))
    mech = b.mechanisms.get(reason, ("", 0.0))[0]
    if reason == "io":
        return io_wall(share, b, dev, who, devnos)
    on = _on_cpu(b, reason, share)
    if reason == "fsync":
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
        if mech in QUEUEING and saturated(dev):
            # wbt or tags in the fsync's own writeback, in front of a device that is full
            # anyway: they decide where the queue forms, the device how fast it drains (the
            # limits --quick point: wbt_lat_usec 0 against 2000, 2614 vs 2292 MiB/s, ±26%)
            mech = "writeback"
        held, held_said = _held_by(mech, helpers or {}, dev)
        if mech and mech != "writeback":
            said += f", most of its wait in {_mech_words(mech)}" + (f" ({where})" if where else "")
        elif where:
            said += f", most of its wait{log} ({where})"
        return Wall(
            "fsync",
            said + held_said + ".",
            share,
            {"function": fn, "syscall": call, "sleeps_in": leaf, "waits_in": mech},
            held or (mech if mech != "writeback" else "") or ("writeback" if mech else ""),
        )
    if reason == "dirty-throttle":
        held, held_said = _held_by("writeback", helpers or {}, dev)
        return Wall(
            "dirty-throttle",
            f"Dirty throttling: {who} was paused in "
            f"balance_dirty_pages {fmt_share(share)} of its time, waiting for writeback "
            f"to bring the dirty pages under the limit{held_said}.",
            share,
            {},
            held,
        )
    if reason == "reclaim":
        return _reclaim(share, b, who, fn, mech)
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
        what = f": {dev.describe()}" if dev.kind == "loop" else ""
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
        what = f" ({dev.describe()}{worker})" if dev.kind else ""
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
    what = f" The bed's device is {dev.describe()}{worker}." if dev.kind in ("loop", "zram") else ""
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


def _quota(share: float, b: Budget, who: str) -> Wall:
    cg = next((c for c in b.cgroups if c.get("delta", {}).get("cg_cpu_nr_periods")), None)
    d = cg.get("delta", {}) if cg else {}
    q = (cg or {}).get("limits", {}).get("cpu_quota_cpus")
    per, thr = d.get("cg_cpu_nr_periods", 0.0), d.get("cg_cpu_nr_throttled", 0.0)
    quota = f" ({q:.2f} CPU)" if q else ""
    periods = f": throttled in {fmt_share(thr / per)} of periods" if per else ""
    return Wall(
        "cpu-quota",
        f"Capped by its cgroup's CPU quota{quota}{periods} "
        f"({d.get('cg_cpu_throttled_s', 0.0):.1f} s throttled); {who} waited "
        f"{fmt_share(share)} of its time runnable but not allowed to run.",
        share,
        {"quota_cpus": q, "nr_periods": per, "nr_throttled": thr},
    )


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
