"""The wall of a point, read from its workload's wall-clock budget (pure).

The wall is the state that holds most of the workload threads' time (``analysis.budget``),
named with its mechanism and the numbers that show it:

- on a CPU: the copy (bytes moved per on-CPU second against the memory-copy ceiling, when
  one was measured), another kernel path, or user space;
- runnable but not running: the cgroup's CPU quota (its throttling counters) or other
  processes (their CPU time);
- blocked: on I/O completion, named by the device side (``analysis.device_wall``); fsync
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
from typing import Any

from .budget import MIN_WINDOW_S, Budget
from .device_wall import Device, io_wall
from .kernel_paths import LABELS as PATH_LABELS
from .offcpu import LABELS, LOG_FORCE
from .wall_verdict import Wall
from .wall_verdict import pct as _pct
from .wall_verdict import rate as _rate

#: the largest state must hold at least this share of the workload's time to be the wall
MIN_SHARE = 0.40
#: a second state holding at least this share is named beside the wall
ALSO_SHARE = 0.25
#: the copy's own rate (bytes per second spent in the copy path) at least this share of the
#: machine's per-thread memory-copy rate: the copy is the wall. The kernel copies page by
#: page from scattered folios: 40-45% of the engine's rep-movsb rate on this VM's page-cache
#: reads and tmpfs reads (docs/explain.md), 2% when every fresh page faults on the host.
MEMCOPY_NEAR = 0.25
#: ``decide``'s context key for ``lock_turns`` as a share of the workload's time
TURNS = "lock_turn_share"


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
) -> Decision:
    """The wall, a second state of at least ``ALSO_SHARE``, and the notes that go with them
    (too short, unaccounted time, the neighbours' share). ``ctx``: ``memcopy_bytes_per_s``,
    ``jobs`` and ``cpus`` when known; ``neighbours``: the busiest other processes as (name,
    CPU-seconds); ``devnos``: the bed's devices (MAJ:MIN) when known, so that an I/O limit
    the cgroup sets on another device is not taken for this point's.

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
    unacc = states.pop("unaccounted")
    if unacc > 0.10:
        notes.append(f"{_pct(unacc)} of the workload's time is unaccounted (blocked with no stack sampled).")
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
            else f"; the wall's share is of the {_pct(1 - others)} they left it"
        )
        notes.append(
            f"Other processes shared the CPUs ({names}): the workload waited "
            f"{_pct(others)} of its time runnable behind them{rest}."
        )
    if share < MIN_SHARE or unacc >= share:
        notes.append(
            f"No single state holds most of the workload's time (largest: "
            f"{top} {_pct(share)}): no wall is named."
        )
        return Decision(None, (), tuple(notes))
    wall = _name(top, share, b, device, ctx, neighbours, devnos)
    also = tuple(_name(k, v, b, device, ctx, neighbours, devnos) for k, v in ranked[1:2] if v >= ALSO_SHARE)
    if wall.kind == "lock":  # the I/O is serial because one lock holder issues it at a time
        also = tuple(_behind_lock(a) if a.kind == "io-latency" else a for a in also)
    return Decision(wall, tuple(a for a in also if a.kind != wall.kind), tuple(notes))


def _behind_lock(w: Wall) -> Wall:
    """An I/O-latency wall beside a lock wall: one I/O in flight because the lock's holder
    issues them one at a time, so more jobs would wait on the lock, not deepen the queue."""
    said = w.sentence.replace(
        ": more jobs or a deeper queue would move it.",
        ": the lock's holder issues them one at a time, so more jobs would wait on the lock.",
    )
    return Wall(w.kind, said, w.share, w.evidence | {"behind_lock": True})


