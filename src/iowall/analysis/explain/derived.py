"""Pure: what ``explain`` computes from a run's metrics, context and profile before it
judges: where the CPU time went (the ``tasks`` probe's CPU time per class of thread, the
``profile`` probe's share of samples per kernel path, ranked and put into phrases), and every
quantity the rules' conditions and sentences use (``DERIVED``, all of them at once:
``values``): shares, rates, the busiest thread, the heaviest kernel path with its meaning."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...vocab.cpuclasses import CLASSES, TITLES, UNATTRIBUTED
from ...vocab.units import fmt_bytes, fmt_rate
from .kernel_paths import LABELS, PATHS, Attribution
from .kernel_paths import PathShare as KernelPathShare

Values = Mapping[str, Any]
Derive = Callable[[Values], Any]


#: Classes below this share of the busy CPU time are left out of sentences.
MIN_SHARE = 0.03


@dataclass(frozen=True)
class ClassShare:
    """A class of thread (``vocab.cpuclasses``) with its CPU-seconds and share of the busy
    CPU time (the ``tasks`` probe)."""

    cls: str
    title: str
    cpu_s: float
    share: float


@dataclass(frozen=True)
class FunctionShare:
    """A kernel function and its share of its path's samples."""

    function: str
    share: float


@dataclass(frozen=True)
class PathShare:
    """A kernel path of the CPU profile (``kernel_paths``): its samples, share of all
    sampled CPU time and heaviest functions."""

    path: str
    label: str
    samples: int
    share: float
    top_functions: tuple[FunctionShare, ...] = ()


def classes(metrics: Mapping[str, Any]) -> list[ClassShare]:
    """Every class with its CPU-seconds and share of the busy CPU time, largest first, then
    ``unattributed`` (always last, never hidden); empty without the ``tasks`` probe."""
    named: list[ClassShare] = []
    rest: list[ClassShare] = []
    for c in (*CLASSES, UNATTRIBUTED):
        share = _num(metrics, f"tasks_{c}_share")
        if share is None:
            continue
        row = ClassShare(c, TITLES.get(c, c), _num(metrics, f"tasks_{c}_cpu_s") or 0.0, share)
        (rest if c == UNATTRIBUTED else named).append(row)
    return sorted(named, key=lambda x: -x.share) + rest


def consumers_text(metrics: Mapping[str, Any], top: int = 4) -> str | None:
    """``52% workload threads (fio, engine), 21% loop workers of the bed; 3% unattributed``
    (shares of the busy CPU time), or None without the ``tasks`` probe."""
    cs = classes(metrics)
    if not cs:
        return None
    named = [c for c in cs if c.cls != UNATTRIBUTED and c.share >= MIN_SHARE][:top]
    parts = [f"{100 * c.share:.0f}% {c.title}" for c in named]
    un = _num(metrics, f"tasks_{UNATTRIBUTED}_share") or 0.0
    return ", ".join(parts or ["no class above 3%"]) + f"; {100 * un:.0f}% unattributed"


