"""Pure summary of a `limits` batch: ceilings, buffered vs uncached vs direct per job count
(per filesystem block size when several were asked for), the plain sentences that say where
the wall is, and why a cell is noisy. Medians over repeats; spread is the half-range
((max - min) / 2 / median), which with 3 to 5 repeats says more than a standard deviation.
The knee is ``analysis.scaling.usl.knee`` (efficiency against linear below 80%), the rule
``iowall scaling`` applies, so the two never disagree on one batch. ``limits_why.why_limits`` is the
report's Why: each buffered point explained on its median run (``analysis.explain.run``)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ...model import MEASURED_STATUSES, Run
from ...vocab.units import GIB, fmt_bytes, fmt_rate
from ..explain.context import representative
from ..explain.generators import GeneratorCost, disagreement, generator_cost
from .usl import efficiency, knee

#: The efficiency against linear below which a job count is the knee (as `iowall scaling`).
KNEE = 0.8
#: Cells whose half-range exceeds this are flagged as noisy.
NOISY = 0.10
#: A cell's runs lost more than this share of the CPU time to steal: say so.
STEAL = 0.02
#: Neighbour processes took more than this share of the busy CPU time: say so.
NEIGHBOURS = 0.05
#: Two generators agree when the engine's median is within fio's range widened by this: the
#: run-to-run spread of one buffered point measured on a quiet 2-CPU VM (docs/benchmarks.md).
AGREE = 0.10
#: The modes of a data point, in table order: page cache, RWF_DONTCACHE, O_DIRECT.
MODES = ("buffered", "uncached", "direct")
#: The buffered point the engine repeats so that its figure can be held against fio's.
ENGINE_BUFFERED = "engine buffered"


@dataclass(frozen=True)
class Cell:
    """Median of repeated measurements with their half-range and the runs behind them."""

    median: float
    spread: float
    n: int
    run_ids: tuple[int, ...]
    low: float = 0.0
    high: float = 0.0

    @staticmethod
    def of(values: Sequence[float], run_ids: Sequence[int]) -> Cell:
        med = statistics.median(values)
        spread = (max(values) - min(values)) / 2 / med if med else 0.0
        return Cell(med, spread, len(values), tuple(run_ids), min(values), max(values))


@dataclass(frozen=True)
class Row:
    """One job count of one direction (on one filesystem block size)."""

    direction: str
    jobs: int
    cells: Mapping[str, Cell]
    memcopy: Cell | None
    memcopy_threads: int
    block: str = ""

    @property
    def buffered(self) -> Cell | None:
        return self.cells.get("buffered")

    @property
    def uncached(self) -> Cell | None:
        return self.cells.get("uncached")

    @property
    def direct(self) -> Cell | None:
        return self.cells.get("direct")

    def ratio(self, num: str, den: str) -> float | None:
        """Median of mode ``num`` over mode ``den`` (``memcopy`` names the ceiling)."""
        a = self.cells.get(num)
        b = self.memcopy if den == "memcopy" else self.cells.get(den)
        return a.median / b.median if a and b and b.median else None

    @property
    def buffered_over_direct(self) -> float | None:
        return self.ratio("buffered", "direct")

    @property
    def uncached_over_direct(self) -> float | None:
        return self.ratio("uncached", "direct")

    @property
    def buffered_over_memcopy(self) -> float | None:
        return self.ratio("buffered", "memcopy")


@dataclass(frozen=True)
class Ceiling:
    """The best median of a sweep and where it was reached."""

    cell: Cell
    at: int


@dataclass(frozen=True)
class Noise:
    """A cell worth a word: its spread and what is known to have disturbed it."""

    cell: str
    spread: float
    n: int
    reason: str


@dataclass(frozen=True)
class Agreement:
    """The engine's buffered figure held against fio's on the same point."""

    direction: str
    jobs: int
    engine: Cell
    fio: Cell
    block: str = ""
    #: where they disagree: what each side's median run cost (``analysis.explain.generators``) and
    #: the sentence that names the measured cause, or says that the run cannot tell
    costs: tuple[GeneratorCost, GeneratorCost] | None = None
    why: str = ""

    @property
    def ratio(self) -> float:
        return self.engine.median / self.fio.median if self.fio.median else float("nan")

    @property
    def within(self) -> bool:
        """The engine's median lies inside fio's range of repeats, widened by the larger of
        the engine's half-range and AGREE (single runs have no range of their own)."""
        widen = max(self.engine.spread, AGREE)
        lo = min(self.fio.low, self.fio.median) * (1 - widen)
        hi = max(self.fio.high, self.fio.median) * (1 + widen)
        return lo <= self.engine.median <= hi


