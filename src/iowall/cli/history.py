"""`iowall history [SEL…] [--series FILE]`: a point's metric over its runs in order, one
series per fingerprint, with change points and the bisect window at each."""

from __future__ import annotations

import csv
import io
import json
from typing import Annotated

import typer

from ..analysis.history import BY, History, SeriesRow, from_rows, from_runs
from ..errors import UserError
from ..report.emit import emit, wrote
from ..report.history import draw_history, history_report
from ..report.plots import check_path
from ..selection import load_all
from ..store import Store
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt

DIRECTIONS = ("higher", "lower")


def _row(path: str, i: int, r: object) -> SeriesRow:
    """One row of the file, or a UserError naming it."""
    try:
        if not isinstance(r, dict):
            raise ValueError
        index = str(r["index"]).strip()
        row = SeriesRow(str(r["series"]), index, float(str(r["value"])),
                        str(r.get("direction") or "").strip(), str(r.get("unit") or "").strip())
    except (KeyError, ValueError):
        raise UserError(f"--series {path}: row {i} is not series,index,value: {r!r}") from None
    if not index:
        raise UserError(f"--series {path}: row {i} has an empty index")
    if row.direction and row.direction not in DIRECTIONS:
        raise UserError(f"--series {path}: row {i}: direction {row.direction!r} is not higher "
                        "or lower")
    return row


def read_series(path: str) -> list[SeriesRow]:
    """``series,index,value`` rows (and optionally ``direction``, ``unit``) from a CSV file
    with that header or a JSON list of objects with those keys; the index is kept as written
    (a number, a date, a commit id or a build name); a UserError naming the row for anything
    else."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise UserError(f"--series {path}: {e.strerror}") from None
    rows: list[object]
    if text.lstrip().startswith(("[", "{")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(f"--series {path}: not JSON ({e.msg} at line {e.lineno})") from None
        rows = doc if isinstance(doc, list) else doc.get("rows", []) if isinstance(doc, dict) \
            else []
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
    out = [_row(path, i, r) for i, r in enumerate(rows, 1)]
    if not out:
        raise UserError(f"--series {path}: no rows (expected series,index,value)")
    return out


def check_series_options(direction: str, alpha: float | None) -> None:
    """``--direction`` and ``--alpha`` as the analysis takes them, or a UserError."""
    if direction not in DIRECTIONS:
        raise UserError(f"--direction {direction}: use higher or lower (which is better)")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise UserError(f"--alpha {alpha:g}: give a level between 0 and 1, e.g. 0.001")


def build(selections: list[str], metric: str | None, by: str, series: str | None,
          db: str | None, *, direction: str = "higher", unit: str = "",
          alpha: float | None = None) -> tuple[list[History], str]:
    """The histories of the selections (or of the file), and how the source reads."""
    if by not in BY:
        raise UserError(f"--by {by}: use one of {', '.join(BY)}")
    check_series_options(direction, alpha)
    if series is not None:
        if selections:
            raise UserError("give run selections or --series FILE, not both")
        return from_rows(read_series(series), metric=metric or "value", alpha=alpha,
                         direction=direction, unit=unit), series
    if not selections:
        raise UserError("history needs runs: a selection (e.g. recipe=plan:nightly) or "
                        "--series FILE")
    store = None if all(".json" in t for t in selections) else Store.existing(db)
    runs = [r for _, rs in load_all(store, selections) for r in rs]
    hs = from_runs(runs, metric=metric, by=by, alpha=alpha)
    if not hs:
        what = f"metric {metric!r}" if metric else "a throughput metric"
        raise UserError(f"no series: no point of {' '.join(selections)} has a run with "
                        f"{what}")
    return hs, " ".join(selections)


def history(
    selections: Annotated[list[str] | None, typer.Argument(
        metavar="[SELECTION…]", help="runs: a label, FIELD=VALUE,…, ids=3-9 or a bundle.json",
        show_default=False)] = None,
    metric: Annotated[str | None, typer.Option(
        "--metric", metavar="NAME", help="the metric (default: each point's throughput)")
    ] = None,
    by: Annotated[str, typer.Option(
        "--by", metavar="time|label|kernel|commit",
        help="order runs by time, or group them by label, kernel or commit (a group's repeats "
             "are never split)")] = "time",
    series: Annotated[str | None, typer.Option(
        "--series", metavar="FILE", help="analyse series,index,value rows (CSV or JSON) "
                                         "instead of stored runs")] = None,
    direction: Annotated[str, typer.Option(
        "--direction", metavar="higher|lower",
        help="with --series: which way is better, unless the file has a direction column "
             "(stored runs: each metric's own)")] = "higher",
    unit: Annotated[str, typer.Option(
        "--unit", metavar="UNIT", help="with --series: the values' unit, e.g. ms or MB/s "
                                       "(unless the file has a unit column)")] = "",
    alpha: Annotated[float | None, typer.Option(
        "--alpha", metavar="P", help="change points' significance level (default 0.001)")
    ] = None,
    plot: Annotated[str | None, typer.Option(
        metavar="FILE.png|FILE.svg", help="also draw the series into this file")] = None,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """A metric over its runs in order, with change points and each one's bisect window."""
    if plot is not None:
        check_path(plot)
    hs, source = build(list(selections or []), metric, by, series, db, direction=direction,
                       unit=unit, alpha=alpha)
    if plot is not None:
        draw_history(hs, plot)
        wrote(plot)
    emit(history_report(hs, source), fmt, output)