def _name(
    top: str,
    share: float,
    b: Budget,
    dev: Device,
    ctx: Mapping[str, float],
    neighbours: Sequence[tuple[str, float]],
    devnos: Sequence[str] = (),
) -> Wall:
    who = _who(b)
    if top == "cpu":
        return _cpu(share, b, ctx, who)
    if top == "runnable:quota":
        return _quota(share, b, who)
    if top == "runnable:others":
        names = ", ".join(n for n, _ in neighbours[:3]) or "other processes"
        return Wall(
            "cpu-contention",
            f"Waiting for a CPU: {who} was runnable but not running "
            f"{_pct(share)} of its time while other processes used the CPUs "
            f"({names}).",
            share,
        )
    reason = top.split(":", 1)[1]
    fn, caller = b.top_functions.get(reason, ("", ""))
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
        return Wall(
            "fsync",
            f"{who} spent {_pct(share)} of its time in {what}{on}, most of its wait{log} ({where}).",
            share,
            {"function": fn, "syscall": call, "sleeps_in": leaf},
        )
    if reason == "dirty-throttle":
        return Wall(
            "dirty-throttle",
            f"Dirty throttling: {who} was paused in "
            f"balance_dirty_pages {_pct(share)} of its time, waiting for writeback "
            "to bring the dirty pages under the limit.",
            share,
        )
    if reason == "reclaim":
        return _reclaim(share, b, who, fn)
    if reason == "lock":
        where = f", taken in {caller}" if caller else ""
        return Wall(
            "lock",
            f"Lock contention: {who} waited {_pct(share)} of its time for kernel locks ({fn}{where}).",
            share,
            {"function": fn, "caller": caller},
        )
    if reason == "sleep":
        return Wall(
            "sleep",
            f"{who} slept voluntarily {_pct(share)} of its time ({fn}): "
            "its own rate limit or think time holds it, not the I/O path.",
            share,
        )
    if reason == "block-queue":
        return Wall(
            "block-queue",
            f"{who} waited {_pct(share)} of its time in the block "
            f"layer's queueing ({fn}) before its I/O reached the device.",
            share,
        )
    label = LABELS.get(reason, reason)
    via = f", from {caller}" if caller and caller != fn else ""
    return Wall(
        reason,
        f"{who} spent {_pct(share)} of its time blocked on {label}{on} ({fn}{via}).",
        share,
        {"function": fn, "caller": caller},
    )


def _on_cpu(b: Budget, reason: str, share: float) -> str:
    """`` (12% of it on a CPU)`` when a mechanism's time was partly on a CPU."""
    part = b.kernel_contexts.get(reason, 0.0) / (b.wall_s or 1.0)
    return f" ({_pct(part / share)} of it on a CPU)" if share and part >= 0.05 * share else ""


def _who(b: Budget) -> str:
    comms = sorted({t.comm for t in b.threads})
    n = len(b.threads)
    name = comms[0] if len(comms) == 1 else "the workload"
    return f"{name} ({n} thread{'s' if n != 1 else ''})" if n > 1 else name


def _cpu(share: float, b: Budget, ctx: Mapping[str, float], who: str) -> Wall:
    w = _cpu_kind(share, b, ctx, who)
    own = b.share("runnable:own")
    if own >= 0.05:
        jobs, cpus = ctx.get("jobs"), ctx.get("cpus")
        many = f" ({jobs:.0f} jobs on {cpus:.0f} CPUs)" if jobs and cpus else ""
        w = Wall(
            w.kind,
            w.sentence + f" That includes {_pct(own)} of its time runnable behind "
            f"its own threads and the bed's workers: more runnable threads than CPUs"
            f"{many}.",
            share,
            w.evidence | {"own_run_delay_share": round(own, 4)},
        )
    turns = ctx.get(TURNS, 0.0)
    if turns >= 0.05:
        fn, caller = b.top_functions.get("lock", ("", ""))
        where = f" ({fn}" + (f", taken in {caller})" if caller else ")") if fn else ""
        busy = f" ({b.cpus[1]:.2f} of {ctx.get('cpus', 0):.0f} busy with the point's work)" if b.cpus else ""
        w = Wall(
            w.kind,
            w.sentence + f" And {_pct(turns)} asleep on a kernel lock{where} that "
            f"its threads take in turn: the CPUs were full{busy}, so the lock only chose "
            "which thread waited; it would cost throughput with more CPUs than threads.",
            share,
            w.evidence | {"lock_turn_share": round(turns, 4)},
        )
    alone = b.threads[0] if len(b.threads) == 1 else None
    oncpu = b.share("user") + b.share("kernel")
    if alone is not None and oncpu >= 0.80:
        return Wall(
            w.kind,
            w.sentence + f" One thread does the point's work: on a CPU "
            f"{_pct(oncpu)} of the window, it is the wall; more jobs would spread it.",
            share,
            w.evidence | {"thread_bound": True},
        )
    return w


