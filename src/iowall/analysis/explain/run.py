"""Pure: the explain wing's entry point. ``explain(run, batch)`` says why one run is where it
is, judged among the runs of its batch (the ceilings and the memory copy measured beside it),
as an ``Explanation`` (``facts``); ``explain_points`` does it for the median run of each
point of a batch (a report's Why; a `limits` run's is ``analysis.scaling.limits_why.why_limits``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...model import MEASURED_STATUSES, PROFILE_ARTIFACT, Run, primary_metric
from ...vocab.errors import UserError
from ...vocab.units import parse_size
from .attribution import classes, lock_callers, top_functions, top_paths
from .budget import MIN_WINDOW_S, Budget, compute, counter_window
from .context import explain_context, not_applicable, representative, skipped_probes, throughput
from .device import Device, device_in_window, window_mean, with_facts
from .facts import Cost, Explanation
from .kernel_knowledge import mechanism_of
from .kernel_paths import attribute, decode_folded, path_metrics
from .rules import Verdict, fire, near_misses, sentences
from .wall import Decision, decide

#: Rules of the CPU-time table that stay beside a wall verdict of each kind: they add
#: evidence of the same mechanism. The others account the whole machine's CPU time and are
#: dropped when the workload's own budget is known.
CONSISTENT: dict[str, tuple[str, ...]] = {
    "dirty-throttle": ("writers-throttled", "flusher-saturated", "writeback-phase"),
    "device": ("device-bound", "writeback-phase"),
    "lock": ("lock-contention",),
    "reclaim": ("reclaim-bound",),
    "memcg-reclaim": ("reclaim-bound",),
    "memcopy": ("writeback-phase",),
    "cpu-kernel": ("writeback-phase", "lock-contention"),
}


def _artifact_json(run: Run, name: str) -> Any:
    for a in run.artifacts:
        if a.name == name:
            try:
                return json.loads(a.body)
            except json.JSONDecodeError:
                return None
    return None


def lock_rows(run: Run) -> list[Any]:
    """The locks probe's table, when the run carries it (``lock_contention.json``)."""
    doc = _artifact_json(run, "lock_contention.json")
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    return list(rows) if isinstance(rows, list) else []


def tasks_top(run: Run) -> list[Any]:
    """The tasks probe's busiest threads, when the run carries them (``tasks_top.json``)."""
    doc = _artifact_json(run, "tasks_top.json")
    return list(doc) if isinstance(doc, list) else []


def io_window(run: Run, doc: dict[str, Any]) -> tuple[tuple[float, float], str] | None:
    """The point's I/O window on the probes' clock: from fio's (or the engine's) own time
    series when the run has them (its first interval's start to its last sample, an end
    fsync included), else where the workload threads' I/O syscalls moved."""
    for s in run.series:
        if s.probe in ("fio", "engine") and len(s.samples) >= 2:
            first = s.samples[0][0] - (s.samples[1][0] - s.samples[0][0])
            return (max(0.0, first), s.samples[-1][0]), f"{s.probe} {s.name} series"
    tp = throughput(run)
    w = counter_window(doc, tp[0] if tp else None)
    return (w, "the workload's I/O syscalls") if w else None


def budget(run: Run, att_stacks: dict[str, int] | None = None) -> Budget | None:
    """The workload's wall-clock budget (``analysis.explain.budget``) when the run carries the
    ``threadstate`` probe's document."""
    doc = _artifact_json(run, "threadstate.json")
    if not isinstance(doc, dict):
        return None
    win = io_window(run, doc)
    if win is None:
        return None
    return compute(doc, win[0], win[1], att_stacks, cpu_split(run, win[0]))


