"""The wall-clock budget of a point's workload threads over its I/O window (pure).

Input: the ``threadstate`` probe's document (per thread, exact counters every bucket and
sampled blocked stacks; the cgroups' counters), the I/O window, and optionally the CPU
profile's folded stacks. For every thread that did the point's work, over the part of the
window it lived in:

- **on a CPU** = Δ schedstat run time (exact), split user / kernel by the Δ utime / stime
  ticks; the kernel part split by path from the profile's stacks of the workload's own
  threads only (``analysis.paths``);
- **runnable, waiting** = Δ schedstat run_delay (exact); the part its cgroup's CPU quota
  explains is all of it when the group used >= 90% of its quota and was throttled (the quota
  binds), else min(1, Δ throttled time / the group's threads' run delay) (cpu.stat throttled
  time is the time its run queues were throttled, summed over CPUs); the rest is contention
  with its own threads or with other processes;
- **blocked** = the rest of the wall time, split by reason in proportion to the thread's
  sampled blocked stacks (``analysis.explain.offcpu``); blocked time with no sampled stack is
  ``unaccounted``, never guessed.

Threads that did none of the point's work (fio's parent sleeping in its status loop) are
left out and named. Shares are of the summed wall time of the threads kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .budget_profile import ProfileSplit, split_kernel_time
from .offcpu import (
    ORDER,
    PREEMPTED,
    blocked_mechanism,
    caller_of,
    classify,
    leaf_of,
    restore_tail_calls,
    syscall_of,
)
from .workers import Measured as _Measured
from .workers import workers as _workers

#: Categories of the budget, in report order (``blocked:<reason>`` for each off-CPU reason).
ON_CPU = ("user", "kernel")
RUNNABLE = ("runnable:quota", "runnable:own", "runnable:others")
CATEGORIES: tuple[str, ...] = (*ON_CPU, *RUNNABLE, *(f"blocked:{r}" for r in ORDER), "unaccounted")
#: a cgroup that used this share of its CPU quota over the window, and was throttled, is
#: held by it: all its threads' run delay is the quota's
QUOTA_BINDING = 0.9
#: a window shorter than this is too short to explain (start-up and ends dominate it)
MIN_WINDOW_S = 2.0


def _fields(doc: Mapping[str, Any]) -> dict[str, int]:
    """Each per-thread row field's column, from the layout the probe wrote with its rows
    (``row_fields``, in every threadstate document since the first)."""
    return {n: i for i, n in enumerate(doc.get("row_fields") or ())}


@dataclass(frozen=True)
class ThreadBudget:
    """One thread's wall time over its part of the window, by category (seconds)."""

    tid: int
    comm: str
    cgroup: int
    wall_s: float
    seconds: dict[str, float]
    syscalls: float
    bytes: float
    #: the CPUs the thread may run on (its affinity mask), when the probe read it
    allowed_cpus: tuple[int, ...] | None = None
    #: the probe's times of the looks its counts lie between (its part of the window)
    span: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class Budget:
    """The workload's budget: threads kept, totals by category, and the evidence behind them."""

    window: tuple[float, float]
    window_source: str
    threads: tuple[ThreadBudget, ...]
    left_out: tuple[str, ...]
    totals: dict[str, float]
    #: kernel on-CPU seconds by path (``analysis.paths`` names), from the profile
    kernel_paths: dict[str, float] = field(default_factory=dict)
    #: kernel on-CPU seconds spent inside a mechanism that also blocks (fsync, a page
    #: fault, reclaim, dirty throttling): the same stacks read by ``analysis.explain.offcpu``
    kernel_contexts: dict[str, float] = field(default_factory=dict)
    #: per blocked reason: the most sampled function and who called into it
    top_functions: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Δ of each cgroup counter over the window, and the limits, of the workload's cgroups
    cgroups: tuple[dict[str, Any], ...] = ()
    #: per blocked reason: the system call most of its samples were in (``fsync``, ``fadvise64``)
    syscalls: dict[str, str] = field(default_factory=dict)
    #: per blocked reason: the frame most of its samples slept in (``rq_qos_wait``)
    leaves: dict[str, str] = field(default_factory=dict)
    #: mean CPUs over the window of the threads outside the point and of those working for
    #: it (``compute``'s ``cpus``), None without the tasks probe
    cpus: tuple[float, float] | None = None
    #: per blocked reason: the mechanism most of its samples stand for
    #: (``analysis.explain.kernel_knowledge``) and that share of the reason's samples
    mechanisms: dict[str, tuple[str, float]] = field(default_factory=dict)
    #: per blocked reason: every mechanism's share of the reason's samples (``""``: stacks
    #: the table does not know), largest first
    mechanism_shares: dict[str, dict[str, float]] = field(default_factory=dict)
    #: kernel on-CPU seconds by mechanism, from the profile's stacks of the workload's threads
    #: (``""``: stacks the table does not know)
    cpu_mechanisms: dict[str, float] = field(default_factory=dict)
    #: the kernel function the workload's threads were sampled on most, and its caller
    cpu_top: tuple[str, str] = ("", "")
    #: the same among the stacks of the kernel path that holds most of the kernel time
    cpu_path_top: tuple[str, str] = ("", "")
    #: kernel on-CPU seconds by the system call they were in (``openat``, ``write``; ``""``:
    #: none, as in an interrupt), from the profile's stacks of the workload's threads
    cpu_syscalls: dict[str, float] = field(default_factory=dict)

    @property
    def wall_s(self) -> float:
        return sum(self.totals.values())

    def share(self, category: str) -> float:
        w = self.wall_s
        return self.totals.get(category, 0.0) / w if w > 0 else 0.0

    @property
    def shares(self) -> dict[str, float]:
        """Each category's share of the workload's time (``share`` of every category)."""
        w = self.wall_s
        return {c: (v / w if w > 0 else 0.0) for c, v in self.totals.items()}

    @property
    def window_s(self) -> float:
        return self.window[1] - self.window[0]

    @property
    def oncpu_s(self) -> float:
        """The workload's seconds on a CPU, in user space and in the kernel."""
        return self.totals.get("user", 0.0) + self.totals.get("kernel", 0.0)

    @property
    def calls(self) -> float:
        """The workload threads' read/write calls (their ``syscr`` + ``syscw``)."""
        return sum(t.syscalls for t in self.threads)

    @property
    def moved_bytes(self) -> float:
        """The bytes the workload threads' calls moved (their ``rchar`` + ``wchar``)."""
        return sum(t.bytes for t in self.threads)

    @property
    def counted_s(self) -> float:
        """The seconds the threads' counts cover: the union of their spans (a thread that
        starts or exits inside the window is counted only while the probe saw it, so rates of
        its counts are over this, not over the window); the window without threads."""
        spans = sorted(t.span for t in self.threads if t.span[1] > t.span[0])
        total, end = 0.0, -math.inf
        for a, z in spans:
            total += max(0.0, z - max(a, end))
            end = max(end, z)
        return total or self.window_s


