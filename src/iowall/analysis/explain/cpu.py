"""The wall of a point whose workload's time is mostly on a CPU or waiting for one (pure):
the copy against the machine's memory-copy rate, a named kernel mechanism (compression,
checksums, page zeroing: ``analysis.explain.kernel_knowledge``), the fixed cost of each call, the
CPU affinity mask, or a kernel path with its most sampled function; runnable behind its own
threads and lock waits the CPUs could not have served are counted here (``analysis.explain.wall``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...vocab.units import fmt_bytes, fmt_rate, fmt_share
from .budget import Budget
from .cpu_work import kernel_mechanism, mechanism_part
from .device import Device, RequestCause
from .io_wall import workers_work
from .kernel_knowledge import meaning
from .kernel_paths import LABELS as PATH_LABELS
from .verdict import TURNS, Wall

#: the copy's own rate (bytes per second spent in the copy path) at least this share of the
#: machine's per-thread memory-copy rate: the copy is the wall. The kernel copies page by
#: page from scattered folios: 40-45% of the engine's rep-movsb rate on this VM's page-cache
#: reads and tmpfs reads (docs/explain.md), 2% when every fresh page faults on the host.
MEMCOPY_NEAR = 0.25


def cpu_wall(
    share: float,
    b: Budget,
    ctx: Mapping[str, float],
    who: str,
    dev: Device | None = None,
    helpers: Mapping[str, float] | None = None,
) -> Wall:
    """The wall of a workload on a CPU (or runnable behind its own threads and the bed's
    workers); ``helpers``: the CPUs threads outside the workload spent per kernel-knowledge
    mechanism, to say what the workers it queued behind were doing."""
    w = _cpu_kind(share, b, ctx, who, dev)
    own = b.shares.get("runnable:own", 0.0)
    pinned = _affinity(b, ctx, own, who)
    if pinned is not None:
        return pinned
    if own >= 0.05:
        jobs, cpus = ctx.get("jobs"), ctx.get("cpus")
        many = f" ({jobs:.0f} jobs on {cpus:.0f} CPUs)" if jobs and cpus else ""
        w = Wall(
            w.kind,
            w.sentence + f" That includes {fmt_share(own)} of its time runnable behind "
            f"its own threads and the bed's workers: more runnable threads than CPUs"
            f"{many}{workers_work(helpers or {})}.",
            share,
            w.evidence | {"own_run_delay_share": round(own, 4)},
            w.mechanism,
        )
    turns = ctx.get(TURNS, 0.0)
    if turns >= 0.05:
        fn, caller = b.top_functions.get("lock", ("", ""))
        where = f" ({fn}" + (f", taken in {caller})" if caller else ")") if fn else ""
        busy = f" ({b.cpus[1]:.2f} of {ctx.get('cpus', 0):.0f} busy with the point's work)" if b.cpus else ""
        w = Wall(
            w.kind,
            w.sentence + f" And {fmt_share(turns)} asleep on a kernel lock{where} that "
            f"its threads take in turn: the CPUs were full{busy}, so the lock only chose "
            "which thread waited; it would cost throughput with more CPUs than threads.",
            share,
            w.evidence | {"lock_turn_share": round(turns, 4)},
            w.mechanism,
        )
    alone = b.threads[0] if len(b.threads) == 1 else None
    oncpu = b.shares.get("user", 0.0) + b.shares.get("kernel", 0.0)
    if alone is not None and oncpu >= 0.80:
        return Wall(
            w.kind,
            w.sentence + f" One thread does the point's work: on a CPU "
            f"{fmt_share(oncpu)} of the window, it is the wall; more jobs would spread it.",
            share,
            w.evidence | {"thread_bound": True},
            w.mechanism,
        )
    return w


#: the workload's threads waited at least this share of their time behind each other
AFFINITY_OWN = 0.20


def _affinity(b: Budget, ctx: Mapping[str, float], own: float, who: str) -> Wall | None:
    """The CPUs the workload may use are fewer than the machine's and it queued behind its
    own threads while CPUs it may not use sat idle: the affinity mask is the wall."""
    cpus = ctx.get("cpus")
    masks = [t.allowed_cpus for t in b.threads if t.allowed_cpus]
    # behind other processes too: on the CPUs it may use, they take turns with it there
    waited = own + b.shares.get("runnable:others", 0.0)
    if not cpus or not masks or waited < AFFINITY_OWN or len(masks) < len(b.threads):
        return None
    allowed = sorted(set().union(*masks))
    if len(allowed) >= cpus:
        return None
    # the CPUs the point's own threads used: those other processes use are theirs only by
    # their share, which unpinned threads would contend for (as lock_turns counts them)
    working = b.cpus[1] if b.cpus is not None else None
    if working is not None and working > cpus - 0.5:
        return None  # the point's own threads filled the CPUs anyway: the CPUs are the wall
    listed = ",".join(str(c) for c in allowed)
    idle = (
        f" while its threads and the bed's workers used {working:.2f} of the {cpus:.0f} CPUs"
        if working is not None
        else ""
    )
    return Wall(
        "cpu-affinity",
        f"Held by its CPU affinity: {who} may run only on CPU {listed} ({len(allowed)} of "
        f"{cpus:.0f}) and waited {fmt_share(waited)} of its time runnable for them{idle}: "
        "the affinity mask, not the CPUs, is the wall.",
        b.shares.get("user", 0.0) + b.shares.get("kernel", 0.0) + waited,
        {"allowed_cpus": allowed, "run_delay_share": round(waited, 4)},
    )


#: bytes per call at most this: small enough that a call's fixed cost can outweigh its copy
PER_CALL_BYTES = 64 * 1024
#: the copy held less than this share of the time on a CPU
PER_CALL_COPY = 0.5
#: ... and a call cost at most this much CPU: a system call's own entry, exit and lookups cost
#: a microsecond or two; a call of milliseconds does real work inside (a path, not a call)
PER_CALL_MAX_US = 20.0


def _calls(b: Budget) -> tuple[float, float, float]:
    """The workload's calls, the bytes a call moved and the CPU microseconds a call cost (0
    when it made none)."""
    calls = b.calls
    if not calls:
        return 0.0, 0.0, 0.0
    return calls, b.moved_bytes / calls, b.oncpu_s / calls * 1e6


def _per_call(share: float, b: Budget, who: str, copy_s: float) -> Wall | None:
    """A CPU wall where each call moves little and the copy is a small part of its cost: the
    fixed cost of a call (syscall entry and exit, lookups, the generator's own work per I/O)
    holds it. Not when the threads queue behind each other: then the CPUs are the wall."""
    calls, per, us_call = _calls(b)
    oncpu = b.oncpu_s
    if not calls or not per or not oncpu or b.shares.get("runnable:own", 0.0) >= 0.10:
        return None
    if per > PER_CALL_BYTES or copy_s / oncpu >= PER_CALL_COPY or us_call > PER_CALL_MAX_US:
        return None
    copy_us = copy_s / calls * 1e6
    return Wall(
        "per-call",
        f"Per-call cost: {who} was on a CPU {fmt_share(share)} of its time making "
        f"{calls / b.counted_s:,.0f} calls/s of {fmt_bytes(per)} each, {us_call:.1f} us of CPU a call, "
        f"of which the copy took {copy_us:.1f} us ({fmt_share(copy_s / oncpu)}); the rest is the "
        f"call's own cost (entry and exit, lookups, {who}'s own work per I/O: "
        f"{fmt_share(b.totals.get('user', 0.0) / oncpu)} in user space): larger blocks or batched "
        "submission would move it.",
        share,
        {
            "calls_per_s": round(calls / b.counted_s),
            "bytes_per_call": round(per),
            "cpu_us_per_call": round(us_call, 2),
        },
    )


def _cpu_kind(share: float, b: Budget, ctx: Mapping[str, float], who: str, dev: Device | None = None) -> Wall:
    """What holds a workload on a CPU, the first the numbers show of: a named kernel mechanism, each call's
    fixed cost (``_per_call``), the copy against the memory-copy ceiling; else the top kernel path."""
    kernel, user = b.totals.get("kernel", 0.0), b.totals.get("user", 0.0)
    oncpu = kernel + user
    paths = sorted(b.kernel_paths.items(), key=lambda kv: -kv[1])
    moved = b.moved_bytes
    per_cpu_s = moved / oncpu if oncpu else 0.0
    on = _on_words(share, b, ctx)
    ev: dict[str, Any] = {
        "on_cpu_s": round(oncpu, 3),
        "kernel_s": round(kernel, 3),
        "bytes_per_cpu_s": round(per_cpu_s),
    }
    named = kernel_mechanism(b)
    if named is not None and kernel > user:
        return _mechanism_wall(share, b, who, dev, on, ev, named, oncpu)
    other = _other_calls(share, b, who, on, ev, paths[0][0] if paths else "")
    if other is not None and kernel > user:
        return other
    copy_s = b.kernel_paths.get("copy", 0.0)
    per_call = _per_call(share, b, who, copy_s)
    if per_call is not None:
        return per_call
    top_path, top_s = paths[0] if paths else ("", 0.0)
    if top_path == "copy" and top_s >= 0.4 * kernel:
        return _copy_wall(share, b, ctx, who, on, ev, top_s, moved, oncpu)
    if top_path == "block" and dev is not None and dev.cause is not None:
        return _issuing_smaller(share, b, who, on, ev, dev, dev.cause, kernel, oncpu)
    return _path_wall(share, b, who, on, ev, top_path, kernel, oncpu)


#: the system calls that move a workload's data: the kernel time in them is its I/O's own
DATA_CALLS = frozenset(
    {
        "read",
        "write",
        "pread64",
        "pwrite64",
        "readv",
        "writev",
        "preadv",
        "pwritev",
        "preadv2",
        "pwritev2",
        "io_uring_enter",
        "io_submit",
        "io_getevents",
        "io_pgetevents",
        "sendfile64",
        "splice",
        "copy_file_range",
    }
)
#: the kernel time in other system calls from which they, not the I/O, are named
OTHER_CALLS = 0.5
#: calls that make, find, change or remove a file: a file per I/O spends its kernel time there
FILE_CALLS = frozenset(
    {"openat", "open", "creat", "close", "unlinkat", "unlink", "newfstatat", "statx", "newlstat"}
    | {"renameat2", "mkdirat", "fchmodat", "getdents64"}
)


def _other_calls(
    share: float, b: Budget, who: str, on: str, ev: Mapping[str, Any], top_path: str
) -> Wall | None:
    """On a CPU in the kernel, most of it in system calls other than the ones that move its
    data (``openat`` and ``close`` when each I/O goes to a file of its own): the work of those
    calls holds it, not the cost of an I/O. None when they hold less than ``OTHER_CALLS`` of
    the kernel time (or there is no profile)."""
    kernel = b.totals.get("kernel", 0.0)
    calls = b.cpu_syscalls
    other = {c: v for c, v in calls.items() if c and c not in DATA_CALLS and v >= 0.01 * kernel}
    if not kernel or sum(other.values()) < OTHER_CALLS * kernel:
        return None
    data = sum(v for c, v in calls.items() if c in DATA_CALLS)
    ranked = sorted(other.items(), key=lambda kv: -kv[1])
    named = ", ".join(f"{c} {fmt_share(v / kernel)}" for c, v in ranked[:3])
    files = " (a file opened, created or closed per I/O)" if ranked[0][0] in FILE_CALLS else ""
    fn, caller = b.cpu_top
    top = f"; {_most_sampled(b)}" if fn and caller else ""
    label = PATH_LABELS.get(top_path, "paths the profile did not record")
    oncpu = b.oncpu_s
    return Wall(
        "cpu-kernel",
        f"On a CPU in the kernel, in calls other than its I/O: {who} was {on}, "
        f"{fmt_share(kernel / oncpu if oncpu else 0)} of it in the kernel, of that {named} against "
        f"{fmt_share(data / kernel)} in the calls that move its data (most in {label}{top}): the work "
        f"those calls do{files}, not the I/O's own cost, holds it.",
        share,
        {
            **ev,
            "path": top_path,
            "function": fn,
            "caller": caller,
            "syscalls": {c: round(v, 3) for c, v in other.items()},
        },
    )


def _on_words(share: float, b: Budget, ctx: Mapping[str, float]) -> str:
    """How a CPU wall says where the time went: on a CPU, or on a CPU or waiting for one (the part on one)
    when the waits it holds (runnable behind its own threads, lock turns: ``TURNS``) weigh at least 5%."""
    waits = b.shares.get("runnable:own", 0.0) + ctx.get(TURNS, 0.0)
    # the CPU state holds the waits for a CPU too: say so when they weigh
    return (
        f"on a CPU {fmt_share(share)} of its time"
        if waits < 0.05
        else f"on a CPU or waiting for one {fmt_share(share)} of its time "
        f"({fmt_share(max(0.0, share - waits))} on one)"
    )


def _mechanism_wall(
    share: float,
    b: Budget,
    who: str,
    dev: Device | None,
    on: str,
    ev: Mapping[str, Any],
    named: tuple[str, float],
    oncpu: float,
) -> Wall:
    """On a CPU in a named kernel mechanism (``kernel_knowledge``): its share of the CPU time, the function
    sampled most; compression names a zram bed (it compresses each page in the submitter's context)."""
    mech, secs = named
    fn, caller = b.cpu_top
    top = f" ({fn} < {caller})" if fn and caller else f" ({fn})" if fn else ""
    where = ""
    if mech == "compression" and dev is not None and dev.kind == "zram":
        where = f"; the bed's device is {dev.what}"
    return Wall(
        "cpu-kernel",
        f"On a CPU in the kernel, in {mech}: {who} was {on}, {fmt_share(secs / oncpu)} of its "
        f"CPU time in {mech}{top}: {meaning(mech)}{where}.",
        share,
        {**ev, "mechanism_s": round(secs, 3), "function": fn, "caller": caller},
        mech,
    )


def _copy_ceiling(ctx: Mapping[str, float], copy_rate: float) -> tuple[float | None, bool, bool]:
    """The per-thread copy ceiling: the copy measured beside the point over its threads, else this boot's
    rate; and whether it is the one-thread copy's (the threads beat their share) and was measured beside."""
    mc, jobs = ctx.get("memcopy_bytes_per_s"), ctx.get("jobs")
    threads = min(jobs, ctx.get("cpus") or jobs) if jobs else None
    ref = ctx.get("memcopy_thread_bytes_per_s")
    ceiling = mc / threads if mc and threads else ref
    # a thread that copied faster than its share of all threads copying at once did not
    # copy beside them all (one waits for I/O while the other copies): its ceiling is the
    # one-thread copy's, or the sentence would read "106% of the ceiling"
    mc1 = ctx.get("memcopy_1_bytes_per_s")
    alone = bool(mc and threads and threads > 1 and mc1 and ceiling and copy_rate > ceiling)
    if alone and mc1:
        ceiling = mc1
    return ceiling, alone, bool(mc and threads)


#: the copy's share of the time on a CPU from which a copy wall says "mostly copying"
MOSTLY = 0.6
#: a page: calls of at most this move one page each
PAGE = 4096


def _copying(b: Budget, copy_s: float, oncpu: float, rate: float) -> str:
    """How much of the time on a CPU the copy took, in words: "mostly" from ``MOSTLY``; below
    it only the share, and with calls of a page or less that cost a call's CPU
    (``PER_CALL_MAX_US``), the rest as each call's own cost (the per-call wall's side of the
    line; a page a call, the page cache's work per page is per call too). With larger calls
    the rest may be work per page, which larger blocks would not move."""
    part = copy_s / oncpu
    at = f"at {fmt_rate(rate)} while copying"
    if part >= MOSTLY:
        return f"mostly copying to or from user space ({fmt_share(part)} of its CPU time) {at}"
    _, per, us_call = _calls(b)
    rest = (
        f" (the rest, {fmt_share(1.0 - part)}, is each call's own cost at calls of "
        f"{fmt_bytes(per)}: larger blocks would move that part)"
        if 0 < per <= PAGE and us_call <= PER_CALL_MAX_US
        else ""
    )
    return f"copying to or from user space for {fmt_share(part)} of its CPU time {at}{rest}"


def _copy_wall(
    share: float,
    b: Budget,
    ctx: Mapping[str, float],
    who: str,
    on: str,
    ev: Mapping[str, Any],
    copy_s: float,
    moved: float,
    oncpu: float,
) -> Wall:
    """Mostly copying to or from user space: the memory-copy wall when the copy's own rate (bytes per second
    in the copy path) is ``MEMCOPY_NEAR`` of the ceiling (``_copy_ceiling``), else a slowed copy."""
    ev = dict(ev)
    copy_rate = moved / copy_s if copy_s else 0.0  # bytes per second spent copying
    ev["copy_bytes_per_s"] = round(copy_rate)
    at_once = copy_s / b.counted_s if b.counted_s else 0.0
    ceiling, alone, beside = _copy_ceiling(ctx, copy_rate)
    if alone:
        ev["copying_at_once"] = round(at_once, 2)
    copying = _copying(b, copy_s, oncpu, copy_rate)
    if not ceiling:
        return Wall(
            "memcopy",
            f"Copying: {who} was {on}, {copying} (no memory-copy rate of this machine to compare).",
            share,
            ev,
        )
    ev["memcopy_per_thread_bytes_per_s"] = round(ceiling)
    what = (
        f"the one-thread memory-copy ceiling measured beside it (its threads copied "
        f"{at_once:.1f} at a time on average)"
        if alone
        else "the memory-copy ceiling measured beside it"
        if beside
        else "this machine's one-thread memory-copy rate (measured once this boot)"
    )
    if copy_rate >= MEMCOPY_NEAR * ceiling:
        return Wall(
            "memcopy",
            f"The memory-copy wall: {who} was {on}"
            f", {copying}, {fmt_share(copy_rate / ceiling)} of {what}, "
            f"{fmt_rate(ceiling)} per thread.",
            share,
            ev,
        )
    return Wall(
        "cpu-kernel",
        f"On a CPU in the kernel: {who} was {on}"
        f", {copying}, only {fmt_share(copy_rate / ceiling)} of {what} "
        f"({fmt_rate(ceiling)} per thread): something slows the copy itself "
        "(faults on fresh pages, memory the host must back first).",
        share,
        ev,
    )


def _issuing_smaller(
    share: float,
    b: Budget,
    who: str,
    on: str,
    ev: Mapping[str, Any],
    dev: Device,
    cause: RequestCause,
    kernel: float,
    oncpu: float,
) -> Wall:
    """On a CPU most in the block layer while its I/Os reach the device as smaller requests
    (``device.request_cause``: split, no readahead, not merged): the submitter pays each
    request's own trip through the block layer, so the request size is the wall, on a CPU."""
    fn, caller = b.cpu_top
    top = f" ({_most_sampled(b)})" if fn else ""
    return Wall(
        "request-size",
        f"Requests made smaller on the way down, paid on a CPU: {who} was {on}, "
        f"{fmt_share(kernel / oncpu if oncpu else 0)} of it in the kernel, most in the block layer "
        f"issuing them{top}: {cause.said}; each request makes its own trip through the block layer.",
        share,
        {
            **ev,
            "path": "block",
            "function": fn,
            "caller": caller,
            "request_bytes": round(dev.request_size or 0),
            "io_bytes": dev.io_bytes,
            "queue": dict(dev.queue),
        },
        cause.mechanism,
    )


def _path_wall(
    share: float,
    b: Budget,
    who: str,
    on: str,
    ev: Mapping[str, Any],
    top_path: str,
    kernel: float,
    oncpu: float,
) -> Wall:
    """On a CPU in the kernel path the profile sampled most (``analysis.explain.kernel_paths``),
    with the kernel's share of the CPU time and the function sampled most."""
    label = PATH_LABELS.get(top_path, "paths the profile did not record")
    fn, caller = b.cpu_path_top
    top = f" (most sampled there: {fn}{f' < {caller}' if caller else ''})" if fn else ""
    return Wall(
        "cpu-kernel",
        f"On a CPU in the kernel: {who} was {on}"
        f", {fmt_share(kernel / oncpu if oncpu else 0)} of it in the kernel, most in "
        f"{label}{top}{mechanism_part(b)}.",
        share,
        {**ev, "path": top_path, "function": fn, "caller": caller},
    )


def _most_sampled(b: Budget) -> str:
    """The profile's most sampled kernel function, and who called into it when known."""
    fn, caller = b.cpu_top
    return f"most sampled: {fn} < {caller}" if caller else f"most sampled: {fn}"
