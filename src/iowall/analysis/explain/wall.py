"""The wall of a point, read from its workload's wall-clock budget (pure).

The wall is the state that holds most of the workload threads' time (``analysis.explain.budget``),
named with its mechanism and the numbers that show it:

- on a CPU: the copy (bytes moved per on-CPU second against the memory-copy ceiling, when
  one was measured), another kernel path, or user space;
- runnable but not running: the cgroup's CPU quota (its throttling counters) or other
  processes (their CPU time);
- blocked: on I/O completion, named by the device side (``analysis.explain.device``); fsync
  and the log; dirty throttling; reclaim (the memory cgroup's limit when it was hit); locks
  (but on CPUs full of the point's own work a lock only chooses who waits: ``lock_turns``);
  voluntary sleeps; faults (``analysis.explain.blocked``).

No verdict (silence) when the window is too short, when no state holds at least
``MIN_SHARE`` of the time, or when the unaccounted time is the largest part: a confident
wrong verdict is worse than none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...vocab.units import fmt_share
from .blocked import blocked_wall, writeback_waits
from .budget import MIN_WINDOW_S, Budget
from .cpu import cpu_wall
from .device import Device
from .host import steal_note, steal_sentence
from .io_wall import each_io, io_wall, punted_queue
from .offcpu import LABELS
from .verdict import FIO, STEAL, TURNS, Wall

#: the largest state must hold at least this share of the workload's time to be the wall
MIN_SHARE = 0.40
#: a second state holding at least this share is named beside the wall
ALSO_SHARE = 0.25
#: with no wall, the states holding at least this share are said with their shares (at most 3)
PART_SHARE = 0.10
#: a lock wait stands in for a wait for a CPU only while the CPUs the point's work left
#: unused would raise its throughput by less than this share (``lock_turns``)
LOCK_GAIN = 0.10
#: the most requests in flight on average, per I/O each job keeps in flight, for several jobs'
#: I/O to be one holder's at a time (``held_across_io``): unserialised, N synchronous writers
#: keep up to N in flight
ACROSS_IO_DEPTH = 1.5


def lock_turns(b: Budget, ctx: Mapping[str, float]) -> float:
    """Seconds of the workload's sleep on kernel locks that stood in for a wait for a CPU.

    A lock wait costs throughput only when it keeps the waiter from a CPU it could have used.
    Removed, a lock lets the point's work use the CPU it left unused (idle, to others, or
    spinning in the lock's slow path) at its CPU cost per byte (or less: hand-offs cost CPU
    too): a throughput gain of about spare / useful. Under ``LOCK_GAIN`` the CPUs were full
    of the point's work and the lock only chose which thread waited: freed, a lock-wait
    second would be spent like the threads' other time, on a CPU the share ``c`` their time
    outside the lock was, and of the lock wait ``L`` the part ``L - spare / c`` (when
    positive) would have waited runnable. Otherwise none of it: the lock kept work off CPUs.
    Eight 4k buffered writers of one XFS file on 2 CPUs, asleep on its i_rwsem half their
    time, used 1.2-1.4 CPUs for their work and spun 0.4-0.6 more, and wrote at 0.56-0.73x
    eight writers of eight files (docs/explain.md): spare / useful 0.5-0.7, the lock is the
    wall. 0 without the tasks probe's CPUs or the machine's CPU count."""
    lock = b.totals.get("blocked:lock", 0.0)
    split = lock_cpus(b, ctx)
    if not lock or split is None:
        return 0.0
    useful, spinning, rest = split
    spare = spinning + rest
    spin = b.kernel_paths.get("lock", 0.0)
    oncpu = b.oncpu_s - spin
    outside = b.wall_s - lock - spin
    if oncpu <= 0 or outside <= 0 or spare >= LOCK_GAIN * useful:
        return 0.0
    return max(0.0, lock - spare * b.counted_s / min(1.0, oncpu / outside))


def lock_cpus(b: Budget, ctx: Mapping[str, float]) -> tuple[float, float, float] | None:
    """The machine's CPUs while the workload's threads lived (``Budget.counted_s``, the
    seconds their counts cover) as the point's useful work, its spinning in lock slow paths,
    and the rest (idle or others'): None without the tasks probe's CPUs, the machine's CPU
    count or any work. The counts cover each thread from the look before the window to the
    look after it (or its own start and exit): over the window, eight writers of one file
    read 1.35 CPUs of work where their 3% longer spans give 1.32 (the spans cover 0.88-1.03
    times the window in the explain corpus's runs)."""
    cpus = ctx.get("cpus")
    span = b.counted_s
    if not cpus or b.cpus is None or not span:
        return None
    spin = b.kernel_paths.get("lock", 0.0) / span
    oncpu = b.oncpu_s / span
    # the tasks probe's per-class CPUs come from tick counts; the threads' own schedstat
    # time is exact, and more than it in 2 of 8 runs of eight writers on 2 CPUs (1.54 CPUs
    # against 1.31, while a quarter of their time went runnable behind each other)
    useful = max(b.cpus[1], oncpu) - spin
    if useful <= 0:
        return None
    return useful, spin, max(0.0, cpus - useful - spin)


def held_across_io(b: Budget, dev: Device) -> bool:
    """Whether the lock is held across its holder's I/O: outside their waits for it the
    threads waited longer for I/O than they worked on a CPU, and the I/O of several of them
    went one holder's at a time (at most ``ACROSS_IO_DEPTH`` times each job's depth in flight).
    Four 512-byte direct writers of one XFS file (the inode's lock taken exclusively for an
    unaligned write and held until its I/O completes) waited 3.3 s for I/O against 0.9 s of
    work, 0.95 requests in flight: the CPUs they left unused would carry nothing more."""
    if len(b.threads) < 2 or dev.queue_depth is None:
        return False
    return b.totals.get("blocked:io", 0.0) > _work_s(b) and dev.queue_depth <= ACROSS_IO_DEPTH * (
        dev.iodepth or 1
    )


def _work_s(b: Budget) -> float:
    """The threads' seconds on a CPU less their spinning in lock slow paths: their work."""
    return b.oncpu_s - b.kernel_paths.get("lock", 0.0)


def _lock_headroom(w: Wall, b: Budget, dev: Device, ctx: Mapping[str, float]) -> Wall:
    """A lock wall with what more CPUs would do: held across its holder's I/O
    (``held_across_io``), nothing, and the time each I/O takes under it sets the pace;
    otherwise the CPUs it left unused and the throughput its work's present CPU cost per byte
    would reach on all of them: an estimate, not a bound (the lock's hand-offs cost CPU too,
    and another wall may come next)."""
    if held_across_io(b, dev):
        return _across_io(w, b, dev)
    split = lock_cpus(b, ctx)
    if split is None:
        return w
    useful, spin, rest = split
    spun = f", {spin:.2f} more spinning on the lock" if spin >= 0.05 else ""
    room = (useful + spin + rest) / useful
    return Wall(
        w.kind,
        w.sentence + f" Its work used {useful:.2f} of {ctx.get('cpus', 0):.0f} CPUs{spun}: at its present "
        f"CPU cost per byte, all of them would carry {room:.1f}x the throughput.",
        w.share,
        w.evidence
        | {"useful_cpus": round(useful, 3), "lock_spin_cpus": round(spin, 3), "cpu_headroom": round(room, 3)},
        w.mechanism,
    )


def _across_io(w: Wall, b: Budget, dev: Device) -> Wall:
    """A lock wall whose holder waits for its own I/O under it: the I/O wait, where it slept,
    the work on a CPU beside it and the requests in flight, said instead of a CPU headroom."""
    io, work = b.totals.get("blocked:io", 0.0), _work_s(b)
    fn, caller = b.top_functions.get("io", ("", ""))
    where = f" ({fn} < {caller})" if fn and caller else f" ({fn})" if fn else ""
    what = f"{dev.direction}'s" if dev.direction in ("read", "write") else "I/O's"
    n = len(b.threads)
    return Wall(
        w.kind,
        w.sentence + f" It is held across each {what} I/O: outside their waits for it, the {n} threads "
        f"waited {io:.2f} s for I/O{where} against {work:.2f} s of work on a CPU, with "
        f"{dev.queue_depth:.1f} request(s) in flight on average{each_io(dev)}. More CPUs "
        "would not carry more: the time each I/O takes under the lock sets the pace.",
        w.share,
        w.evidence | {"held_across_io": True, "io_wait_s": round(io, 3), "work_cpu_s": round(work, 3)},
        w.mechanism,
    )


def _states(b: Budget, ctx: Mapping[str, float]) -> dict[str, float]:
    """The budget's shares grouped into candidate walls: on a CPU as one state (its path is
    named after), except the time on a CPU inside a mechanism that also blocks (fsync, a
    fault, reclaim, dirty throttling; lock slow paths), which counts with that mechanism.
    Lock waits the CPUs could not have run (``lock_turns``) count as waits for a CPU."""
    s = b.shares
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
    their shares taken of the time the neighbours left (the neighbours' share is noted). The
    host's steal (``ctx[STEAL]``) is said beside the wall (``_beside_host``); a point too short
    to explain stays silent whatever it was."""
    notes: list[str] = []
    if b.window_s < MIN_WINDOW_S:
        return _too_short(b)
    # the lock waits that stood in for a wait for a CPU, as a share of the time: computed
    # once, read by the states and by the CPU wall's sentences
    ctx = {**ctx, TURNS: lock_turns(b, ctx) / (b.wall_s or 1.0)}
    states = _states(b, ctx)
    tags = _tags_of_split(b, device, states)
    if tags:  # the split's own requests took every tag: one wall, not two
        states["blocked:io"] = states.get("blocked:io", 0.0) + states.pop("blocked:block-queue")
    punted = punted_queue(b) and "blocked:lock" in states
    if punted:  # io-wq workers queued on the lock behind a serialised write: the I/O's own wait
        states["blocked:io"] = states.get("blocked:io", 0.0) + states.pop("blocked:lock")
    if writeback_waits(b, device, states):  # in fsync and throttled, both for writeback: one wall
        states["blocked:writeback"] = states.pop("blocked:fsync") + states.pop("blocked:dirty-throttle")
    unacc = states.pop("unaccounted")
    if unacc > 0.10:
        notes.append(
            f"{fmt_share(unacc)} of the workload's time is unaccounted (blocked with no stack sampled)."
        )
    ranked, others = _ranked(states)
    top, share = ranked[0]
    if others >= 0.05 or top == "runnable:others":
        notes.append(_neighbours_note(top, others, neighbours))
    if share < MIN_SHARE or unacc >= share:
        parts = [f"{_state_words(k)} {fmt_share(v)}" for k, v in ranked[:3] if v >= PART_SHARE]
        said = (
            f"its largest parts: {'; '.join(parts)}"
            if len(parts) > 1
            else f"largest: {_state_words(top)} {fmt_share(share)}"
        )
        notes.append(f"No single state holds most of the workload's time ({said}): no wall is named.")
        return _beside_host(Decision(None, (), tuple(notes)), ctx.get(STEAL))
    hp = dict(helpers or {})
    # the wall and the state beside it, named in one place: with the tag waits of a split
    # counted in a request-size wall, and the I/O beside a lock wall issued by its holder
    named = [
        _name(
            k,
            v,
            b,
            device,
            ctx,
            neighbours,
            devnos,
            hp,
            tags if i == 0 else 0.0,
            i > 0 and top == "blocked:lock",
            punted,
        )
        for i, (k, v) in enumerate(ranked[:2])
        if i == 0 or v >= ALSO_SHARE
    ]
    wall = named[0]
    d = Decision(wall, tuple(a for a in named[1:] if a.kind != wall.kind), tuple(notes))
    return _beside_host(d, ctx.get(STEAL))


#: the candidate states as a reader names them (``blocked:…`` by ``offcpu.LABELS``)
_STATE_WORDS = {
    "cpu": "on a CPU or runnable behind its own threads",
    "runnable:quota": "runnable under the cgroup's CPU quota",
    "runnable:others": "runnable behind other processes",
    "blocked:writeback": "waiting for writeback (fsync and dirty throttling)",
}


def _state_words(state: str) -> str:
    """``blocked:fsync`` → ``blocked: fsync and synchronous writeback (…)``: a state as the
    budget table names it."""
    if state in _STATE_WORDS:
        return _STATE_WORDS[state]
    reason = state.split(":", 1)[1] if state.startswith("blocked:") else state
    return "blocked: " + LABELS.get(reason, reason)


def _beside_host(d: Decision, steal: float | None) -> Decision:
    """``d`` with the host's steal said beside its wall (``host.steal_sentence`` from
    10%, ``host.steal_note`` from 2%): the wall stays the workload's. The induced walls of the
    explain corpus held their ground truth under 15-29% steal (lock, device, io-latency: make
    test of 4662f68), so steal stretches the workload's wall; it does not replace it."""
    note = steal_sentence(steal, d.wall) or steal_note(steal)
    return d if note is None else Decision(d.wall, d.also, (*d.notes, note))


def _too_short(b: Budget) -> Decision:
    """Silence for an I/O window shorter than ``MIN_WINDOW_S``: start-up and the ends would
    weigh too much in it; the note says to run longer."""
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


def _ranked(states: Mapping[str, float]) -> tuple[list[tuple[str, float]], float]:
    """The states largest first, and the share runnable behind other processes: unless largest, it is left
    out and the others taken of the time it left (it stretches every state alike)."""
    others = states.get("runnable:others", 0.0)
    ranked = sorted(states.items(), key=lambda kv: -kv[1])
    if ranked[0][0] != "runnable:others" and others < 1.0:
        ranked = [(k, v / (1.0 - others)) for k, v in ranked if k != "runnable:others"]
    return ranked, others


def _neighbours_note(top: str, others: float, neighbours: Sequence[tuple[str, float]]) -> str:
    """The note on other processes sharing the CPUs: the busiest three with their
    CPU-seconds, the share of time runnable behind them, and what the wall's share is of."""
    names = ", ".join(f"{n} {s:.1f} CPU-s" for n, s in neighbours[:3]) or "not named"
    rest = (
        ""
        if top == "runnable:others"
        else f"; the wall's share is of the {fmt_share(1 - others)} they left it"
    )
    return (
        f"Other processes shared the CPUs ({names}): the workload waited "
        f"{fmt_share(others)} of its time runnable behind them{rest}."
    )


def _tags_of_split(b: Budget, device: Device, states: Mapping[str, float]) -> float:
    """The share of time waiting for request tags that the requests made smaller (split,
    not merged) caused, to count with them: one I/O split into 256 requests needs 256 tags.
    0 when there is no such wait or no such cause."""
    q = states.get("blocked:block-queue", 0.0)
    if not q or b.mechanisms.get("block-queue", ("", 0.0))[0] != "tags":
        return 0.0
    return q if device.cause is not None else 0.0


def _name(
    top: str,
    share: float,
    b: Budget,
    dev: Device,
    ctx: Mapping[str, float],
    neighbours: Sequence[tuple[str, float]],
    devnos: Sequence[str] = (),
    helpers: Mapping[str, float] | None = None,
    tags: float = 0.0,
    behind_lock: bool = False,
    punted: bool = False,
) -> Wall:
    """The wall of state ``top`` holding ``share`` of the time: on a CPU (``cpu_wall``), the CPU quota,
    others' CPUs, waiting for I/O (``io_wall``: the device side; ``tags`` and ``behind_lock`` are
    its, and ``punted``: io-wq workers' lock waits counted in it), blocked otherwise (``blocked_wall``)."""
    who = who_of(b)
    if top == "runnable:quota":
        return _quota(share, b, who)
    if top == "runnable:others":
        return _contention(share, who, neighbours)
    if top == "cpu":
        return cpu_wall(share, b, ctx, who, dev, helpers)
    reason = top.split(":", 1)[1]
    if reason == "io":
        return io_wall(share, b, dev, who, devnos, tags, behind_lock, helpers, punted)
    w = blocked_wall(reason, share, b, dev, who, helpers or {})
    if reason == "lock":
        return _lock_headroom(w, b, dev, ctx)
    if reason == "fsync" and w.evidence.get("syscall") == "fadvise64" and ctx.get(FIO):
        return _fio_invalidate(w)
    return w


def _fio_invalidate(w: Wall) -> Wall:
    """A writer's own writeback in fadvise, under fio: its ``invalidate`` (on by default)
    drops a file's pages with fadvise(DONTNEED) before each pass over it, so a time-based
    write job writes the file back itself at every pass (eight 4k random writers, a file
    each, ram bed: 1221-1384 MiB/s, 53% of their time there; with invalidate = 0 2927-3006)."""
    return Wall(
        w.kind,
        w.sentence + " fio does this before each pass over a file: its invalidate (on by default) "
        "drops the file's pages with fadvise(DONTNEED), and the writer writes them back first; with "
        "invalidate = 0 the point measures its writes alone.",
        w.share,
        w.evidence | {"fio_invalidate": True},
        w.mechanism,
    )


def _contention(share: float, who: str, neighbours: Sequence[tuple[str, float]]) -> Wall:
    """Waiting for a CPU: runnable but not running while other processes used the CPUs
    (the busiest three named)."""
    names = ", ".join(n for n, _ in neighbours[:3]) or "other processes"
    return Wall(
        "cpu-contention",
        f"Waiting for a CPU: {who} was runnable but not running "
        f"{fmt_share(share)} of its time while other processes used the CPUs "
        f"({names}).",
        share,
    )


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


def who_of(b: Budget) -> str:
    """The workload as sentences name it: ``fio``, ``fio (4 threads)``, ``the workload``."""
    comms = sorted({t.comm for t in b.threads})
    n = len(b.threads)
    name = comms[0] if len(comms) == 1 else "the workload"
    return f"{name} ({n} thread{'s' if n != 1 else ''})" if n > 1 else name
