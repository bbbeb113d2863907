"""The seed recipes' tables and the Report a seed recipe returns: its table, notes, run
statuses, the Why section, and ``compare`` of every label against the first when other labels
share the points.

A recipe builds a ``LabelTable`` (the text cells that name each row, and per value column one
number with its unit, a ``Value``, per stored label, earlier labels first: the renderer alone
formats them); ``recipe_report`` lays it out: one row per point with one label, one row per
point and label under a ``Label`` column with several, so that a table is as wide with five
labels as with two. Where the labels' names would still make the text wider than ``WIDTH``,
the text shows them as A, B, … with a legend under the table (``Table.fit_width``; Markdown and
the JSON keep the names)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.explain.run import explain_points
from ..analysis.regress.compare import CompareResult, Side, compare
from ..model import MEASURED_STATUSES, Point, Run
from ..results import Cell, Report, Section, Table, Value, cell_json
from ..store import RunFilter, Store

#: The widest a recipe's text table may be (several labels side by side made them 148-207).
WIDTH = 100


@dataclass(frozen=True)
class Columns:
    """Stored samples of the current points, one column per label (earlier labels first)."""

    labels: tuple[str, ...]
    samples: dict[tuple[str, str], list[Run]]

    def runs(self, point: Point, label: str) -> list[Run]:
        return self.samples.get((point.key(), label), [])

    def median(self, point: Point, label: str, metric: str | Callable[[Run], float | None]) -> float | None:
        vals = []
        for r in self.runs(point, label):
            v = metric(r) if callable(metric) else r.metric(metric)
            if v is not None:
                vals.append(v)
        return statistics.median(vals) if vals else None

    def cells(self, point: Point, metric: str, unit: str) -> tuple[Value, ...]:
        """One cell per label: the median of ``metric`` at ``point`` in ``unit`` (None, read
        ``-``, where no run measured it)."""
        return tuple(Value(self.median(point, lab, metric), unit) for lab in self.labels)


def columns(store: Store, recipe: str, runs: Sequence[Run], label: str) -> Columns:
    """Every stored measured run of the same points and fingerprints as ``runs``, grouped by
    label: the current label last, others in the order they were first stored. Medians side
    by side (no significance is claimed here: ``iowall compare`` does that)."""
    keys = {r.point.key() for r in runs}
    fps = {r.fingerprint() for r in runs}
    samples: dict[tuple[str, str], list[Run]] = {}
    order: list[str] = []
    # only the runs of these fingerprints, measured, in SQL: the cost grows with the runs
    # compared, not with every stored run of the recipe
    for r in (
        store.runs(
            RunFilter(
                recipe=recipe, statuses=tuple(sorted(MEASURED_STATUSES)), fingerprints=tuple(sorted(fps))
            )
        )
        if fps
        else ()
    ):
        if r.point.key() not in keys or r.fingerprint() not in fps:
            continue
        if r.label not in order:
            order.append(r.label)
        samples.setdefault((r.point.key(), r.label), []).append(r)
    if label in order:
        order.remove(label)
    order.append(label)
    return Columns(tuple(order), samples)


@dataclass(frozen=True)
class LabelRow:
    """A row of a LabelTable: the text cells that name it, and per value column one cell per
    label (a number with its unit); a row without values is a heading (its name alone)."""

    keys: tuple[str, ...]
    values: tuple[tuple[Cell, ...], ...] = ()


@dataclass(frozen=True)
class LabelTable:
    """A recipe's table before it is laid out: key columns (``left`` of them left-aligned),
    value columns, rows."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    rows: tuple[LabelRow, ...]
    left: int = 1


def per_label(cols: Columns, cell: Callable[[str], Cell]) -> tuple[Cell, ...]:
    """One cell per label of ``cols``, in order."""
    return tuple(cell(lab) for lab in cols.labels)


def lay_out(t: LabelTable, names: Sequence[str]) -> Table:
    """``t`` as one table: one row per row of ``t`` with one label; with several, one row per
    row and label, the label (its name in ``names``) in a first column, the text fitted to
    ``WIDTH`` (``Table.fit_width``)."""
    blank: tuple[Cell, ...] = ("",) * len(t.values)
    if len(names) == 1:
        return Table.of(
            t.keys + t.values,
            [r.keys + (tuple(v[0] for v in r.values) if r.values else blank) for r in t.rows],
            left=t.left,
        )
    rows: list[tuple[Cell, ...]] = []
    for r in t.rows:
        if not r.values:
            rows.append(("",) + r.keys + blank)
            continue
        rows += [(name,) + r.keys + tuple(v[i] for v in r.values) for i, name in enumerate(names)]
    return Table.of(("Label",) + t.keys + t.values, rows, left=t.left + 1, fit_width=WIDTH)


def label_sides(cols: Columns) -> list[Side]:
    """One compare side per stored label of the same points (base first)."""
    by_label: dict[str, list[Run]] = {lab: [] for lab in cols.labels}
    for (_, lab), rs in cols.samples.items():
        by_label[lab].extend(rs)
    return [Side(lab, by_label[lab]) for lab in cols.labels]


def compare_sides(sides: Sequence[Side], metrics: Sequence[str] | None = None) -> CompareResult | None:
    """Every side against the first, or None with one side or nothing paired."""
    if len(sides) < 2:
        return None
    res = compare(sides[0], sides[1:], metrics=metrics)
    return res if res.rows else None


def recipe_report(
    name: str,
    title: str,
    *,
    label: str,
    batch: str,
    cols: Columns,
    table: LabelTable,
    notes: Sequence[str],
    runs: Sequence[Run],
    extra: Mapping[str, Any] | None = None,
    metrics: Sequence[str] | None = None,
) -> Report:
    """A seed recipe's Report: its table laid out for its labels (``lay_out``; the JSON's
    ``table`` too, its numbers with their units), the notes with run statuses and the first failures,
    the Why section (explain on each point's median run) and, when other labels share the
    points, the compare of every label against the first on ``metrics``."""
    notes = list(notes)
    notes.append(
        "statuses: "
        + ", ".join(f"{s} {sum(r.status == s for r in runs)}" for s in sorted({r.status for r in runs}))
    )
    notes += [f"run {r.id} failed: {r.error}" for r in runs if r.status == "failed"][:3]
    sides = label_sides(cols)
    cmp = compare_sides(sides, metrics)
    ids = tuple(r.id for r in runs if r.id is not None)
    full = lay_out(table, cols.labels)
    return Report(
        kind="recipe",
        name=name,
        title=title,
        sections=(Section(table=full),),
        notes=tuple(notes),
        why=tuple(e.to_json() for e in explain_points(runs)),
        label=label,
        batch=batch,
        run_ids=ids,
        data={
            "recipe": name,
            **(extra or {}),
            "labels": list(cols.labels),
            "table": {"headers": list(full.headers), "rows": [[cell_json(c) for c in r] for r in full.rows]},
            "compare_metrics": list(metrics) if metrics else None,
        },
        compare_sides=tuple((s.name, tuple(r.id for r in s.runs if r.id is not None)) for s in sides)
        if cmp is not None
        else (),
        compare=cmp,
    )
