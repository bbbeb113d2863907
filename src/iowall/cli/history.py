"""`iowall history [SEL…] [--series FILE]`: a point's metric over its runs in order, one
series per fingerprint, with change points and the bisect window at each."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.series import check_series_options, read_series
from ..analysis.history import BY, History, from_rows, from_runs, needed
from ..errors import UserError
from ..report.emit import emit, wrote
from ..report.history import draw_history, history_report
from ..report.plots import check_path
from ..selection import load_all
from ..store import Store
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt


def build(
    selections: list[str],
    metric: str | None,
    by: str,
    series: str | None,
    db: str | None,
    *,
    direction: str = "higher",
    unit: str = "",
    alpha: float | None = None,
) -> tuple[list[History], str]:
    """The histories of the selections (or of the file), and how the source reads."""
    if by not in BY:
        raise UserError(f"--by {by}: use one of {', '.join(BY)}")
    check_series_options(direction, alpha)
    if series is not None:
        if selections:
            raise UserError("give run selections or --series FILE, not both")
        return from_rows(
            read_series(series), metric=metric or "value", alpha=alpha, direction=direction, unit=unit
        ), series
    if not selections:
        raise UserError("history needs runs: a selection (e.g. recipe=plan:nightly) or --series FILE")
    store = None if all(".json" in t for t in selections) else Store.existing(db)
    runs = [r for _, rs in load_all(store, selections, metrics=needed(metric)) for r in rs]
    hs = from_runs(runs, metric=metric, by=by, alpha=alpha)
    if not hs:
        what = f"metric {metric!r}" if metric else "a throughput metric"
        raise UserError(f"no series: no point of {' '.join(selections)} has a run with {what}")
    return hs, " ".join(selections)


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
