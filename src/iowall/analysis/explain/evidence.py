"""Pure: a run read once. ``read(run, batch, primary)`` takes from a stored run everything the
explain wing uses (its metrics, the probes' documents, the profile's stacks, the I/O window
and each probe series' mean over it, the bed, the knobs, the workload's side, the context
its batch gives) into one ``Evidence`` of plain values; no stage after it reads a ``Run``.
Reading it in one place is what lets a run's walk through explain go down the wing stage by
stage (docs/architecture.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...model import PROFILE_ARTIFACT, Metric, Run
from ...vocab.errors import UserError
from ...vocab.units import parse_size
from .budget import MIN_WINDOW_S
from .context import explain_context

#: Classes of kernel thread that work for the bed, as the tasks probe names them.
HELPERS = ("io_uring", "loop", "flusher", "fs", "kswapd")

#: Classes of thread that do not work for the point: their CPU time is what the workload's
#: run delay may be spent behind.
OUTSIDE = ("neighbours", "iowall", "kthreads")


@dataclass(frozen=True)
class Evidence:
    """What explain reads of one run, as plain values. ``window`` is the point's I/O window
    on the probes' clock (None: no budget can be made); ``means`` each diskstats and tasks
    series' mean over it; ``unexplained`` the first sentence of a run without a budget
    (``too_short`` when its I/O lasted under ``MIN_WINDOW_S``)."""

    run: int | None
    point: str
    skipped: tuple[SkippedProbe, ...]
    not_applicable: str | None
    metrics: dict[str, float]
    ctx: dict[str, float]
    #: the profile probe's folded stacks as stored (``analysis.explain.kernel_paths`` reads them)
    profile: str | None = None
    threadstate: Mapping[str, Any] | None = None
    window: tuple[float, float] | None = None
    window_source: str = ""
    #: mean CPUs over the window of the threads outside the point and of those working for it
    cpus: tuple[float, float] | None = None
    helpers: dict[str, float] = field(default_factory=dict)
    neighbours: tuple[tuple[str, float], ...] = ()
    lock_rows: tuple[Any, ...] = ()
    tasks_top: tuple[Any, ...] = ()
    #: the diskstats series (and the tasks probe's ``loop_cpus``) over the window
    device_means: dict[str, float | None] = field(default_factory=dict)
    bed: Mapping[str, Any] = field(default_factory=dict)
    knobs: Mapping[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    devnos: tuple[str, ...] = ()
    unexplained: str = ""
    too_short: bool = False


def read(run: Run, batch: Sequence[Run], primary: Metric | None) -> Evidence:
    """Everything explain uses of ``run``, judged among its ``batch``, read once; ``primary``
    is the run's primary metric (``model.primary_metric``)."""
    first: dict[str, float] = {}
    for m in run.metrics:  # Run.metric's answer: the first of a name
        first.setdefault(m.name, m.value)
    tp = throughput(primary)
    docs = _documents(run)
    ts = docs.get("threadstate.json")
    ts = ts if isinstance(ts, dict) else None
    win = io_window(run, ts, tp) if ts is not None else None
    w = win[0] if win else None
    split = cpu_split(run, w) if w else None
    working = helpers(run, w) if w else {}
    means = device_means(run, w) if w else {}
    others = neighbours(docs.get("tasks_top.json"))
    locks = lock_rows(docs.get("lock_contention.json"))
    skipped = skipped_probes(run)
    na = not_applicable(run)
    unexplained, too_short = ("", False) if w is not None else without_budget(run, ts, tp, first, skipped)
    workload = workload_side(run, first)
    ctx = explain_context(run, batch, tp, first)  # the batch's ceilings; the phases last
    if workload.get("io_bytes"):  # fio's fixed block size, when the measured mean agrees with it
        try:
            size = float(parse_size(str(run.point.params.get("bs", ""))))
        except (UserError, ValueError):
            size = 0.0
        if size and abs(size - workload["io_bytes"]) <= 0.1 * size:
            workload["io_bytes"] = size
    devno = run.bed.get("devno")
    knobs = run.env.get("knobs") or {}
    return Evidence(
        run.id,
        run.point.describe(),
        tuple(skipped),
        na,
        {m.name: m.value for m in run.metrics},
        ctx,
        profile=docs.get(PROFILE_ARTIFACT),
        threadstate=ts,
        window=w,
        window_source=win[1] if win else "",
        cpus=split,
        helpers=working,
        neighbours=tuple(others),
        lock_rows=tuple(locks),
        tasks_top=tuple(_list(docs.get("tasks_top.json"))),
        device_means=means,
        bed=run.bed,
        knobs=knobs if isinstance(knobs, dict) else {},
        workload=workload,
        devnos=(str(devno),) if devno else (),
        unexplained=unexplained,
        too_short=too_short,
    )