def _cpu_kind(share: float, b: Budget, ctx: Mapping[str, float], who: str) -> Wall:
    kernel, user = b.totals.get("kernel", 0.0), b.totals.get("user", 0.0)
    oncpu = kernel + user
    paths = sorted(b.kernel_paths.items(), key=lambda kv: -kv[1])
    moved = sum(t.bytes for t in b.threads)
    per_cpu_s = moved / oncpu if oncpu else 0.0
    mc, jobs = ctx.get("memcopy_bytes_per_s"), ctx.get("jobs")
    threads = min(jobs, ctx.get("cpus") or jobs) if jobs else None
    waits = b.share("runnable:own") + ctx.get(TURNS, 0.0)
    # the CPU state holds the waits for a CPU too: say so when they weigh
    on = (
        f"on a CPU {_pct(share)} of its time"
        if waits < 0.05
        else f"on a CPU or waiting for one {_pct(share)} of its time ({_pct(max(0.0, share - waits))} on one)"
    )
    ev: dict[str, Any] = {
        "on_cpu_s": round(oncpu, 3),
        "kernel_s": round(kernel, 3),
        "bytes_per_cpu_s": round(per_cpu_s),
    }
    if user >= kernel:
        return Wall(
            "cpu-user",
            f"On a CPU in user space: {who} ran its own code {_pct(user / b.wall_s)} "
            f"of its time ({_pct(share)} on a CPU in all).",
            share,
            ev,
        )
    top_path, top_s = paths[0] if paths else ("", 0.0)
    if top_path == "copy" and top_s >= 0.4 * kernel:
        copy_rate = moved / top_s if top_s else 0.0  # bytes per second spent copying
        ev["copy_bytes_per_s"] = round(copy_rate)
        ref = ctx.get("memcopy_thread_bytes_per_s")
        ceiling = mc / threads if mc and threads else ref
        copying = (
            f"mostly copying to or from user space ({_pct(top_s / oncpu)} of its CPU "
            f"time) at {_rate(copy_rate)} while copying"
        )
        if not ceiling:
            return Wall(
                "memcopy",
                f"Copying: {who} was {on}, {copying} (no memory-copy rate of this machine to compare).",
                share,
                ev,
            )
        ev["memcopy_per_thread_bytes_per_s"] = round(ceiling)
        what = (
            "the memory-copy ceiling measured beside it"
            if mc and threads
            else "this machine's one-thread memory-copy rate (measured once this boot)"
        )
        if copy_rate >= MEMCOPY_NEAR * ceiling:
            return Wall(
                "memcopy",
                f"The memory-copy wall: {who} was {on}"
                f", {copying}, {_pct(copy_rate / ceiling)} of {what}, "
                f"{_rate(ceiling)} per thread.",
                share,
                ev,
            )
        return Wall(
            "cpu-kernel",
            f"On a CPU in the kernel: {who} was {on}"
            f", {copying}, only {_pct(copy_rate / ceiling)} of {what} "
            f"({_rate(ceiling)} per thread): something slows the copy itself "
            "(faults on fresh pages, memory the host must back first).",
            share,
            ev,
        )
    label = PATH_LABELS.get(top_path, "paths the profile did not record")
    return Wall(
        "cpu-kernel",
        f"On a CPU in the kernel: {who} was {on}"
        f", {_pct(kernel / oncpu if oncpu else 0)} of it in the kernel, most in "
        f"{label}.",
        share,
        ev | {"path": top_path},
    )


def _quota(share: float, b: Budget, who: str) -> Wall:
    cg = next((c for c in b.cgroups if c.get("delta", {}).get("cg_cpu_nr_periods")), None)
    d = cg.get("delta", {}) if cg else {}
    q = (cg or {}).get("limits", {}).get("cpu_quota_cpus")
    per, thr = d.get("cg_cpu_nr_periods", 0.0), d.get("cg_cpu_nr_throttled", 0.0)
    quota = f" ({q:.2f} CPU)" if q else ""
    periods = f": throttled in {_pct(thr / per)} of periods" if per else ""
    return Wall(
        "cpu-quota",
        f"Capped by its cgroup's CPU quota{quota}{periods} "
        f"({d.get('cg_cpu_throttled_s', 0.0):.1f} s throttled); {who} waited "
        f"{_pct(share)} of its time runnable but not allowed to run.",
        share,
        {"quota_cpus": q, "nr_periods": per, "nr_throttled": thr},
    )


def _reclaim(share: float, b: Budget, who: str, fn: str) -> Wall:
    cg = next((c for c in b.cgroups if c.get("limits", {}).get("mem_limit_bytes")), None)
    if cg is not None:
        lim = cg["limits"]["mem_limit_bytes"]
        hits = cg.get("delta", {}).get("cg_mem_max_events", 0.0)
        if hits > 0:
            return Wall(
                "memcg-reclaim",
                f"Reclaiming memory in its own context: the memory "
                f"cgroup's {lim / 2**20:.0f} MiB limit was hit {hits:,.0f} times; "
                f"{who} spent {_pct(share)} of its time in reclaim"
                f"{_on_cpu(b, 'reclaim', share)} ({fn}).",
                share,
                {"limit_bytes": lim, "hits": hits},
            )
    return Wall(
        "reclaim",
        f"Memory reclaim: {who} spent {_pct(share)} of its time reclaiming memory itself ({fn}).",
        share,
    )
