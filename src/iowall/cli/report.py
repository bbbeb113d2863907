"""`iowall report BATCH`: print a stored limits, recipe or plan report again, in any format."""

from __future__ import annotations

from typing import Annotated

import typer

from ..recipes.tables import reload_compare
from ..report.emit import emit
from ..store import Store
from ..store.reports import get_report
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt


def report_cmd(
    batch: Annotated[
        str,
        typer.Argument(
            metavar="BATCH",
            help="the batch id of a limits, recipe or plan run (or a unique "
            "prefix of one; 'iowall runs' shows batches)",
        ),
    ],
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Print a stored report again: its tables, sentences and notes as they were written."""
    store = Store.existing(db)
    emit(reload_compare(store, get_report(store, batch)), fmt, output)
