"""`iowall spool`: the runs a store could not take, waiting on this machine, and their import."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.spool import spool_status
from ..machine.dirs import db_url, default_db_url
from ..report.emit import emit
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt


def spool(
    import_: Annotated[
        bool,
        typer.Option("--import", help="import the runs waiting for the store (--db, or the default one)"),
    ] = False,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """List the measured runs a store could not take, kept on this machine until it can; every
    command that opens that store imports them first."""
    url = (db_url(db) if db else default_db_url()) if import_ else None
    emit(spool_status(url), fmt, output)