def _edge_rows(rows: Sequence[Sequence[float]], w0: float, w1: float) -> tuple[int, int] | None:
    """Indices of the rows that bracket the thread's part of the window."""
    idx = [i for i, r in enumerate(rows) if w0 <= r[0] <= w1]
    if not idx:
        return None
    a = idx[0] - 1 if idx[0] > 0 else idx[0]
    b = idx[-1] + 1 if idx[-1] + 1 < len(rows) and rows[idx[-1] + 1][0] - w1 < 0.15 else idx[-1]
    if a > 0 and w0 - rows[a][0] > 0.15:
        a = idx[0]
    return (a, b) if b > a else None


def compute(
    doc: Mapping[str, Any],
    window: tuple[float, float],
    source: str,
    profile: Mapping[str, int] | None = None,
    cpus: tuple[float, float] | None = None,
) -> Budget | None:
    """The budget over ``window`` (seconds on the probes' clock); None when no thread of the
    workload lived in it. ``cpus``: the mean CPUs over the window of the threads that do not
    work for the point (neighbours, iowall's probes, unrelated kernel threads) and of those
    that do (the workload and the bed's workers). A thread's run delay beyond the quota's is
    split between them in proportion to what its competitors used: the others' CPUs against
    the workload's less the thread's own (an estimate); the workload's part is
    ``runnable:own``, behind its own threads and the bed's workers. A lone worker thread
    cannot wait behind itself: beside four busy loops, one fio job's 62% run delay was
    counted 17% its own while no other thread of the workload ran. Without ``cpus``, all of
    it is counted as the others'."""
    w0, w1 = window
    measured, blocked = _measured(doc, w0, w1)
    if not measured:
        return None
    workers, left = _workers(measured)
    cg_delta = _cgroup_deltas(doc, w0, w1)
    group_delay = _group_delays(workers)
    kept: list[ThreadBudget] = []
    for th, d, span, reasons in workers:
        cg = int(th.get("cgroup", -1))
        quota_part = _quota_part(doc, cg_delta, cg, group_delay.get(cg, 0.0))
        kept.append(_thread_budget(th, d, span, reasons, quota_part, cpus))
    totals = {c: sum(t.seconds[c] for t in kept) for c in CATEGORIES}
    blocked_fn, blocked_sys, blocked_leaf, blocked_mech = _tally(blocked)
    tops = {r: max(fns.items(), key=lambda kv: kv[1])[0] for r, fns in blocked_fn.items()}
    cgroups = _kept_cgroups(doc, cg_delta, kept)
    syscalls, leaves, shares = _most(blocked_sys), _most(blocked_leaf), _shares(blocked_mech)
    # the profile last: its kernel time split by path, context and mechanism, in one go
    comms, kernel_s = {t.comm for t in kept}, totals["kernel"]
    split = split_kernel_time(profile, comms, kernel_s) if profile else ProfileSplit()
    return Budget(
        (w0, w1),
        source,
        tuple(kept),
        tuple(left),
        totals,
        kernel_paths=split.paths,
        kernel_contexts=split.contexts,
        top_functions=tops,
        cgroups=cgroups,
        syscalls=syscalls,
        leaves=leaves,
        cpus=cpus,
        # per reason, the known mechanism sampled most and its share of the reason's samples
        mechanisms={
            r: max(((k, x) for k, x in c.items() if k), key=lambda kv: kv[1])
            for r, c in shares.items()
            if any(c)
        },
        mechanism_shares=shares,
        cpu_mechanisms=split.mechanisms,
        cpu_top=split.top,
        cpu_path_top=split.path_top,
        cpu_syscalls=split.syscalls,
    )


