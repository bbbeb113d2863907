"""`iowall scaling SEL…`: throughput against thread count per line of a sweep, efficiency,
knee and Universal Scalability Law fit; several selections side by side."""

from __future__ import annotations

from typing import Annotated

import typer

from ..analysis.sweep import Scaling, analyse, sides_of, why_no_curves
from ..errors import UserError
from ..report.emit import emit, wrote
from ..report.plots import check_path, save
from ..report.scaling import figure
from ..selection import load_all
from ..store import Store
from .options import (
    DbOpt,
    KneeOpt,
    OutputOpt,
    ScalingFormat,
    ScalingFormatOpt,
    ScalingMetricOpt,
    SelectionsArg,
)


def build(selections: list[str], metric: str | None, knee: float, db: str | None) -> Scaling:
    """Load each selection as a side and analyse its sweeps (shared with `plot scaling`)."""
    if not 0.0 < knee <= 1.0:
        raise UserError(f"--knee {knee:g}: give an efficiency between 0 and 1, e.g. 0.8")
    dup = next((s for i, s in enumerate(selections) if s in selections[:i]), None)
    if dup is not None:
        raise UserError(f"selection {dup!r} is given twice")
    store = Store.existing(db)
    picked = [(sel.text, runs) for sel, runs in load_all(store, selections)]
    for text, runs in picked:
        if not analyse([(text, runs)], metric=metric, knee_at=knee).curves:
            raise UserError(f"no thread sweep in {text!r}: {why_no_curves(runs, metric=metric)}")
    return analyse(sides_of(picked), metric=metric, knee_at=knee)


def draw(result: Scaling, path: str) -> None:
    """The curves into a PNG or SVG, atomically; ``wrote PATH`` on stderr."""
    check_path(path)
    save(figure(result.curves), path)
    wrote(path)


def scaling(
    selections: SelectionsArg,
    metric: ScalingMetricOpt = None,
    knee: KneeOpt = 0.8,
    fmt: ScalingFormatOpt = ScalingFormat.text,
    output: OutputOpt = None,
    plot: Annotated[str | None, typer.Option(
        metavar="FILE.png|FILE.svg", help="also draw the curves into this file")] = None,
    db: DbOpt = None,
) -> None:
    """Scaling over a thread or job sweep: efficiency, knee, USL fit (σ, κ, N*, peak)."""
    result = build(selections, metric, knee, db)
    if plot is not None:
        draw(result, plot)
    emit(result, fmt, output)
