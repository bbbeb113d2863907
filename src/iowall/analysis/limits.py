"""Pure summary of a `limits` batch: ceilings, buffered vs direct per job count, and the plain
sentences that say where the wall is. Medians over repeats; spread is the half-range
((max - min) / 2 / median), which with 3 to 5 repeats says more than a standard deviation."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import MEASURED_STATUSES, Run
from ..units import fmt_rate

#: A step to more jobs that adds less than this counts as no longer scaling.
SCALING_GAIN = 0.10
#: Cells whose half-range exceeds this are flagged as noisy.
NOISY = 0.10


@dataclass(frozen=True)
class Cell:
    """Median of repeated measurements with their half-range and the runs behind them."""

    median: float
    spread: float
    n: int
    run_ids: tuple[int, ...]

    @staticmethod
    def of(values: Sequence[float], run_ids: Sequence[int]) -> Cell:
        med = statistics.median(values)
        spread = (max(values) - min(values)) / 2 / med if med else 0.0
        return Cell(med, spread, len(values), tuple(run_ids))


@dataclass(frozen=True)
class Row:
    """One job count of one direction."""

    direction: str
    jobs: int
    buffered: Cell | None
    direct: Cell | None
    memcopy: Cell | None
    memcopy_threads: int

    @property
    def buffered_over_direct(self) -> float | None:
        if self.buffered and self.direct and self.direct.median:
            return self.buffered.median / self.direct.median
        return None

    @property
    def buffered_over_memcopy(self) -> float | None:
        if self.buffered and self.memcopy and self.memcopy.median:
            return self.buffered.median / self.memcopy.median
        return None


@dataclass(frozen=True)
class Ceiling:
    """The best median of a sweep and where it was reached."""

    cell: Cell
    at: int


@dataclass(frozen=True)
class LimitsSummary:
    """Everything the limits report shows, computed from stored runs only."""

    memcopy: dict[int, Cell]
    direct_ceiling: dict[str, Ceiling]
    rows: tuple[Row, ...]
    sentences: tuple[str, ...]
    run_ids: tuple[int, ...]
    statuses: dict[str, int] = field(default_factory=dict)


def _bw_metric(direction: str) -> str:
    return f"{direction}_bw_bytes_per_s"


def summarise(runs: Sequence[Run], cpus: int) -> LimitsSummary:
    """Group runs by point, take medians, derive ratios and sentences."""
    statuses: dict[str, int] = {}
    for r in runs:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    good = [r for r in runs if r.status in MEASURED_STATUSES]
    groups: dict[tuple[str, ...], list[tuple[float, int]]] = {}
    for r in good:
        p = r.point.params
        key: tuple[str, ...]
        if p.get("kind") == "memcopy":
            v = r.metric("memcopy_bytes_per_s")
            key = ("memcopy", str(p["threads"]))
        else:
            v = r.metric(_bw_metric(str(p["rw"])))
            key = (str(p["rw"]), "direct" if p["direct"] else "buffered", str(p["jobs"]))
        if v is not None and r.id is not None:
            groups.setdefault(key, []).append((v, r.id))

    def cell(key: tuple[str, ...]) -> Cell | None:
        vals = groups.get(key)
        return Cell.of([v for v, _ in vals], [i for _, i in vals]) if vals else None

    memcopy = {int(k[1]): c for k in groups if k[0] == "memcopy" and (c := cell(k))}
    rows: list[Row] = []
    ceilings: dict[str, Ceiling] = {}
    sentences: list[str] = []
    for direction in ("write", "read"):
        jobs = sorted({int(k[2]) for k in groups if k[0] == direction})
        drows = []
        for j in jobs:
            t = min(j, cpus)
            drows.append(Row(direction, j, cell((direction, "buffered", str(j))),
                             cell((direction, "direct", str(j))), memcopy.get(t), t))
        rows += drows
        directs = [(r.direct, r.jobs) for r in drows if r.direct]
        if directs:
            best, at = max(directs, key=lambda x: x[0].median)
            ceilings[direction] = Ceiling(best, at)
        sentences += _sentences(direction, drows, ceilings.get(direction), memcopy)
    noisy = sorted(((c.spread, f"{r.direction} {kind} {_jobs(r.jobs)}")
                    for r in rows for kind, c in (("buffered", r.buffered), ("direct", r.direct))
                    if c and c.spread > NOISY), reverse=True)
    if noisy:
        cells = sum(1 for r in rows for c in (r.buffered, r.direct) if c)
        sentences.append(f"{len(noisy)} of {cells} cells spread more than ±{NOISY:.0%} "
                         f"(worst: {noisy[0][1]}, ±{noisy[0][0]:.0%}): rerun on a quiet "
                         "machine or with a higher --repeat before trusting them.")
    if statuses.get("failed") or statuses.get("interrupted"):
        sentences.append(f"Not every run completed: {statuses.get('failed', 0)} failed, "
                         f"{statuses.get('interrupted', 0)} interrupted; they are left out.")
    return LimitsSummary(memcopy, ceilings, tuple(rows), tuple(sentences),
                         tuple(r.id for r in runs if r.id is not None), statuses)


def _sentences(direction: str, rows: Sequence[Row], ceiling: Ceiling | None,
               memcopy: dict[int, Cell]) -> list[str]:
    """Where buffered I/O of one direction stops scaling and how close it gets to the ceilings."""
    pts = [(r.jobs, r.buffered.median) for r in rows if r.buffered]
    if not pts:
        return []
    name = f"Buffered {direction}"
    out: list[str] = []
    stop = None
    for (j0, v0), (j1, v1) in zip(pts, pts[1:], strict=False):
        if v1 < v0 * (1 + SCALING_GAIN):
            stop = (j0, j1, v1 / v0 - 1)
            break
    peak_j, peak_v = max(pts, key=lambda x: x[1])
    if len(pts) == 1:
        out.append(f"{name} was measured at {_jobs(pts[0][0])} only: no scaling can be judged.")
    elif stop:
        j0, j1, gain = stop
        s = (f"{name} stops scaling at {_jobs(j0)}: going to {j1} jobs changes it by "
             f"{gain:+.0%} ({fmt_rate(dict(pts)[j0])} → {fmt_rate(dict(pts)[j1])}).")
        last_j, last_v = pts[-1]
        if last_j != peak_j and last_v < peak_v * 0.9:
            s += (f" It peaks at {peak_j} jobs ({fmt_rate(peak_v)}) and falls to "
                  f"{last_v / peak_v:.0%} of that at {last_j} jobs.")
        out.append(s)
    else:
        (ja, va), (jb, vb) = pts[-2], pts[-1]
        out.append(f"{name} still gains at every step up to {jb} jobs ({vb / va - 1:+.0%} from "
                   f"{ja}); its wall lies beyond: try larger --jobs.")
    best_row = next(r for r in rows if r.jobs == peak_j)
    parts = []
    if ceiling:
        parts.append(f"{peak_v / ceiling.cell.median:.0%} of the direct-I/O ceiling "
                     f"({fmt_rate(ceiling.cell.median)} at {_jobs(ceiling.at)})")
    mc = memcopy.get(best_row.memcopy_threads)
    if mc:
        parts.append(f"{peak_v / mc.median:.0%} of memory-copy bandwidth at "
                     f"{best_row.memcopy_threads} thread{'s' if best_row.memcopy_threads > 1 else ''}"
                     f" ({fmt_rate(mc.median)})")
    if parts:
        out.append(f"At its best ({_jobs(peak_j)}, {fmt_rate(peak_v)}) {name.lower()} reaches "
                   + " and ".join(parts) + ".")
    return out


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"
