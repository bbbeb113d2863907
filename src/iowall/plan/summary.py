"""A plan run's Report: the table of medians over repeats (one column per axis, then
bandwidth, IOPS and p99 latency per direction), run ids, notes and the Why section."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.explain.run import explain_points
from ..analysis.fiogroups import fio_groups
from ..measure.repeat import replay, to_json
from ..model import Run
from ..results import Cell, Report, Section, Table, Value
from ..vocab.units import fmt_bytes, id_ranges
from .execute import PlanResult
from .model import PlanPoint

# ------------------------------------------------------------------------------------------
# Summary table (pure)


@dataclass(frozen=True)
class Row:
    """One point's runs and the median of each metric over its ok runs."""

    pp: PlanPoint
    runs: tuple[Run, ...]
    medians: Mapping[str, float]
    units: Mapping[str, str]
    rel_range: Mapping[str, float]

    @property
    def ok(self) -> int:
        return sum(r.status == "ok" for r in self.runs)


def summarise(points: Sequence[PlanPoint], runs: Sequence[Run]) -> list[Row]:
    """Per point (in plan order): its runs, medians and relative range over the ok runs."""
    rows = []
    for pp in points:
        mine = tuple(r for r in runs if r.point.key() == pp.point.key())
        ok = [r for r in mine if r.status == "ok"]
        vals: dict[str, list[float]] = {}
        units: dict[str, str] = {}
        for r in ok:
            for m in r.metrics:
                vals.setdefault(m.name, []).append(m.value)
                units[m.name] = m.unit
        med = {k: statistics.median(v) for k, v in vals.items()}
        rng = {k: (max(v) - min(v)) / med[k] if med[k] else 0.0 for k, v in vals.items() if len(v) > 1}
        rows.append(Row(pp, mine, med, units, rng))
    return rows


def _lines(r: Row) -> list[tuple[str, str, Mapping[str, float], Mapping[str, float]]]:
    """A point's table lines: ``(group title, metric prefix, medians, ranges)``, one per fio
    group of a multi-group job file (its own figures), else one for the point."""
    groups = fio_groups(r.runs[0], r.medians) if r.runs else []
    if not groups:
        return [("", "", r.medians, r.rel_range)]
    return [(g.title, f"g{g.groupid}.", r.medians, r.rel_range) for g in groups]


def table(rows: Sequence[Row], axes: Sequence[str]) -> tuple[list[str], list[list[Cell]]]:
    """Headers and cells: one column per axis (and the fio group, when a job file has
    several: one line per group with fio's own figures for it, never summed across groups),
    then per direction with data the median bandwidth (± half the relative range over
    repeats), IOPS and p99 completion latency; ok runs. Numbers carry their units: the
    renderer formats them."""
    lines = [(r, ln) for r in rows for ln in _lines(r)]
    dirs = [
        d
        for d in ("read", "write", "trim")
        if any(f"{pre}{d}_bw_bytes_per_s" in med for _, (_, pre, med, _) in lines)
    ]
    spread = any(r.rel_range for r in rows)
    grouped = any(title for _, (title, _, _, _) in lines)
    headers = (list(axes) or ["point"]) + (["group"] if grouped else [])
    for d in dirs:
        headers += [f"{d} bw"] + (["±"] if spread else []) + [f"{d} IOPS", f"{d} p99"]
    headers.append("ok")
    cells = []
    for r, (title, pre, med, rng) in lines:
        line: list[Cell] = [str(r.pp.values.get(a, "")) for a in axes] or [r.pp.title()]
        line += [title] if grouped else []
        for d in dirs:
            line.append(Value(med.get(f"{pre}{d}_bw_bytes_per_s"), "B/s"))
            if spread:
                rr = rng.get(f"{pre}{d}_bw_bytes_per_s")
                line.append(Value(rr / 2, "percent") if rr is not None else "")
            line.append(Value(med.get(f"{pre}{d}_iops"), "IO/s"))
            line.append(Value(med.get(f"{pre}{d}_clat_p99_s"), "s"))
        line.append(f"{r.ok}/{len(r.runs)}")
        cells.append(line)
    return headers, cells


def table_json(res: PlanResult) -> list[dict[str, Any]]:
    """The table as JSON: per point its axis values, params, run ids and medians."""
    out = []
    for r in summarise(res.points, res.runs):
        out.append(
            {
                "point": dict(r.pp.values),
                "params": dict(r.pp.point.params),
                "run_ids": [x.id for x in r.runs],
                "ok": r.ok,
                "runs": len(r.runs),
                "groups": {str(g.groupid): g.name for g in fio_groups(r.runs[0], r.medians)}
                if r.runs
                else {},
                "median": {k: {"value": v, "unit": r.units.get(k, "")} for k, v in sorted(r.medians.items())},
            }
        )
    return out


def plan_report(res: PlanResult) -> Report:
    """The plan's Report: its table (medians over repeats), run ids, notes and Why section."""
    rows = summarise(res.points, res.runs)
    headers, cells = table(rows, [a.name for a in res.plan.axes])
    repeat = res.repeat_lines()
    left = max(1, len(res.plan.axes)) + ("group" in headers)
    bed = res.beds[0] if res.beds else {}
    bed_desc = " ".join(
        str(x)
        for x in (
            bed.get("kind", res.plan.bed.kind),
            bed.get("fs", ""),
            fmt_bytes(bed.get("image_bytes", 0)) if bed.get("image_bytes") else "",
        )
        if x
    )
    name = res.plan.recipe + (
        f"  label {res.plan.label}" if res.plan.recipe != f"plan:{res.plan.label}" else ""
    )
    head = (
        f"{res.plan.workload.describe()}  on {bed_desc}  kernel {res.kernel}",
        f"{repeat[0]}, interleaved; medians over the ok runs"
        + ("; ± is half the range over repeats" if "±" in headers else ""),
        *repeat[1:],
    )
    ids = [r.id for r in res.runs if r.id is not None]
    tail = [f"runs {id_ranges(ids)}  (iowall show RUN)  batch {res.batch}"]
    tail += [f"run {r.id} {r.status}: {r.point.describe()}: {r.error}" for r in res.runs if r.status != "ok"][
        :5
    ]
    d = res.decider or replay(res.runs, res.plan.repeats)
    data = {
        "recipe": res.plan.recipe,
        "plan": res.plan.describe(),
        "table": table_json(res),
        "beds": list(res.beds),
        "kernel": res.kernel,
        "repeat": to_json(res.plan.repeats, d, {pp.point.key(): pp.title() for pp in res.points}),
    }
    return Report(
        kind="plan",
        name=res.plan.recipe,
        title=f"{name}  ({res.plan.source})" if res.plan.source else name,
        head=head,
        sections=(Section(table=Table.of(headers, cells, left=left)),),
        tail=tuple(tail),
        notes=tuple(res.notes),
        why=tuple(e.to_json() for e in explain_points(res.runs)),
        label=res.plan.label,
        batch=res.batch,
        run_ids=tuple(ids),
        data=data,
    )