@dataclass(frozen=True)
class LimitsSummary:
    """Everything the limits report shows, computed from stored runs only."""

    memcopy: dict[int, Cell]
    #: (block, direction) → the best direct cell
    direct_ceiling: dict[tuple[str, str], Ceiling]
    rows: tuple[Row, ...]
    sentences: tuple[str, ...]
    run_ids: tuple[int, ...]
    statuses: dict[str, int] = field(default_factory=dict)
    #: (block, direction, mode) → median Cached growth per byte the points moved
    cache_left: dict[tuple[str, str, str], float] = field(default_factory=dict)
    noise: tuple[Noise, ...] = ()
    agreement: tuple[Agreement, ...] = ()

    @property
    def blocks(self) -> tuple[str, ...]:
        """The filesystem block sizes measured, in the order first seen ("" when not set)."""
        return tuple(dict.fromkeys(r.block for r in self.rows))


def mode_of(params: Mapping[str, object]) -> str:
    """A data point's mode: direct, uncached, buffered, or the engine's buffered double."""
    if params.get("direct"):
        return "direct"
    if params.get("uncached"):
        return "uncached"
    return ENGINE_BUFFERED if params.get("kind") == "stream" else "buffered"


def _bw_metric(direction: str) -> str:
    return f"{direction}_bw_bytes_per_s"


def summarise(runs: Sequence[Run], cpus: int) -> LimitsSummary:
    """Group runs by point, take medians, derive ratios, knees, noise and sentences."""
    statuses: dict[str, int] = {}
    for r in runs:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    good = [r for r in runs if r.status in MEASURED_STATUSES and r.id is not None]
    groups = _groups(good)
    memcopy = {int(k[1]): c for k in groups if k[0] == "memcopy" and (c := _cell(groups, k))}
    rows: list[Row] = []
    ceilings: dict[tuple[str, str], Ceiling] = {}
    sentences: list[str] = []
    agreement: list[Agreement] = []
    blocks = list(dict.fromkeys(k[0] for k in groups if k[0] != "memcopy"))
    for block in blocks:
        for direction in ("write", "read"):
            jobs = sorted({int(k[3]) for k in groups if k[:2] == (block, direction)})
            drows = []
            for j in jobs:
                t = min(j, cpus)
                cells = {m: c for m in MODES if (c := _cell(groups, (block, direction, m, str(j))))}
                drows.append(Row(direction, j, cells, memcopy.get(t), t, block))
                ekey = (block, direction, ENGINE_BUFFERED, str(j))
                eng, fio = _cell(groups, ekey), cells.get("buffered")
                if eng and fio:
                    a = Agreement(direction, j, eng, fio, block)
                    fkey = (block, direction, "buffered", str(j))
                    agreement.append(a if a.within else _explained(a, groups[fkey], groups[ekey]))
            rows += drows
            directs = [(r.direct, r.jobs) for r in drows if r.direct]
            if directs:
                best, at = max(directs, key=lambda x: x[0].median)
                ceilings[(block, direction)] = Ceiling(best, at)
            sentences += _sentences(
                direction, drows, ceilings.get((block, direction)), memcopy, block if len(blocks) > 1 else ""
            )
    cache = _cache_left(groups)
    sentences += _uncached_sentences(rows, cache)
    sentences += _block_sentences(rows)
    noise = _noise(rows, {r.id: r for r in good if r.id is not None})
    sentences += _closing_sentences(noise, rows, statuses)
    return LimitsSummary(
        memcopy,
        ceilings,
        tuple(rows),
        tuple(sentences),
        tuple(r.id for r in runs if r.id is not None),
        statuses,
        cache,
        tuple(noise),
        tuple(agreement),
    )


def _groups(good: Sequence[Run]) -> dict[tuple[str, ...], list[Run]]:
    """Runs by point: ``("memcopy", threads)`` or ``(block, direction, mode, jobs)``; a run that
    did not report its bandwidth is left out."""
    groups: dict[tuple[str, ...], list[Run]] = {}
    for r in good:
        p = r.point.params
        if p.get("kind") == "memcopy":
            key: tuple[str, ...] = ("memcopy", str(p["threads"]))
            v = r.metric("memcopy_bytes_per_s")
        else:
            key = (str(p.get("fs_block", "")), str(p["rw"]), mode_of(p), str(p["jobs"]))
            v = r.metric(_bw_metric(str(p["rw"])))
        if v is not None:
            groups.setdefault(key, []).append(r)
    return groups


def _cell(groups: Mapping[tuple[str, ...], Sequence[Run]], key: tuple[str, ...]) -> Cell | None:
    """One point's bandwidth (median and half-range of its repeats); None when not measured."""
    rs = groups.get(key)
    if not rs:
        return None
    metric = "memcopy_bytes_per_s" if key[0] == "memcopy" else _bw_metric(key[1])
    return Cell.of([r.metric(metric) or 0.0 for r in rs], [r.id or 0 for r in rs])


