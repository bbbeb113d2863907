"""`iowall doctor`: what is present, what each missing piece disables, how to get it."""

from __future__ import annotations

import typer

from ..actions.doctor import doctor_checks
from ..report.emit import emit
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt


def doctor(fmt: RecordFormatOpt = RecordFormat.text, output: OutputOpt = None, db: DbOpt = None) -> None:
    """Check what iowall needs; exit 0 when `iowall limits` can run."""
    found = doctor_checks(db)
    emit(found, fmt, output)
    raise typer.Exit(0 if found.can_run_limits else 1)
