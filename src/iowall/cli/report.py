"""`iowall report BATCH`: print a stored limits, recipe or plan report again, in any format."""

from __future__ import annotations

from typing import Annotated

import typer

from ..recipes.stored import stored_report
from ..report import recipe  # noqa: F401  (the Report's renderers: emit then imports no other)
from ..report.emit import emit
from ..store import Store
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
    emit(stored_report(Store.existing(db), batch), fmt, output)