def without_budget(run: Run) -> tuple[str, bool]:
    """Why ``run`` has no wall-clock budget, as its first sentence, and whether it is too short
    to explain at all: its I/O (fio's runtime, else the run's own time) lasted less than a
    budget needs, so the probe's samples timed none of it. Otherwise the CPU-time rules over
    the whole machine are all there is, and the sentence says so and why: the threadstate
    probe did not run (skipped, or a run from before it), or it found no I/O window (no fio
    series, and no read or write calls of the workload's threads to time)."""
    tp = throughput(run)
    rt = run.metric(f"{tp[0]}_runtime_s") if tp else None
    lasted = rt if rt else max(0.0, run.finished_at - run.started_at)
    if isinstance(_artifact_json(run, "threadstate.json"), dict):
        if lasted < MIN_WINDOW_S:
            return (
                f"Too short to explain: the I/O lasted {lasted:.2f} s, before the threadstate probe "
                f"could time the workload's threads (a wall needs {MIN_WINDOW_S:.0f} s of I/O or "
                "more); run it longer (a larger size or a runtime).",
                True,
            )
        why = "the threadstate probe found no I/O window (no fio series, no read or write calls to time)"
    else:
        skipped = next((s.reason for s in skipped_probes(run) if s.probe == "threadstate"), None)
        why = f"the threadstate probe was skipped ({skipped})" if skipped else "no threadstate probe data"
    return (
        f"No wall-clock budget: {why}. What follows are the CPU-time rules over the whole "
        "machine, not the workload's own time.",
        False,
    )


def _profile_stacks(run: Run) -> dict[str, int] | None:
    for a in run.artifacts:
        if a.name == PROFILE_ARTIFACT:
            try:
                return decode_folded(a.body)
            except (ValueError, OSError, EOFError):
                return None
    return None


def neighbours(run: Run) -> list[tuple[str, float]]:
    """The busiest other processes during the run (the tasks probe's top threads), threads of
    one name together (``sh ×3``), busiest first."""
    by: dict[str, list[float]] = {}
    for r in tasks_top(run):
        if isinstance(r, dict) and r.get("class") == "neighbours" and float(r.get("cpu_s") or 0.0) > 0.05:
            by.setdefault(str(r.get("comm")), []).append(float(r.get("cpu_s") or 0.0))
    named = [(f"{c} ×{len(v)}" if len(v) > 1 else c, sum(v)) for c, v in by.items()]
    return sorted(named, key=lambda x: -x[1])


#: Classes of kernel thread that work for the bed, as the tasks probe names them.
HELPERS = ("io_uring", "loop", "flusher", "fs", "kswapd")


def helpers(run: Run, window: tuple[float, float]) -> dict[str, float]:
    """The CPUs each class of thread working for the point (io_uring workers, the bed's loop
    workers and flusher, filesystem workers, kswapd) used over the I/O window, from the
    tasks probe's series; classes that did not run are left out."""
    out: dict[str, float] = {}
    for s in run.series:
        cls = s.name.removesuffix("_cpus")
        if s.probe == "tasks" and cls in HELPERS:
            v = window_mean(s.samples, *window)
            if v is not None and v >= 0.01:
                out[cls] = round(v, 3)
    return out


def workload_side(run: Run) -> dict[str, Any]:
    """The workload's side of the device side: its main direction, the bytes per I/O it
    issued (fio's bytes over its I/Os), its bytes per second, and whether its I/O was direct
    and sequential (the point's ``direct`` and ``rw``)."""
    best: tuple[float, str] | None = None
    for d in ("read", "write"):
        io = run.metric(f"{d}_io_bytes")
        if io and (best is None or io > best[0]):
            best = (io, d)
    p = run.point.params
    out: dict[str, Any] = {
        "direct": bool(p.get("direct")),
        "sequential": str(p.get("rw", "")) in ("read", "write", "rw", "readwrite"),
    }
    if best is None:
        return out
    io, d = best
    iops, rt, bw = run.metric(f"{d}_iops"), run.metric(f"{d}_runtime_s"), run.metric(f"{d}_bw_bytes_per_s")
    out["direction"] = d
    if iops and rt:
        measured = io / (iops * rt)
        out["io_bytes"] = measured
        try:  # fio's fixed block size, when the measured mean agrees with it
            bs = float(parse_size(str(p.get("bs", ""))))
        except (UserError, ValueError):
            bs = 0.0
        if bs and abs(bs - measured) <= 0.1 * bs:
            out["io_bytes"] = bs
    out["bytes_per_s"] = sum(run.metric(f"{x}_bw_bytes_per_s") or 0.0 for x in ("read", "write")) or bw
    return out