def _closing_sentences(noise: Sequence[Noise], rows: Sequence[Row], statuses: Mapping[str, int]) -> list[str]:
    """The sentences on the cells spread beyond NOISY (half-range) and on the runs left out."""
    out = []
    noisy = [n for n in noise if n.spread > NOISY]
    if noisy:
        n_cells = sum(len(r.cells) for r in rows)
        worst = max(noisy, key=lambda n: n.spread)
        out.append(
            f"{len(noisy)} of {n_cells} cells spread more than ±{NOISY:.0%} "
            f"(worst: {worst.cell}, ±{worst.spread:.0%}): see 'Noise' for what "
            "disturbed them; rerun on a quiet machine, or with more runs "
            "(--repeat auto:20)."
        )
    if statuses.get("failed") or statuses.get("interrupted"):
        out.append(
            f"Not every run completed: {statuses.get('failed', 0)} failed, "
            f"{statuses.get('interrupted', 0)} interrupted; they are left out."
        )
    return out


def _explained(a: Agreement, fio_runs: Sequence[Run], engine_runs: Sequence[Run]) -> Agreement:
    """The agreement with what each side's median run cost and why they differ."""
    metric = _bw_metric(a.direction)
    fr, er = representative(fio_runs, metric), representative(engine_runs, metric)
    if fr is None or er is None:
        return a
    f, e = generator_cost(fr, a.direction), generator_cost(er, a.direction)
    point = f"{a.direction} {a.jobs} job" + ("" if a.jobs == 1 else "s") + (f" {a.block}" if a.block else "")
    return replace(a, costs=(f, e), why=disagreement(f, e, point, a.direction))


def _cache_left(groups: Mapping[tuple[str, ...], Sequence[Run]]) -> dict[tuple[str, str, str], float]:
    """Per (block, direction, mode): the median over runs of the page cache a point left
    behind (``page_cache_growth_bytes``: Cached less Shmem, read by the task right before
    and right after the workload) per byte of its files: the bytes it moved, or its file set
    when a time-based point passed over its files more than once (a page is cached once)."""
    per: dict[tuple[str, str, str], list[float]] = {}
    for key, rs in groups.items():
        if key[0] == "memcopy" or key[2] not in MODES:
            continue
        for r in rs:
            grew, moved = r.metric("page_cache_growth_bytes"), r.metric(f"{key[1]}_io_bytes")
            files = r.point.params.get("bytes")
            if isinstance(files, int | float) and files > 0 and moved:
                moved = min(moved, float(files))
            if grew is not None and moved:
                per.setdefault((key[0], key[1], key[2]), []).append(grew / moved)
    return {k: statistics.median(v) for k, v in per.items()}


def _noise(rows: Sequence[Row], by_id: Mapping[int, Run]) -> list[Noise]:
    """Every cell measured more than once whose spread is above NOISY or whose runs were
    disturbed (steal, neighbours' CPU from the ``tasks`` probe), with the reason when known."""
    out: list[Noise] = []
    for r in rows:
        for mode, c in r.cells.items():
            if c.n < 2:
                continue
            rs = [by_id[i] for i in c.run_ids if i in by_id]
            steal = _median_metric(rs, "tasks_steal_share")
            neigh = _median_metric(rs, "tasks_neighbours_share")
            reasons = []
            if steal is not None and steal > STEAL:
                reasons.append(f"steal took {steal:.0%} of the CPU time (a noisy host)")
            if neigh is not None and neigh > NEIGHBOURS:
                reasons.append(f"other processes took {neigh:.0%} of the busy CPU time")
            if not reasons and c.spread > NOISY:
                reasons.append("the repeats disagree; no outside cause was recorded")
            if reasons:
                name = f"{r.direction} {mode} {_jobs(r.jobs)}" + (f" ({r.block} blocks)" if r.block else "")
                out.append(Noise(name, c.spread, c.n, "; ".join(reasons)))
    return sorted(out, key=lambda n: -n.spread)


def _median_metric(runs: Sequence[Run], name: str) -> float | None:
    vals = [v for r in runs if (v := r.metric(name)) is not None]
    return statistics.median(vals) if vals else None