@dataclass(frozen=True)
class SkippedProbe:
    """A probe the run could not use, and why (from its notes)."""

    probe: str
    reason: str


def skipped_probes(run: Run) -> list[SkippedProbe]:
    """Probes the run could not use, from its notes (``probe NAME skipped: REASON``)."""
    out = []
    for n in run.notes:
        if n.startswith("probe ") and " skipped: " in n:
            head, reason = n.split(" skipped: ", 1)
            out.append(SkippedProbe(head.removeprefix("probe "), reason))
    return out


def not_applicable(run: Run) -> str | None:
    """Why explaining ``run`` makes no sense, or None: a memory-copy ceiling measures the
    machine, not an I/O path."""
    if run.point.params.get("kind") == "memcopy":
        return "not applicable: a memory-copy ceiling measures the machine's copy bandwidth, not an I/O path"
    return None


def _documents(run: Run) -> dict[str, Any]:
    """The probes' JSON documents by artifact name (None where undecodable), and the
    profile's body as stored."""
    out: dict[str, Any] = {}
    for a in run.artifacts:
        if a.name in out:
            continue
        if a.name == PROFILE_ARTIFACT:
            out[a.name] = a.body
        elif a.name.endswith(".json"):
            try:
                out[a.name] = json.loads(a.body)
            except json.JSONDecodeError:
                out[a.name] = None
    return out


def _list(doc: Any) -> list[Any]:
    return list(doc) if isinstance(doc, list) else []


def lock_rows(doc: Any) -> list[Any]:
    """The locks probe's table (``lock_contention.json``), when the run carries it."""
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    return list(rows) if isinstance(rows, list) else []


def throughput(primary: Metric | None) -> tuple[str, float] | None:
    """The direction and bytes/s of a fio run's primary metric (``model.primary_metric``)."""
    if primary is None or primary.name not in ("read_bw_bytes_per_s", "write_bw_bytes_per_s"):
        return None
    return primary.name.split("_", 1)[0], primary.value


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


def _fields(doc: Mapping[str, Any]) -> dict[str, int]:
    """The threadstate rows' column of each counter (``row_fields``)."""
    return {n: i for i, n in enumerate(doc.get("row_fields") or ())}


def counter_window(doc: Mapping[str, Any], direction: str | None = None) -> tuple[float, float] | None:
    """The window in which the threads' read (``direction='read'``), write, or any I/O
    syscalls moved: from the row before the first move to the row of the last."""
    f = _fields(doc)
    cols = {"read": (f["syscr"],), "write": (f["syscw"],)}.get(direction or "", (f["syscr"], f["syscw"]))
    moves: list[tuple[float, float]] = []
    for th in doc.get("threads", ()):
        rows = th.get("rows") or []
        for a, b in zip(rows, rows[1:], strict=False):
            if sum(b[c] - a[c] for c in cols) > 0:
                moves.append((a[0], b[0]))
    if not moves:
        return None
    return min(m[0] for m in moves), max(m[1] for m in moves)


def io_window(
    run: Run, doc: Mapping[str, Any], tp: tuple[str, float] | None
) -> tuple[tuple[float, float], str] | None:
    """The point's I/O window on the probes' clock: from fio's (or the engine's) own time
    series when the run has them (its first interval's start to its last sample, an end
    fsync included), else where the workload threads' I/O syscalls moved."""
    for s in run.series:
        if s.probe in ("fio", "engine") and len(s.samples) >= 2:
            first = s.samples[0][0] - (s.samples[1][0] - s.samples[0][0])
            return (max(0.0, first), s.samples[-1][0]), f"{s.probe} {s.name} series"
    w = counter_window(doc, tp[0] if tp else None)
    return (w, "the workload's I/O syscalls") if w else None