def device_of(run: Run, window: tuple[float, float]) -> Device:
    """The device side of ``run`` over ``window``: the diskstats series and the loop worker's
    CPUs, with the bed's facts, the knobs in force and the workload's side."""
    series = {s.name: s.samples for s in run.series if s.probe == "diskstats"}
    series.update({s.name: s.samples for s in run.series if s.probe == "tasks" and s.name == "loop_cpus"})
    knobs = run.env.get("knobs") or {}
    return with_facts(
        device_in_window(series, *window),
        run.bed,
        knobs if isinstance(knobs, dict) else {},
        workload_side(run),
    )


def helper_mechanisms(profile: dict[str, int] | None, comms: set[str], cpus: float) -> dict[str, float]:
    """CPUs (over the profile, the whole point) that threads outside the workload spent in
    each known mechanism of ``analysis.explain.kernel_knowledge`` (btrfs's workers compressing, the
    loop worker, checksums): the profile's kernel stacks of other tasks, as a share of all
    samples (idle included: ``perf record -a``) times the CPUs."""
    if not profile or not cpus:
        return {}
    total = sum(profile.values())
    out: dict[str, float] = {}
    for stack, n in profile.items():
        frames = stack.split(";")
        if frames[0] in comms or frames[0].startswith("swapper"):
            continue
        kernel = [f[:-4] for f in frames[1:] if f.endswith("_[k]")]
        if not kernel:
            continue
        m = mechanism_of(";".join(kernel))
        if m:
            out[m] = out.get(m, 0.0) + n
    return {m: round(cpus * n / total, 3) for m, n in out.items()} if total else {}


def wall_of(run: Run, b: Budget, ctx: dict[str, float], profile: dict[str, int] | None = None) -> Decision:
    """The wall verdict from the budget, with the device seen over the same window."""
    dev = device_of(run, b.window)
    devno = run.bed.get("devno")
    comms = {t.comm for t in b.threads}
    hp = helper_mechanisms(profile, comms, ctx.get("cpus", 0.0))
    return decide(b, dev, ctx, neighbours(run), (str(devno),) if devno else (), hp)


def cost_of(b: Budget, dev: Device) -> Cost | None:
    """The cost of each I/O: the workload's CPU time per I/O (fio's own count: libaio and
    io_uring submit many per call, through calls no counter sees), per MiB, and per
    read/write call with calls per second where those calls moved the workload's bytes."""
    oncpu = b.totals.get("user", 0.0) + b.totals.get("kernel", 0.0)
    if not oncpu or not b.window_s:
        return None
    calls = sum(t.syscalls for t in b.threads)
    moved = sum(t.bytes for t in b.threads)
    fio_bytes = (dev.workload_bytes_per_s or 0.0) * b.window_s
    per_call: dict[str, float] = {}
    # read/write calls count only when they carried the I/O (not fio's reads of /proc
    # beside libaio's submissions: 3 bytes a call)
    if calls and moved and (not fio_bytes or moved >= 0.5 * fio_bytes):
        per_call = {
            "calls_per_s": round(calls / b.window_s, 1),
            "cpu_us_per_call": round(oncpu / calls * 1e6, 3),
            "bytes_per_call": round(moved / calls),
        }
    total = fio_bytes or moved
    per_io: dict[str, float] = {}
    if fio_bytes and dev.io_bytes:
        ios = fio_bytes / dev.io_bytes
        per_io = {"ios_per_s": round(ios / b.window_s, 1), "cpu_us_per_io": round(oncpu / ios * 1e6, 3)}
    return Cost(
        round(oncpu, 4),
        round(b.totals.get("user", 0.0) / oncpu, 4),
        cpu_ms_per_mib=round(oncpu / (total / 2**20) * 1e3, 4) if total else None,
        **per_call,
        **per_io,
    )


#: Classes of thread that do not work for the point: their CPU time is what the workload's
#: run delay may be spent behind.
OUTSIDE = ("neighbours", "iowall", "kthreads")


def cpu_split(run: Run, window: tuple[float, float]) -> tuple[float, float] | None:
    """Mean CPUs over the window of the threads that do not work for the point (``OUTSIDE``)
    and of those that do, from the tasks probe's per-class series; None without them."""
    per = {
        s.name.removesuffix("_cpus"): window_mean(s.samples, *window)
        for s in run.series
        if s.probe == "tasks" and s.name.endswith("_cpus")
    }
    busy = sum(v for v in per.values() if v)
    if not busy:
        return None
    outside = sum(per.get(c) or 0.0 for c in OUTSIDE)
    return outside, busy - outside