def paths(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Kernel paths by share of all sampled CPU time, largest first, idle left out
    (``profile_<path>_share``, from the ``profile`` probe)."""
    out = []
    for p in PATHS:
        share = _num(metrics, f"profile_{p}_share")
        if share is not None and p != "idle":
            out.append({"path": p, "label": LABELS[p], "share": share})
    return sorted(out, key=lambda x: -x["share"])


def paths_text(metrics: Mapping[str, Any], top: int = 4) -> str | None:
    """``38% copy to/from user, 21% filesystem …, 17% loop worker (the bed's own cost)``
    (shares of all CPU time sampled), or None without the ``profile`` probe."""
    ps = [p for p in paths(metrics) if p["share"] >= MIN_SHARE][:top]
    if not ps:
        return None
    return ", ".join(f"{100 * p['share']:.0f}% {p['label']}" for p in ps)


def top_paths(ranked: Sequence[KernelPathShare], top: int = 6) -> list[PathShare]:
    """The heaviest kernel paths of a profile (``Attribution.ranked``) with their heaviest
    functions."""
    return [
        PathShare(
            p.path,
            p.label,
            p.samples,
            p.share,
            tuple(FunctionShare(f.name, f.share) for f in p.top_functions),
        )
        for p in ranked[:top]
    ]


def lock_callers(att: Attribution, top: int = 3) -> str | None:
    """``path_openat -> rwsem_down_write_slowpath 12%, …`` from the profile's lock path."""
    lock = next((p for p in att.paths if p.path == "lock"), None)
    if lock is None or not lock.samples:
        return None
    return ", ".join(f"{f.name} {100 * f.share:.0f}%" for f in lock.top_functions[:top])


def top_functions(ranked: Sequence[KernelPathShare], top: int = 2) -> str | None:
    """``copy_folio_from_iter_atomic 41%, _copy_to_iter 9%``: the heaviest functions of the
    heaviest path (``Attribution.ranked``: idle left out)."""
    if not ranked:
        return None
    fs = [f for f in ranked[0].top_functions[:top] if f.share >= 0.01]
    return ", ".join(f"{f.name} {100 * f.share:.0f}%" for f in fs) or None


def _num(v: Values, key: str) -> float | None:
    x = v.get(key)
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _div(a: float | None, b: float | None, scale: float = 1.0) -> float | None:
    return a / b * scale if a is not None and b else None


def _ratio(num: str, den: str, scale: float = 1.0) -> Derive:
    return lambda v: _div(_num(v, num), _num(v, den), scale)


def _scaled(key: str, scale: float) -> Derive:
    return lambda v: _div(_num(v, key), 1.0, scale)


def _rate(key: str) -> Derive:
    return lambda v: None if _num(v, key) is None else fmt_rate(_num(v, key) or 0.0)


def _part(fn: Callable[[Values], tuple[Any, ...] | None], i: int) -> Derive:
    """Item ``i`` of what ``fn`` returns, or None when it returns None."""
    return lambda v: None if (x := fn(v)) is None else x[i]


def _writer_time_s(v: Values) -> float | None:
    """Writers' run time: jobs × wall; without ``jobs``, the tasks that were throttled."""
    wall = _num(v, "wall_s")
    jobs = _num(v, "jobs") or _num(v, "throttle_tasks")
    return wall * jobs if wall and jobs else None


def _cpu_time_s(v: Values) -> float | None:
    """The run's CPU time available: wall × CPUs."""
    wall, cpus = _num(v, "wall_s"), _num(v, "cpus")
    return wall * cpus if wall and cpus else None


def _free_pct(v: Values) -> float | None:
    idle, iowait = _num(v, "cpu_idle_share"), _num(v, "cpu_iowait_share")
    return None if idle is None else 100.0 * (idle + (iowait or 0.0))


def _lock_top(v: Values) -> str:
    """The top three callers from ``lock_rows`` (when given), else the top wait alone."""
    rows = v.get("lock_rows")
    if isinstance(rows, Sequence) and rows:
        cpu_s = _cpu_time_s(v)
        parts = []
        for r in sorted(rows, key=lambda r: -float(r["total_wait_s"]))[:3]:
            wait = float(r["total_wait_s"])
            share = f", {100 * wait / cpu_s:.0f}%" if cpu_s else ""
            parts.append(f"{r['caller']} ({r['type']}, {wait:.2f} s{share}, {int(r['contended'])} contended)")
        return "top callers " + ", ".join(parts)
    top = _num(v, "lock_top_wait_s")
    return f"the top caller waited {top:.2f} s" if top is not None else "no caller table"


def _device_bps(v: Values) -> float | None:
    """What the device moved per second during the point (diskstats, writeback included),
    else the workload's own throughput."""
    return _num(v, "device_bytes_per_s") or _num(v, "throughput_bytes_per_s")


def _where_cpu(v: Values) -> str | None:
    parts = []
    text = consumers_text(v)
    if text is not None:
        parts.append(f"Where the CPU time went: {text}.")
    kernel = paths_text(v)
    if kernel is not None:
        parts.append(f"Kernel paths (profile): {kernel}.")
    return " ".join(parts) or None


#: What it means when most CPU time is one path (``analysis.paths``), for the sentence.
PATH_MEANING = {
    "copy": "the memory-copy wall: buffered I/O moves every byte through the CPU",
    "page_cache": "page-cache management (folio allocation, LRU) costs more than the copy",
    "filesystem": "the filesystem's own code path is the cost",
    "writeback": "writeback of dirty pages",
    "block": "the block layer's submission and completion",
    "loop": "the bed's loop worker copying to or from its backing file, a cost a real device would not have",
    "reclaim": "memory reclaim and compaction",
    "lock": "lock slow paths: contention",
    "other": "kernel code outside the known paths (see the profile's top functions)",
    "user": "user space: the workload's own code (or a neighbour's)",
}


def _top_path(v: Values) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for p in PATH_MEANING:
        s = _num(v, f"profile_{p}_share")
        if s is not None and (best is None or s > best[1]):
            best = (p, s)
    return best


#: How the kernel-path sentence says what the CPU was doing in a path.
_DOING = {
    "copy": "copies data to/from user space",
    "user": "runs in user space",
    "lock": "spins or sleeps in lock slow paths",
}


def _top_field(v: Values, field: str) -> Any:
    """One field of the heaviest path of the profile: share, pct, label or meaning."""
    top = _top_path(v)
    if top is None:
        return None
    path, share = top
    return {
        "share": share,
        "pct": 100.0 * share,
        "label": _DOING.get(path, f"is in the {LABELS.get(path, path)}"),
        "meaning": PATH_MEANING[path],
    }[field]


def _busiest(v: Values) -> tuple[str, float, float] | None:
    """The busiest thread of the workload (``tasks_top``): its name, CPU-seconds, and its share
    of all the workload threads' CPU time. Pool kworkers are left out: they run any queued
    work, and their name says only what they ran last."""
    rows = v.get("tasks_top")
    if not isinstance(rows, Sequence):
        return None
    mine = [
        r
        for r in rows
        if isinstance(r, Mapping)
        and r.get("class") in ("workload", "io_uring", "loop", "flusher", "fs")
        and not str(r.get("comm", "")).startswith("kworker/")
    ]
    if not mine:
        return None
    top = max(mine, key=lambda r: float(r["cpu_s"]))
    total = sum(float(r["cpu_s"]) for r in mine)
    if total <= 0:
        return None  # a point too short for any workload thread to be timed
    return f"{top['comm']} ({top['class']})", float(top["cpu_s"]), float(top["cpu_s"]) / total


def _window(v: Values) -> tuple[float, str] | None:
    """The time the workload did its I/O: a buffered write's copy phase, else fio's runtime,
    else the tasks probe's whole window."""
    for key, what in (
        ("copy_s", "the copy phase"),
        ("wall_s", "fio's runtime"),
        ("tasks_window_s", "the point"),
    ):
        x = _num(v, key)
        if x:
            return x, what
    return None


def _busiest_share(v: Values) -> float | None:
    """The busiest workload thread's CPU time over the time the workload did its I/O."""
    b, w = _busiest(v), _window(v)
    return None if b is None or w is None else min(1.0, b[1] / w[0])


def _neighbours_top(v: Values) -> str:
    rows = v.get("tasks_top")
    if isinstance(rows, Sequence):
        names = [
            f"{r['comm']} {float(r['cpu_s']):.2f} s"
            for r in rows
            if isinstance(r, Mapping) and r.get("class") == "neighbours"
        ][:3]
        if names:
            return "top: " + ", ".join(names)
    return f"{_num(v, 'tasks_neighbours_cpu_s') or 0.0:.2f} CPU-seconds"


#: Quantities computed from metrics and context, usable in conditions and sentences. They are
#: computed in this order, so a later one may read an earlier one (``writeback_rate``).
DERIVED: dict[str, Derive] = {
    "device_bytes_per_s": _device_bps,
    "device_ratio": _ratio("device_bytes_per_s", "direct_ceiling_bytes_per_s"),
    "device_pct": _ratio("device_bytes_per_s", "direct_ceiling_bytes_per_s", 100.0),
    "device_rate": _rate("device_bytes_per_s"),
    "where_cpu": _where_cpu,
    "profile_lock_pct": _scaled("profile_lock_share", 100.0),
    "cpu_sys_max_pct": _scaled("cpu_sys_share_max", 100.0),
    "busiest_thread_share": _busiest_share,
    "busiest_thread_pct": _scaled("busiest_thread_share", 100.0),
    "busy_window_s": _part(_window, 0),
    "busy_window": _part(_window, 1),
    "busiest_thread": _part(_busiest, 0),
    "busiest_thread_s": _part(_busiest, 1),
    "busiest_thread_alone": _part(_busiest, 2),
    "profile_top_share": lambda v: _top_field(v, "share"),
    "profile_top_pct": lambda v: _top_field(v, "pct"),
    "profile_top_label": lambda v: _top_field(v, "label"),
    "profile_top_meaning": lambda v: _top_field(v, "meaning"),
    "writeback_pct": _scaled("writeback_share", 100.0),
    "write_size": lambda v: (
        None if _num(v, "write_bytes") is None else fmt_bytes(_num(v, "write_bytes") or 0.0)
    ),
    "copy_rate": _rate("copy_bytes_per_s"),
    # an upper bound: some of the data may have been written back while the copy ran
    "writeback_bytes_per_s": _ratio("write_bytes", "writeback_s"),
    "writeback_rate": _rate("writeback_bytes_per_s"),
    "writeback_ceiling_ratio": _ratio("writeback_bytes_per_s", "direct_ceiling_bytes_per_s"),
    "writeback_ceiling_pct": _ratio("writeback_bytes_per_s", "direct_ceiling_bytes_per_s", 100.0),
    "phase_resolution_ms": _scaled("phase_resolution_s", 1000.0),
    "neighbours_pct": _scaled("tasks_neighbours_share", 100.0),
    "neighbours_top": _neighbours_top,
    "writer_time_s": _writer_time_s,
    "throttled_share": lambda v: _div(_num(v, "throttle_pause_s"), _writer_time_s(v)),
    "throttled_pct": lambda v: _div(_num(v, "throttle_pause_s"), _writer_time_s(v), 100.0),
    "throttle_limit_mib": _scaled("throttle_limit_bytes", 1 / (1 << 20)),
    "cpu_kernel_pct": _scaled("cpu_kernel_share", 100.0),
    "kernel_cpus": lambda v: (
        None if _num(v, "cpus") is None else _div(_num(v, "cpu_kernel_share"), 1.0, _num(v, "cpus") or 0)
    ),
    "cpu_free_share": lambda v: _div(_free_pct(v), 100.0),
    "cpu_free_pct": _free_pct,
    "cpu_busy_pct": lambda v: None if _free_pct(v) is None else 100.0 - (_free_pct(v) or 0.0),
    "cpu_user_pct": _scaled("cpu_user_share", 100.0),
    "disk_util_pct": _scaled("disk_util", 100.0),
    "memcopy_ratio": _ratio("throughput_bytes_per_s", "memcopy_bytes_per_s"),
    "memcopy_pct": _ratio("throughput_bytes_per_s", "memcopy_bytes_per_s", 100.0),
    "throughput": _rate("throughput_bytes_per_s"),
    "direct_ceiling": _rate("direct_ceiling_bytes_per_s"),
    "memcopy": _rate("memcopy_bytes_per_s"),
    "cpu_time_s": _cpu_time_s,
    "lock_wait_share": lambda v: _div(_num(v, "lock_wait_total_s"), _cpu_time_s(v)),
    "lock_wait_pct": lambda v: _div(_num(v, "lock_wait_total_s"), _cpu_time_s(v), 100.0),
    "lock_top": _lock_top,
}


def values(
    metrics: Mapping[str, float],
    context: Mapping[str, float],
    lock_rows: Sequence[Mapping[str, Any]] = (),
    tasks_top: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Metrics, context and every derived quantity that can be computed from them."""
    out: dict[str, Any] = {**metrics, **context}
    if lock_rows:
        out["lock_rows"] = list(lock_rows)
    if tasks_top:
        out["tasks_top"] = list(tasks_top)
    for name, fn in DERIVED.items():
        if name not in out:
            x = fn(out)
            if x is not None:
                out[name] = x
    return out