def without_budget(
    run: Run,
    doc: Mapping[str, Any] | None,
    tp: tuple[str, float] | None,
    metric: Mapping[str, float],
    skipped: Sequence[SkippedProbe] = (),
) -> tuple[str, bool]:
    """Why ``run`` has no wall-clock budget, as its first sentence, and whether it is too short
    to explain at all: its I/O (fio's runtime, else the run's own time) lasted less than a
    budget needs, so the probe's samples timed none of it. Otherwise the CPU-time rules over
    the whole machine are all there is, and the sentence says so and why: the threadstate
    probe did not run (skipped, or a run from before it), or it found no I/O window (no fio
    series, and no read or write calls of the workload's threads to time)."""
    rt = metric.get(f"{tp[0]}_runtime_s") if tp else None
    lasted = rt if rt else max(0.0, run.finished_at - run.started_at)
    if doc is not None:
        if lasted < MIN_WINDOW_S:
            return (
                f"Too short to explain: the I/O lasted {lasted:.2f} s, before the threadstate probe "
                f"could time the workload's threads (a wall needs {MIN_WINDOW_S:.0f} s of I/O or "
                "more); run it longer (a larger size or a runtime).",
                True,
            )
        why = "the threadstate probe found no I/O window (no fio series, no read or write calls to time)"
    else:
        reason = next((s.reason for s in skipped if s.probe == "threadstate"), None)
        why = f"the threadstate probe was skipped ({reason})" if reason else "no threadstate probe data"
    return (
        f"No wall-clock budget: {why}. What follows are the CPU-time rules over the whole "
        "machine, not the workload's own time.",
        False,
    )


def neighbours(top: Any) -> list[tuple[str, float]]:
    """The busiest other processes during the run (the tasks probe's top threads), threads of
    one name together (``sh ×3``), busiest first."""
    by: dict[str, list[float]] = {}
    for r in _list(top):
        if isinstance(r, dict) and r.get("class") == "neighbours" and float(r.get("cpu_s") or 0.0) > 0.05:
            by.setdefault(str(r.get("comm")), []).append(float(r.get("cpu_s") or 0.0))
    named = [(f"{c} ×{len(v)}" if len(v) > 1 else c, sum(v)) for c, v in by.items()]
    return sorted(named, key=lambda x: -x[1])


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


def device_means(run: Run, window: tuple[float, float]) -> dict[str, float | None]:
    """Each diskstats series' mean over the window, and the tasks probe's ``loop_cpus``
    (the loop worker's CPUs): what ``device.device_in_window`` reads."""
    out = {s.name: window_mean(s.samples, *window) for s in run.series if s.probe == "diskstats"}
    for s in run.series:
        if s.probe == "tasks" and s.name == "loop_cpus":
            out[s.name] = window_mean(s.samples, *window)
    return out


def workload_side(run: Run, metric: Mapping[str, float]) -> dict[str, Any]:
    """The workload's side of the device side: its main direction, the bytes per I/O it
    issued (fio's bytes over its I/Os; ``read`` sets it to fio's block size when they agree),
    its bytes per second, whether its I/O was direct and sequential (the point's ``direct``
    and ``rw``), the I/Os it asked to keep in flight (``iodepth``), and fio's median
    completion latency in that direction."""
    best: tuple[float, str] | None = None
    for d in ("read", "write"):
        io = metric.get(f"{d}_io_bytes")
        if io and (best is None or io > best[0]):
            best = (io, d)
    p = run.point.params
    out: dict[str, Any] = {
        "direct": bool(p.get("direct")),
        "sequential": str(p.get("rw", "")) in ("read", "write", "rw", "readwrite"),
    }
    if str(p.get("iodepth", "")).isdigit():
        out["iodepth"] = int(p["iodepth"])
    if best is None:
        return out
    io, d = best
    iops, rt, bw = metric.get(f"{d}_iops"), metric.get(f"{d}_runtime_s"), metric.get(f"{d}_bw_bytes_per_s")
    out["direction"] = d
    if iops and rt:
        out["io_bytes"] = io / (iops * rt)
    out["bytes_per_s"] = sum(metric.get(f"{x}_bw_bytes_per_s") or 0.0 for x in ("read", "write")) or bw
    lat = metric.get(f"{d}_clat_p50_s")
    if lat:
        out["latency_p50_s"] = lat
    return out