def _sentences(
    direction: str, rows: Sequence[Row], ceiling: Ceiling | None, memcopy: dict[int, Cell], block: str
) -> list[str]:
    """Where buffered I/O of one direction stops scaling (the knee, as ``iowall scaling``
    finds it) and how close it gets to the ceilings."""
    pts = [(r.jobs, r.buffered.median) for r in rows if r.buffered]
    if not pts or pts[0][1] <= 0:
        return []
    name = f"Buffered {direction}" + (f" ({block} blocks)" if block else "")
    out: list[str] = []
    ns, xs = [p[0] for p in pts], [p[1] for p in pts]
    eff = dict(zip(ns, efficiency(ns, xs), strict=True))
    at = dict(pts)
    kn = knee(ns, xs, KNEE)
    peak_j, peak_v = max(pts, key=lambda x: x[1])
    if len(pts) == 1:
        out.append(f"{name} was measured at {_jobs(pts[0][0])} only: no scaling can be judged.")
    elif kn is not None:
        s = (
            f"{name} stops scaling at {_jobs(kn)} (the knee): there it runs at "
            f"{eff[kn]:.0%} of linear scaling from {_jobs(ns[0])} "
            f"({fmt_rate(at[ns[0]])} → {fmt_rate(at[kn])}; the knee is the first count "
            f"below {KNEE:.0%}, as in 'iowall scaling')."
        )
        last_j, last_v = pts[-1]
        if last_j != peak_j and last_v < peak_v * 0.9:
            s += (
                f" It peaks at {peak_j} jobs ({fmt_rate(peak_v)}) and falls to "
                f"{last_v / peak_v:.0%} of that at {last_j} jobs."
            )
        out.append(s)
    else:
        out.append(
            f"{name} keeps at least {KNEE:.0%} of linear scaling up to "
            f"{_jobs(ns[-1])} ({eff[ns[-1]]:.0%}); its wall lies beyond: try larger "
            "--jobs."
        )
    best_row = next(r for r in rows if r.jobs == peak_j)
    parts = []
    if ceiling:
        parts.append(
            f"{peak_v / ceiling.cell.median:.0%} of the direct-I/O ceiling "
            f"({fmt_rate(ceiling.cell.median)} at {_jobs(ceiling.at)})"
        )
    mc = memcopy.get(best_row.memcopy_threads)
    if mc:
        parts.append(
            f"{peak_v / mc.median:.0%} of memory-copy bandwidth at "
            f"{best_row.memcopy_threads} thread{'s' if best_row.memcopy_threads > 1 else ''}"
            f" ({fmt_rate(mc.median)})"
        )
    if parts:
        out.append(
            f"At its best ({_jobs(peak_j)}, {fmt_rate(peak_v)}) {name.lower()} reaches "
            + " and ".join(parts)
            + "."
        )
    return out


def _uncached_sentences(rows: Sequence[Row], cache: Mapping[tuple[str, str, str], float]) -> list[str]:
    """What uncached buffered I/O buys over buffered: throughput at the buffered peak's job
    count, and the page cache each leaves behind per GiB of its files."""
    out = []
    for block in dict.fromkeys(r.block for r in rows):
        for direction in ("write", "read"):
            both = [
                r for r in rows if r.block == block and r.direction == direction and r.buffered and r.uncached
            ]
            if not both:
                continue
            best = max(both, key=lambda r: r.buffered.median if r.buffered else 0.0)
            ratio = best.ratio("uncached", "buffered")
            assert ratio is not None
            where = f" ({block} blocks)" if block else ""
            s = (
                f"Uncached {direction}{where} at {_jobs(best.jobs)} runs at "
                f"{fmt_rate(best.uncached.median if best.uncached else 0.0)}, "
                f"{ratio:.2f}x buffered"
            )
            if best.direct:
                s += f" and {best.ratio('uncached', 'direct'):.0%} of direct"
            cb, cu = cache.get((block, direction, "buffered")), cache.get((block, direction, "uncached"))
            if cb is not None and cu is not None:
                s += (
                    f"; it leaves {fmt_bytes(max(cu, 0.0) * GIB)} of page cache per GiB "
                    f"of its files, buffered {fmt_bytes(max(cb, 0.0) * GIB)}"
                    + (
                        ""
                        if direction == "write"
                        else " (a read that passes over its files again ends partway through a "
                        "pass: buffered keeps that pass's pages)"
                    )
                )
            out.append(s + ".")
    return out


def _block_sentences(rows: Sequence[Row]) -> list[str]:
    """With several filesystem block sizes: how the best buffered figure of each direction
    moves from the first block size to each larger one."""
    blocks = list(dict.fromkeys(r.block for r in rows))
    if len(blocks) < 2:
        return []
    out = []
    for direction in ("write", "read"):
        best = {
            b: max(
                (r.buffered.median for r in rows if r.block == b and r.direction == direction and r.buffered),
                default=0.0,
            )
            for b in blocks
        }
        base = best[blocks[0]]
        if not base:
            continue
        parts = [f"{b} {fmt_rate(best[b])} ({best[b] / base - 1:+.0%})" for b in blocks[1:] if best[b]]
        if parts:
            out.append(
                f"Best buffered {direction} with {blocks[0]} blocks: {fmt_rate(base)}; "
                + ", ".join(parts)
                + "."
            )
    return out


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"
