"""Pure: numeric facts of a run's environment that differ between compare sides only beyond a
margin, so they cannot be compared as text: the dirty threshold the kernel applied, the load
average when each run started, and what else took the CPUs while it ran: other processes
(the ``tasks`` probe's neighbours) and the hypervisor (steal, the ``cpu`` probe)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

from ...model import Run
from ..explain.dirty import SAME, Span
from ..explain.verdict import STEAL

#: Load averages further apart than this (1-minute, runnable tasks) differ.
LOAD_APART = 0.5
#: A side is busy when a run started with the load above this share of its CPUs.
BUSY_SHARE = 0.5

#: Other processes' CPU during the run further apart than this (CPUs' worth) differ.
NEIGHBOURS_APART = 0.25
#: Steal (the share of all CPU time the hypervisor gave to others) further apart than this.
STEAL_APART = 0.02

THRESHOLD_FIELD = "dirty threshold (nr_dirty_threshold)"
LOAD_FIELD = "load average at start (1 min)"
NEIGHBOURS_FIELD = "other processes' CPU during the run"
STEAL_FIELD = "CPU steal during the run"
#: The probe metrics these facts read, for loaders that read only some of a run's metrics.
METRICS = frozenset({"vm_dirty_threshold_bytes", "tasks_neighbours_cpu_s", "tasks_window_s", STEAL})


def with_metrics(wanted: Callable[[str], bool] | None) -> Callable[[str], bool] | None:
    """A loader's metric test that also reads ``METRICS`` (None: every metric already)."""
    return None if wanted is None else (lambda n: n in METRICS or wanted(n))


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


def neighbours_of(run: Run) -> float | None:
    """Other user processes' CPU while the run's point ran, in CPUs (``tasks`` probe)."""
    cpu, window = run.metric("tasks_neighbours_cpu_s"), run.metric("tasks_window_s")
    return cpu / window if cpu is not None and window else None


def steal_of(run: Run) -> float | None:
    """The share of all CPU time the hypervisor gave to other guests during the run."""
    return run.metric(STEAL)


@dataclass(frozen=True)
class Taker:
    """Something else that took the CPUs while a run ran: its field, how a run's figure is
    read, the margin beyond which sides differ, how a figure's number is written and its unit,
    and the phrase ``busier`` says of the busier side's runs."""

    field: str
    of: Callable[[Run], float | None]
    apart: float
    number: Callable[[float], str]
    unit: str
    phrase: str

    def text(self, x: float) -> str:
        """A figure with its unit."""
        return self.number(x) + self.unit


#: Other processes (the ``tasks`` probe's neighbours) and the hypervisor (the ``cpu`` probe's steal).
TAKERS = (
    Taker(
        NEIGHBOURS_FIELD,
        neighbours_of,
        NEIGHBOURS_APART,
        lambda x: f"{x:.2f}",
        " CPUs",
        "other processes took {} during the {} runs",
    ),
    Taker(
        STEAL_FIELD,
        steal_of,
        STEAL_APART,
        lambda x: f"{100 * x:.1f}",
        "%",
        "the host took {} of the CPU time (steal) during the {} runs",
    ),
)


def _apart(sides: Sequence[Sequence[Run]], t: Taker) -> tuple[str, ...] | None:
    """Each side's range of ``t``'s figure (its least and most) when the medians lie further
    apart than its margin."""
    vals = [[x for r in runs if (x := t.of(r)) is not None] for runs in sides]
    if any(not v for v in vals):
        return None
    meds = [median(v) for v in vals]
    if max(meds) - min(meds) <= t.apart:
        return None
    spans = [(t.number(min(v)), t.number(max(v))) for v in vals]
    return tuple(f"{lo}{t.unit}" if lo == hi else f"{lo}–{hi}{t.unit}" for lo, hi in spans)


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
    """``(field, one text per side)`` for the dirty threshold, the load average at start, the
    other processes' CPU and the steal during the run, when they differ beyond their margins."""
    out = []
    for name, fn in ((THRESHOLD_FIELD, threshold_difference), (LOAD_FIELD, load_difference)):
        d = fn(sides)
        if d is not None:
            out.append((name, d))
    for t in TAKERS:
        if (d := _apart(sides, t)) is not None:
            out.append((t.field, d))
    return out


def busier(
    base: Sequence[Run], new: Sequence[Run], names: tuple[str, str] = ("new", "base")
) -> tuple[str, ...]:
    """What took more of the CPUs while the ``new`` runs ran than while the ``base`` ran,
    beyond the margins, each as a phrase (``TAKERS``: other processes, the hypervisor), the
    sides called ``names`` (busier, quieter). Neither bounds how much of a fall it made: steal
    of 10-26% cut a read rate here by 44% (docs/history.md), latency chained on descheduled
    vCPUs."""
    out = []
    for t in TAKERS:
        vb = [x for r in base if (x := t.of(r)) is not None]
        vn = [x for r in new if (x := t.of(r)) is not None]
        if vb and vn and median(vn) - median(vb) > t.apart:
            said = t.phrase.format(t.text(median(vn)), names[0])
            out.append(f"{said} ({t.text(median(vb))} during the {names[1]})")
    return tuple(out)
