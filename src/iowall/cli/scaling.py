"""`iowall scaling SEL…`: throughput against thread count per line of a sweep, efficiency,
knee and Universal Scalability Law fit; several selections side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.scaling import analyse_selections, draw_curves
from ..report.emit import emit
from .options import (
    DbOpt,
    KneeOpt,
    OutputOpt,
    ScalingFormat,
    ScalingFormatOpt,
    ScalingMetricOpt,
    SelectionsArg,
)


def scaling(
    selections: SelectionsArg,
    metric: ScalingMetricOpt = None,
    knee: KneeOpt = 0.8,
    fmt: ScalingFormatOpt = ScalingFormat.text,
    output: OutputOpt = None,
    plot: Annotated[
        str | None, typer.Option(metavar="FILE.png|FILE.svg", help="also draw the curves into this file")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Scaling over a thread or job sweep: efficiency, knee, USL fit (σ, κ, N*, peak)."""
    result = analyse_selections(selections, metric, knee, db)
    if plot is not None:
        draw_curves(result, plot)
    emit(result, fmt, output)