#: One sampled blocked stack: its reason, the function ``offcpu.classify`` named, the stack, its count
_Blocked = tuple[str, str, str, int]
#: Per blocked reason, sample counts by key.
_Counts = dict[str, dict[str, int]]


def _measured(doc: Mapping[str, Any], w0: float, w1: float) -> tuple[list[_Measured], list[_Blocked]]:
    """Every thread that lived in the window, measured over its part of it (``_measure``),
    in the document's order, and all their sampled blocked stacks in the same order."""
    stacks: list[str] = [restore_tail_calls(s) for s in doc.get("stacks") or []]
    fields = _fields(doc)
    measured: list[_Measured] = []
    blocked: list[_Blocked] = []
    for th in doc.get("threads", ()):
        m = _measure(th, stacks, fields, w0, w1)
        if m is not None:
            d, span, reasons, sampled = m
            measured.append((th, d, span, reasons))
            blocked.extend(sampled)
    return measured, blocked


def _measure(
    th: Mapping[str, Any], stacks: Sequence[str], fields: Mapping[str, int], w0: float, w1: float
) -> tuple[dict[str, float], tuple[float, float], dict[str, float], list[_Blocked]] | None:
    """A thread's counters' change and the rows' times between the rows that bracket its part of the window
    (``_edge_rows``), its blocked samples read by ``offcpu.classify`` (preempted: running); None if absent."""
    rows = th.get("rows") or []
    edges = _edge_rows(rows, w0, w1)
    if edges is None:
        return None
    a, b = rows[edges[0]], rows[edges[1]]
    wall = b[0] - a[0]
    if wall <= 0:
        return None
    d = {k: max(0.0, float(b[i] - a[i])) for k, i in fields.items()}
    reasons: dict[str, float] = {}
    sampled: list[_Blocked] = []
    for r, sid, n in th.get("blocked") or ():
        if edges[0] < r <= edges[1] and 0 <= sid < len(stacks):
            c = classify(stacks[sid])
            if c.reason == PREEMPTED:  # runnable, off its CPU: with the running ones
                d["running"] += n
                continue
            reasons[c.reason] = reasons.get(c.reason, 0) + n
            sampled.append((c.reason, c.function, stacks[sid], n))
    return d, (float(a[0]), float(b[0])), reasons, sampled


