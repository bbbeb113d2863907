"""`iowall history [SEL…] [--series FILE]`: a point's metric over its runs in order, one
series per fingerprint, with change points and the bisect window at each."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Annotated

import typer

from ..analysis.history import BY, History, from_rows, from_runs
from ..errors import UserError
from ..report.emit import emit, wrote
from ..report.history import draw_history, history_report
from ..report.plots import check_path
from ..selection import load_all
from ..store import Store
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt


def read_series(path: str) -> list[tuple[str, float, float]]:
    """``series,index,value`` rows from a CSV file (with that header) or a JSON list of
    objects with those keys; a UserError naming the row for anything else."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise UserError(f"--series {path}: {e.strerror}") from None
    rows: list[dict[str, object]]
    if text.lstrip().startswith(("[", "{")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(f"--series {path}: not JSON ({e.msg} at line {e.lineno})") from None
        rows = doc if isinstance(doc, list) else doc.get("rows", []) if isinstance(doc, dict) \
            else []
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
    out = []
    for i, r in enumerate(rows, 1):
        try:
            if not isinstance(r, dict):
                raise ValueError
            out.append((str(r["series"]), float(str(r["index"])), float(str(r["value"]))))
        except (KeyError, ValueError):
            raise UserError(f"--series {path}: row {i} is not series,index,value: {r!r}") from None
    if not out:
        raise UserError(f"--series {path}: no rows (expected series,index,value)")
    if not all(math.isfinite(x) for _, x, _ in out):
        raise UserError(f"--series {path}: every index must be a finite number")
    return out


def build(selections: list[str], metric: str | None, by: str, series: str | None,
          db: str | None) -> tuple[list[History], str]:
    """The histories of the selections (or of the file), and how the source reads."""
    if by not in BY:
        raise UserError(f"--by {by}: use one of {', '.join(BY)}")
    if series is not None:
        if selections:
            raise UserError("give run selections or --series FILE, not both")
        return from_rows(read_series(series), metric=metric or "value"), series
    if not selections:
        raise UserError("history needs runs: a selection (e.g. recipe=plan:nightly) or "
                        "--series FILE")
    store = None if all(".json" in t for t in selections) else Store.existing(db)
    runs = [r for _, rs in load_all(store, selections) for r in rs]
    hs = from_runs(runs, metric=metric, by=by)
    if not hs:
        what = f"metric {metric!r}" if metric else "a throughput metric"
        raise UserError(f"no series: no point of {' '.join(selections)} has two runs with "
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
    plot: Annotated[str | None, typer.Option(
        metavar="FILE.png|FILE.svg", help="also draw the series into this file")] = None,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """A metric over its runs in order, with change points and each one's bisect window."""
    if plot is not None:
        check_path(plot)
    hs, source = build(list(selections or []), metric, by, series, db)
    if plot is not None:
        draw_history(hs, plot)
        wrote(plot)
    emit(history_report(hs, source), fmt, output)
