"""The Report of a `limits` run (pure): ceilings, one table per direction (and filesystem block
size), the page cache each mode leaves behind, the two generators side by side, noise, the
wall in sentences; ``data`` holds every number for ``--format json``. Table cells are numbers
with units (``results.Value``): the renderer formats them. What the report says beyond the
summary's numbers (bed, host, notes, Why) comes in a ``LimitsContext``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...analysis.scaling.limits import AGREE, MODES, Cell, LimitsSummary, Row
from ...analysis.scaling.limits_why import PointWhy
from ...results import Report, Section, Table, Value
from ...vocab.units import fmt_bytes, plural
from .options import RECIPE

HEADERS = ("jobs", "buffered", "uncached", "direct", "buf/dir", "unc/dir", "buf/mcpy")
TITLES = {"write": "Sequential write", "read": "Sequential read"}


#: The unit of every bandwidth in the tables.
RATE = "B/s"


def _cell(c: Cell | None, missing: str = "-") -> Value | str:
    if c is None:
        return missing
    return Value(c.median, RATE, spread=c.spread if c.n > 1 else None)


def _ratio(x: float | None) -> Value:
    return Value(x, "ratio")


def _blocks(block: str) -> str:
    return f", {block} fs blocks" if block else ""


def _ceiling_rows(s: LimitsSummary) -> list[list[Value | str]]:
    rows: list[list[Value | str]] = [
        [
            f"memory copy, {plural(t, 'thread')}",
            Value(c.median, RATE),
            "best of rep movsb and memcpy" if i == 0 else "",
        ]
        for i, (t, c) in enumerate(sorted(s.memcopy.items()))
    ]
    rows += [
        [
            f"direct {d}{_blocks(b)} ({plural(c.at, 'job')})",
            Value(c.cell.median, RATE),
            "best direct point" if i == 0 else "",
        ]
        for i, ((b, d), c) in enumerate(s.direct_ceiling.items())
    ]
    return rows or [["not measured", "", ""]]


def _cell_json(c: Cell | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"median": c.median, "spread": c.spread, "n": c.n, "run_ids": list(c.run_ids)}


def _table(rows: list[Row], uncached_missing: str) -> Table:
    return Table.of(
        HEADERS,
        [
            [
                str(r.jobs),
                _cell(r.buffered),
                _cell(r.uncached, uncached_missing),
                _cell(r.direct),
                _ratio(r.buffered_over_direct),
                _ratio(r.uncached_over_direct),
                _ratio(r.buffered_over_memcopy),
            ]
            for r in rows
        ],
        left=0,
    )


def _cache_section(s: LimitsSummary) -> Section | None:
    if not s.cache_left:
        return None
    rows: list[list[Value | str]] = []
    for b in s.blocks:
        for d in ("write", "read"):
            vals = [s.cache_left.get((b, d, m)) for m in MODES]
            if any(v is not None for v in vals):
                rows.append([f"{d}{_blocks(b)}", *(Value(v, "bytes_per_byte") for v in vals)])
    return Section(
        "Page cache left behind per GiB of the point's files (Cached less Shmem, median)",
        Table.of(["", *MODES], rows, left=1),
    )


def _agreement_section(s: LimitsSummary) -> Section | None:
    if not s.agreement:
        return None
    rows = [
        [
            f"{a.direction} {plural(a.jobs, 'job')}" + (f" {a.block}" if a.block else ""),
            Value(a.fio.median, RATE),
            Value(a.fio.low, RATE, upto=a.fio.high),
            _cell(a.engine),
            _ratio(a.ratio),
            "yes" if a.within else "NO",
        ]
        for a in s.agreement
    ]
    return Section(
        "Two generators, one point: fio pvsync2 and iowall-engine, buffered",
        Table.of(["point", "fio", "fio range", "engine", "eng/fio", "agree"], rows, left=1),
        bullets=(
            f"agree: the engine's median within fio's range widened by {AGREE:.0%}, or by the "
            "engine's own half-range when that is larger",
            *(a.why for a in s.agreement if not a.within and a.why),
        ),
    )


def _noise_section(s: LimitsSummary) -> Section | None:
    if not s.noise:
        return None
    return Section(
        "Noise (cells with a wide spread or a disturbed run)",
        bullets=tuple(f"{n.cell}: ±{n.spread:.0%} over {n.n} runs — {n.reason}" for n in s.noise),
    )


@dataclass(frozen=True)
class LimitsContext:
    """What a limits report says besides the summary: where and how it ran."""

    #: the first bed's facts (the title names it) and every bed's, one per block size
    bed: Mapping[str, Any]
    host: Mapping[str, Any]
    kernel: str
    fio_version: str
    batch: str
    beds: Sequence[Mapping[str, Any]] = ()
    label: str = ""
    notes: Sequence[str] = ()
    #: the Why items (``analysis.scaling.limits_why.why_limits``)
    why: Sequence[PointWhy] = ()
    #: shown in the uncached column where uncached I/O was not measured ("n/a")
    uncached_missing: str = "-"
    #: whether the repeats were decided per cell (--repeat auto): "median of up to N"
    auto: bool = False
    #: JSON-only details, left out of the JSON when None
    repeat: Mapping[str, Any] | None = None
    sizing: Mapping[str, Any] | None = None
    uncached: Sequence[str] | None = None


def limits_report(s: LimitsSummary, ctx: LimitsContext) -> Report:
    """The Report of a limits run from its summary and context (bed, host, notes, Why)."""
    bed, host = ctx.bed, ctx.host
    dev = f" on {bed.get('device')}" if bed.get("device") else ""
    img = f", {fmt_bytes(bed['image_bytes'])} image ({bed.get('backing')})" if bed.get("image_bytes") else ""
    n = max((c.n for r in s.rows for c in r.cells.values()), default=0)
    sections = [
        Section("Ceilings", Table.of(["ceiling", "value", "how"], _ceiling_rows(s), left=3, headless=True))
    ]
    missing = ctx.uncached_missing
    for b in s.blocks:
        for d in ("write", "read"):
            rows = [r for r in s.rows if r.direction == d and r.block == b]
            if rows:
                upto = "up to " if ctx.auto else ""
                sections.append(
                    Section(
                        f"{TITLES[d]}, bs 2M, pvsync2{_blocks(b)} (median of {upto}{n}, ± half-range)",
                        _table(rows, missing),
                    )
                )
    sections += [x for x in (_cache_section(s), _agreement_section(s), _noise_section(s)) if x]
    sections.append(Section("Where the wall is", bullets=tuple(s.sentences)))
    ids = s.run_ids
    data: dict[str, Any] = {
        "bed": bed,
        "beds": list(ctx.beds) or [bed],
        "kernel": ctx.kernel,
        "host": host,
        "ceilings": {
            "memcopy_bytes_per_s": {str(t): c.median for t, c in sorted(s.memcopy.items())},
            **{
                f"direct_{d}{'_' + b if b else ''}_bytes_per_s": c.cell.median
                for (b, d), c in s.direct_ceiling.items()
            },
            **{f"direct_{d}{'_' + b if b else ''}_jobs": c.at for (b, d), c in s.direct_ceiling.items()},
        },
        "points": [
            {
                "direction": r.direction,
                "jobs": r.jobs,
                **({"fs_block": r.block} if r.block else {}),
                **{f"{m}_bytes_per_s": (c.median if (c := r.cells.get(m)) else None) for m in MODES},
                "buffered_over_direct": r.buffered_over_direct,
                "uncached_over_direct": r.uncached_over_direct,
                "buffered_over_memcopy": r.buffered_over_memcopy,
                "memcopy_threads": r.memcopy_threads,
                **{m: _cell_json(r.cells.get(m)) for m in MODES},
            }
            for r in s.rows
        ],
        "cache_left_per_byte": [
            {"fs_block": b, "direction": d, "mode": m, "value": v} for (b, d, m), v in s.cache_left.items()
        ],
        "generators": [
            {
                "direction": a.direction,
                "jobs": a.jobs,
                "fs_block": a.block,
                "fio": _cell_json(a.fio),
                "engine": _cell_json(a.engine),
                "engine_over_fio": a.ratio,
                "agree": a.within,
                **({"why": a.why} if a.why else {}),
                **({"cost": [c.to_json() for c in a.costs]} if a.costs else {}),
            }
            for a in s.agreement
        ],
        "noise": [{"cell": x.cell, "spread": x.spread, "n": x.n, "reason": x.reason} for x in s.noise],
        "sentences": list(s.sentences),
        "statuses": s.statuses,
        **{
            k: v
            for k, v in (("repeat", ctx.repeat), ("sizing", ctx.sizing), ("uncached", ctx.uncached))
            if v is not None
        },
    }
    return Report(
        kind="limits",
        name=RECIPE,
        title=f"iowall limits — bed {bed.get('kind')}: {bed.get('fs')}{dev}{img}",
        head=(
            f"kernel {ctx.kernel}, {host['cpu_count']} CPUs ({host['cpu_model']}), "
            f"{fmt_bytes(host['mem_total_bytes'])} RAM, fio {ctx.fio_version}",
        ),
        sections=tuple(sections),
        notes=tuple(ctx.notes),
        notes_title="How it was measured",
        why=tuple(w.to_json() for w in ctx.why),
        tail=(
            f"runs {ids[0]}–{ids[-1]}; 'iowall show RUN' for raw data" if ids else "no runs stored",
            f"batch {ctx.batch} ('iowall report' prints it again; 'iowall scaling' fits the USL)",
        ),
        label=ctx.label,
        batch=ctx.batch,
        run_ids=tuple(ids),
        data=data,
    )
