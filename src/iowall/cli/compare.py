"""`iowall compare BASE NEW [NEW …]`: base vs new run sets, point by point, with intervals."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.compare import compare_sets
from ..report.emit import emit
from .options import CompareMetricOpt, DbOpt, FloorOpt, OutputOpt, RunSetsArg, TableFormat, TableFormatOpt


def compare_cmd(
    sets: RunSetsArg = None,
    base: Annotated[str | None, typer.Option("--base", metavar="SET", help="the base run set")] = None,
    new: Annotated[
        list[str] | None,
        typer.Option("--new", metavar="SET", help="a new run set (repeatable: one column per set)"),
    ] = None,
    metric: CompareMetricOpt = None,
    floor: FloorOpt = "2%",
    fmt: TableFormatOpt = TableFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Base vs new, point by point: medians, ratio, 95% interval, better/worse."""
    emit(compare_sets(sets, base, new, metric, floor, db), fmt, output)
