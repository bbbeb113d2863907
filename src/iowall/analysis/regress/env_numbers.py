"""Pure: numeric facts of a run's environment that differ between compare sides only beyond a
margin, so they cannot be compared as text: the dirty threshold the kernel applied and the
load average when each run started."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from ...model import Run
from ..explain.dirty import SAME, Span

#: Load averages further apart than this (1-minute, runnable tasks) differ.
LOAD_APART = 0.5
#: A side is busy when a run started with the load above this share of its CPUs.
BUSY_SHARE = 0.5

THRESHOLD_FIELD = "dirty threshold (nr_dirty_threshold)"
LOAD_FIELD = "load average at start (1 min)"


def threshold_of(run: Run) -> float | None:
    """The dirty threshold in force during the run: the vmstat probe's mean over its window,
    else /proc/vmstat at its start (env); None when neither was recorded."""
    v = run.metric("vm_dirty_threshold_bytes")
    if v is None:
        v = run.env.get("dirty_threshold_bytes")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def load_of(run: Run) -> float | None:
    """The 1-minute load average when the run started (env ``loadavg_1m``)."""
    v = run.env.get("loadavg_1m")
    return float(v) if isinstance(v, (int, float)) else None


def _cpus(runs: Sequence[Run]) -> int:
    for r in runs:
        n = (r.env.get("host") or {}).get("cpu_count")
        if isinstance(n, int) and n > 0:
            return n
    return 0


def threshold_difference(sides: Sequence[Sequence[Run]]) -> tuple[str, ...] | None:
    """Each side's threshold range when the sides' medians lie more than SAME apart."""
    vals = [[x for r in runs if (x := threshold_of(r)) is not None] for runs in sides]
    if any(not v for v in vals):
        return None
    meds = [median(v) for v in vals]
    if max(meds) - min(meds) <= SAME * min(meds):
        return None
    return tuple(Span(min(v), max(v)).text() for v in vals)


def load_difference(sides: Sequence[Sequence[Run]]) -> tuple[str, ...] | None:
    """Each side's load range when the medians lie more than LOAD_APART apart, or when one side
    was busy (a run started with load > BUSY_SHARE × CPUs) and another was not."""
    vals = [[x for r in runs if (x := load_of(r)) is not None] for runs in sides]
    if any(not v for v in vals):
        return None
    cpus = [_cpus(runs) for runs in sides]
    busy = [bool(n) and max(v) > BUSY_SHARE * n for v, n in zip(vals, cpus, strict=True)]
    meds = [median(v) for v in vals]
    if max(meds) - min(meds) <= LOAD_APART and len(set(busy)) == 1:
        return None
    out = []
    for v, n, b in zip(vals, cpus, busy, strict=True):
        lo, hi = f"{min(v):.2f}", f"{max(v):.2f}"
        text = lo if lo == hi else f"{lo}–{hi}"
        out.append(f"{text} (busy: {n} CPUs)" if b else text)
    return tuple(out)


def numeric_differences(sides: Sequence[Sequence[Run]]) -> list[tuple[str, tuple[str, ...]]]:
    """``(field, one text per side)`` for the dirty threshold and the load average, when they
    differ beyond their margins."""
    out = []
    for name, fn in ((THRESHOLD_FIELD, threshold_difference), (LOAD_FIELD, load_difference)):
        d = fn(sides)
        if d is not None:
            out.append((name, d))
    return out
