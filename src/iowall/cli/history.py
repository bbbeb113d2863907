"""`iowall history [SEL…] [--series FILE]`: a point's metric over its runs in order, one
series per fingerprint, with change points and the bisect window at each."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.history import build
from ..report.emit import emit, wrote
from ..report.history import draw_history, history_report
from ..report.plots import check_path
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt


def history(
    selections: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[SELECTION…]",
            help="runs: a label, FIELD=VALUE,…, ids=3-9 or a bundle.json",
            show_default=False,
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option("--metric", metavar="NAME", help="the metric (default: each point's throughput)"),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            metavar="time|label|kernel|commit",
            help="order runs by time, or group them by label, kernel or commit (a group's repeats "
            "are never split)",
        ),
    ] = "time",
    series: Annotated[
        str | None,
        typer.Option(
            "--series",
            metavar="FILE",
            help="analyse series,index,value rows (CSV or JSON) instead of stored runs",
        ),
    ] = None,
    direction: Annotated[
        str,
        typer.Option(
            "--direction",
            metavar="higher|lower",
            help="with --series: which way is better, unless the file has a direction column "
            "(stored runs: each metric's own)",
        ),
    ] = "higher",
    unit: Annotated[
        str,
        typer.Option(
            "--unit",
            metavar="UNIT",
            help="with --series: the values' unit, e.g. ms or MB/s (unless the file has a unit column)",
        ),
    ] = "",
    alpha: Annotated[
        float | None,
        typer.Option("--alpha", metavar="P", help="change points' significance level (default 0.001)"),
    ] = None,
    plot: Annotated[
        str | None, typer.Option(metavar="FILE.png|FILE.svg", help="also draw the series into this file")
    ] = None,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """A metric over its runs in order, with change points and each one's bisect window."""
    if plot is not None:
        check_path(plot)
    hs, source = build(
        list(selections or []), metric, by, series, db, direction=direction, unit=unit, alpha=alpha
    )
    if plot is not None:
        draw_history(hs, plot)
        wrote(plot)
    emit(history_report(hs, source), fmt, output)