def explain(run: Run, batch: Sequence[Run]) -> Explanation:
    """Why ``run`` is where it is, judged among the runs of its ``batch`` (the ceilings and
    the memory copy measured beside it): the workload's budget and the wall it names, with
    the rules that stand beside that wall, their nearest misses and where the CPU time went
    (without a budget: the rules over the whole machine's CPU time)."""
    na = not_applicable(run)
    if na is not None:
        return Explanation(run.id, run.point.describe(), tuple(skipped_probes(run)), False, (na,))
    metrics = {m.name: m.value for m in run.metrics}
    ctx = explain_context(run, batch)
    stacks = _profile_stacks(run)  # decoded once: the attribution and the budget read it
    att = attribute(stacks) if stacks else None
    if att is not None and not any(k.startswith("profile_") and k.endswith("_share") for k in metrics):
        metrics.update({m.name: m.value for m in path_metrics(att)})  # older runs
    b = budget(run, stacks)
    unexplained, too_short = without_budget(run) if b is None else ("", False)
    if too_short:  # the machine's CPU time would be another process's, not the workload's
        return Explanation(
            run.id,
            run.point.describe(),
            tuple(skipped_probes(run)),
            sentences=(unexplained,),
            attribution=tuple(classes(metrics)),
            paths=tuple(top_paths(att)) if att is not None else (),
            throughput_bytes_per_s=ctx.get("throughput_bytes_per_s"),
        )
    d = wall_of(run, b, ctx, stacks) if b is not None else None
    walls = [x for x in (d.wall, *d.also) if x] if d is not None else []
    keep = (*(r for w in walls for r in CONSISTENT.get(w.kind, ())), "writeback-phase")
    # with a budget only the rules that stand beside its wall may fire: one left out must not
    # replace one kept (device-bound in writeback replacing writeback-phase beside a memcopy wall)
    verdicts = [
        Verdict(
            w.kind,
            w.sentence if i == 0 else "Also: " + w.sentence,
            {**w.evidence, "share": round(w.share, 4)},
        )
        for i, w in enumerate(walls)
    ] + fire(
        metrics,
        ctx,
        lock_rows=lock_rows(run),
        tasks_top=tasks_top(run),
        lock_callers=lock_callers(att) if att is not None else None,
        top_functions=top_functions(att) if att is not None else None,
        only=keep if b is not None else None,
    )
    dev = device_of(run, b.window) if b is not None else None
    said = sentences(verdicts) if verdicts or b is None else []
    return Explanation(
        run.id,
        run.point.describe(),
        tuple(skipped_probes(run)),
        sentences=tuple(
            ([unexplained] if unexplained else [])
            + (said + list(d.notes if d is not None else ()) or sentences([]))
        ),
        fired=bool(verdicts),
        # with a budget, only the near misses of the rules that may stand beside its wall
        verdicts=tuple(verdicts),
        near_misses=tuple(
            m
            for m in near_misses(metrics, ctx, [v.rule for v in verdicts])
            if b is None or m.split(":", 1)[0] in keep
        ),
        attribution=tuple(classes(metrics)),
        paths=tuple(top_paths(att)) if att is not None else (),
        wall=d.wall if d is not None else None,
        budget=b,
        helpers_cpus=helpers(run, b.window) if b is not None else {},
        device=dev if dev is not None and (dev.reqs or dev.kind) else None,
        cost=cost_of(b, dev) if b is not None and dev is not None else None,
        throughput_bytes_per_s=ctx.get("throughput_bytes_per_s"),
    )


def explain_points(runs: Sequence[Run]) -> list[Explanation]:
    """One entry per point of ``runs`` (in first-run order), explaining its median run by
    its primary metric; points whose runs carry no probe data are left out."""
    good = [r for r in runs if r.status in MEASURED_STATUSES]
    groups: dict[str, list[Run]] = {}
    for r in good:
        groups.setdefault(r.point.key(), []).append(r)
    out = []
    for group in groups.values():
        if not any(r.series for r in group) and not skipped_probes(group[0]):
            continue  # not probed (e.g. a memory-copy ceiling)
        metric = primary_metric(group[0])
        run = representative(group, metric.name) if metric else group[len(group) // 2]
        if run is not None:
            out.append(explain(run, good))
    return out