def _tally(
    blocked: Sequence[_Blocked],
) -> tuple[dict[str, dict[tuple[str, str], int]], _Counts, _Counts, _Counts]:
    """Per blocked reason, its samples counted by (function, caller), system call, sleeping frame and
    mechanism (``offcpu``, ``kernel_knowledge``), keys in first-sampled order: what the budget names."""
    blocked_fn: dict[str, dict[tuple[str, str], int]] = {}
    blocked_sys: _Counts = {}
    blocked_leaf: _Counts = {}
    blocked_mech: _Counts = {}
    for reason, function, stack, n in blocked:
        key = (function, caller_of(stack, reason))
        fn = blocked_fn.setdefault(reason, {})
        fn[key] = fn.get(key, 0) + n
        sc = blocked_sys.setdefault(reason, {})
        call = syscall_of(stack)
        sc[call] = sc.get(call, 0) + n
        lf = blocked_leaf.setdefault(reason, {})
        leaf = leaf_of(stack)
        lf[leaf] = lf.get(leaf, 0) + n
        mc = blocked_mech.setdefault(reason, {})
        mech = blocked_mechanism(stack)
        mc[mech] = mc.get(mech, 0) + n
    return blocked_fn, blocked_sys, blocked_leaf, blocked_mech


def _group_delays(workers: Sequence[_Measured]) -> dict[int, float]:
    """The summed run delay (seconds) of the workers of each cgroup: what ``_quota_part``
    weighs the group's throttled time against."""
    group_delay: dict[int, float] = {}
    for th, d, _, _ in workers:
        cg = int(th.get("cgroup", -1))
        group_delay[cg] = group_delay.get(cg, 0.0) + d["delay_ns"] / 1e9
    return group_delay


def _thread_budget(
    th: Mapping[str, Any],
    d: Mapping[str, float],
    span: tuple[float, float],
    reasons: Mapping[str, float],
    quota_part: float,
    cpus: tuple[float, float] | None,
) -> ThreadBudget:
    """One worker's time by category: on a CPU (schedstat run time, split by utime/stime ticks), runnable
    (run delay: ``quota_part``, then ``_own_part``, then others'), blocked (``_blocked_seconds``)."""
    cg = int(th.get("cgroup", -1))
    wall = span[1] - span[0]
    oncpu, delay = d["exec_ns"] / 1e9, d["delay_ns"] / 1e9
    ticks = d["utime"] + d["stime"]
    user = oncpu * (d["utime"] / ticks) if ticks else 0.0
    secs = {c: 0.0 for c in CATEGORIES}
    secs["user"], secs["kernel"] = user, oncpu - user
    secs["runnable:quota"] = delay * quota_part
    rest = delay - secs["runnable:quota"]
    own = rest * _own_part(cpus, oncpu / wall)
    secs["runnable:own"], secs["runnable:others"] = own, rest - own
    by_reason, unaccounted = _blocked_seconds(d, wall, oncpu, delay, reasons)
    for r, s in by_reason.items():
        secs[f"blocked:{r}"] += s
    secs["unaccounted"] = unaccounted
    return ThreadBudget(
        int(th.get("tid", 0)),
        str(th.get("comm", "")),
        cg,
        wall,
        secs,
        d["syscr"] + d["syscw"],
        d["rchar"] + d["wchar"],
        _allowed(th.get("allowed_cpus")),
        span,
    )


def _blocked_seconds(
    d: Mapping[str, float], wall: float, oncpu: float, delay: float, reasons: Mapping[str, float]
) -> tuple[dict[str, float], float]:
    """A thread's blocked time (wall less on-CPU and run delay) by reason, in proportion to its sampled
    stacks; and the unaccounted rest: blocked time no stack covers (never guessed), and any overrun."""
    blocked = max(0.0, wall - oncpu - delay)
    n_blocked = sum(reasons.values())
    n_samples = d["samples"]
    n_running = d["running"]
    expected_blocked = max(0.0, n_samples - n_running)
    covered = min(1.0, n_blocked / expected_blocked) if expected_blocked else 0.0
    by_reason = {r: blocked * covered * n / n_blocked if n_blocked else 0.0 for r, n in reasons.items()}
    return by_reason, blocked * (1.0 - covered) + max(0.0, oncpu + delay - wall)


