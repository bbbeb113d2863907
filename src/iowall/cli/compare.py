"""`iowall compare BASE NEW [NEW …]`: base vs new run sets, point by point, with intervals."""

from __future__ import annotations

from typing import Annotated

import typer

from ..analysis.compare import CompareResult, Side, compare, shared_run
from ..errors import UserError
from ..report.emit import emit
from ..selection import FIELDS, load_all, parse_selection
from ..store import Store
from .options import CompareMetricOpt, DbOpt, FloorOpt, OutputOpt, RunSetsArg, TableFormat, TableFormatOpt


def parse_floor(text: str) -> float:
    """``2%`` or ``0.02`` → 0.02; a UserError outside [0, 1)."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise UserError(f"--floor {text!r}: use a share like 2% or 0.02") from None
    if not 0 <= v < 1:
        raise UserError(f"--floor {text!r}: must be at least 0 and below 100%")
    return v


def compared_field(texts: list[str]) -> str:
    """The field the sides were chosen by (``label`` for plain labels)."""
    named: list[str] = []
    for t in texts:
        sel = parse_selection(t)
        if sel.bundle is not None and not any(getattr(sel.flt, f) for f in FIELDS):
            named.append("bundle")
            continue
        for f in (*FIELDS, "ids"):
            if getattr(sel.flt, f) and f not in named:
                named.append(f)
    return ",".join("host.hostname" if f == "host" else f for f in named) or "label"


def build(sets: list[str] | None, base: str | None, new: list[str] | None,
          metric: list[str] | None, floor: str, db: str | None) -> CompareResult:
    """Load the run sets named on the command line and compare them (shared with `plot`).
    Sides that share a run (the same selection twice, or overlapping ones) are refused."""
    fl = parse_floor(floor)
    texts = list(sets or [])
    if base is not None or new:
        if texts:
            raise UserError("give the run sets either as arguments or as --base/--new, not both")
        if base is None or not new:
            raise UserError("--base and --new go together")
        texts = [base, *new]
    if len(texts) < 2:
        raise UserError("compare needs a base and at least one new run set, e.g. "
                        "'iowall compare base patched'")
    store = None if all(".json" in t for t in texts) else Store.existing(db)
    loaded = load_all(store, texts)
    sides = [Side(sel.describe(), runs) for sel, runs in loaded]
    shared = shared_run(sides)
    if shared is not None:
        run, i, j = shared
        what = (f"{texts[i]!r} is given twice" if texts[i] == texts[j]
                else f"run {run} is in both {texts[i]!r} and {texts[j]!r}")
        raise UserError(f"{what}: the sides of a comparison must not share runs")
    res = compare(sides[0], sides[1:], metrics=metric, floor=fl, compared=compared_field(texts))
    if not res.rows:
        why = "; ".join(f"{u.side}: {u.point_text}: {u.reason}" for u in res.unpaired[:3])
        raise UserError("nothing to compare: no point and metric measured on both sides"
                        + (f" ({why})" if why else ""))
    return res


def compare_cmd(
    sets: RunSetsArg = None,
    base: Annotated[str | None, typer.Option("--base", metavar="SET",
                                             help="the base run set")] = None,
    new: Annotated[list[str] | None, typer.Option(
        "--new", metavar="SET", help="a new run set (repeatable: one column per set)")] = None,
    metric: CompareMetricOpt = None,
    floor: FloorOpt = "2%",
    fmt: TableFormatOpt = TableFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Base vs new, point by point: medians, ratio, 95% interval, better/worse."""
    emit(build(sets, base, new, metric, floor, db), fmt, output)