def _kept_cgroups(
    doc: Mapping[str, Any], cg_delta: Sequence[Mapping[str, float]], kept: Sequence[ThreadBudget]
) -> tuple[dict[str, Any], ...]:
    """The limits, paths and counters' change over the window (``_cgroup_deltas``) of each
    cgroup a kept thread ran in, in the document's order."""
    return tuple(
        {"limits": c.get("limits", {}), "paths": c.get("paths", {}), "delta": cg_delta[i]}
        for i, c in enumerate(doc.get("cgroups", ()))
        if any(t.cgroup == i for t in kept)
    )


def _allowed(v: Any) -> tuple[int, ...] | None:
    """A thread's affinity mask as the probe stored it (a list of CPU numbers), or None."""
    if not isinstance(v, list) or not v:
        return None
    return tuple(int(x) for x in v if isinstance(x, int))


def _shares(counts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """Per reason, each mechanism's share of the reason's samples, largest first."""
    out: dict[str, dict[str, float]] = {}
    for r, c in counts.items():
        total = sum(c.values())
        if total:
            out[r] = {k: n / total for k, n in sorted(c.items(), key=lambda kv: -kv[1])}
    return out


def _own_part(cpus: tuple[float, float] | None, self_cpus: float) -> float:
    """The share of a thread's run delay spent behind the workload's other threads and the
    bed's workers: their CPUs (the workload's less the thread's own) over all its
    competitors' (those and the outside threads'); 0 without the tasks probe's numbers."""
    if cpus is None:
        return 0.0
    outside, inside = max(0.0, cpus[0]), max(0.0, cpus[1] - self_cpus)
    return inside / (inside + outside) if inside + outside > 0 else 0.0


def _quota_part(
    doc: Mapping[str, Any], cg_delta: Sequence[Mapping[str, float]], cg: int, delay: float
) -> float:
    """The share of group ``cg``'s run delay that its CPU quota explains. When the group used
    at least ``QUOTA_BINDING`` of its quota over the window and was throttled, all of it: the
    quota is binding, and other processes only decide when in each period the group gets its
    share (a group at a 0.3-CPU quota beside two spinning neighbours used 1.13 of its 1.2
    CPU-s, yet its throttled time was a third of its threads' run delay). Otherwise
    min(1, throttled time / the group's threads' run delay)."""
    if not 0 <= cg < len(cg_delta) or delay <= 0:
        return 0.0
    d = cg_delta[cg]
    thr = d.get("cg_cpu_throttled_s", 0.0)
    cgs = doc.get("cgroups") or ()
    quota = (cgs[cg].get("limits") or {}).get("cpu_quota_cpus") if cg < len(cgs) else None
    used, span = d.get("cg_cpu_usage_s"), d.get("span_s")
    if (
        quota
        and used is not None
        and span
        and d.get("cg_cpu_nr_throttled", 0.0) > 0
        and used >= QUOTA_BINDING * quota * span
    ):
        return 1.0
    return min(1.0, thr / delay)


def _most(counts: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    """Per reason, the key sampled most often."""
    return {r: max(c.items(), key=lambda kv: kv[1])[0] for r, c in counts.items() if c}


def _cgroup_deltas(doc: Mapping[str, Any], w0: float, w1: float) -> list[dict[str, float]]:
    """Per cgroup, each counter's change between the rows nearest the window's ends."""
    out: list[dict[str, float]] = []
    for cg in doc.get("cgroups", ()):
        rows = cg.get("rows") or []
        before = [r for r in rows if r[0] <= w0 + 0.05]
        after = [r for r in rows if r[0] >= w1 - 0.05]
        a = before[-1] if before else (rows[0] if rows else None)
        b = after[0] if after else (rows[-1] if rows else None)
        if a is None or b is None or b[0] <= a[0]:
            out.append({})
            continue
        out.append(
            {k: float(v) - float(a[1].get(k, 0.0)) for k, v in b[1].items() if isinstance(v, int | float)}
            | {"span_s": b[0] - a[0]}
        )
    return out
