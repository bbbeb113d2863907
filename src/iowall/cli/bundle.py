"""`iowall export` (runs → a bundle file) and `iowall import` (bundle files → the store)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..actions.bundle import export_bundle, import_bundles, import_plan
from ..machine.dirs import db_url, default_db_url
from ..report.emit import emit, wrote
from ..vocab.errors import UserError
from .options import DbOpt
from .progress import RichProgress


def export(
    output: Annotated[
        str,
        typer.Option(
            "-o", "--output", metavar="FILE.json", help="bundle file to write, atomically (- for stdout)"
        ),
    ],
    selections: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SELECTION",
            help="runs to export: a label, FIELD=V[,…], ids=3-9 or FILE.json[:…]; none = every run",
            show_default=False,
        ),
    ] = None,
    measured_only: Annotated[
        bool, typer.Option("--measured-only", help="only completed measurements (ok, filled)")
    ] = False,
    packed: Annotated[
        bool,
        typer.Option(
            "--packed",
            help="series, artifacts and metrics as the store keeps them: a quarter of the size, "
            "imported about twice as fast, not for reading by eye",
        ),
    ] = False,
    kcidb: Annotated[
        bool,
        typer.Option(
            "--kcidb",
            help="write a KernelCI KCIDB v5.3 document instead of a bundle: a checkout per kernel, "
            "a build per kernel and architecture, a test per run and metric (docs/kernelci.md)",
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Write runs, whole (metrics, env, bed, series, raw artifacts), to a versioned JSON bundle
    (or, --kcidb, to a KernelCI KCIDB document)."""
    if kcidb and packed:
        raise UserError("--kcidb writes a KCIDB document, not a bundle: drop --packed")
    done = export_bundle(
        list(selections or []), output, measured_only=measured_only, packed=packed, db=db, kcidb=kcidb
    )
    if output == "-":
        print(f"iowall: exported {done.held()} to stdout", file=sys.stderr)
    else:  # one line, as every command that writes a file says it
        wrote(f"{output}: {done.held()}")


def import_(
    files: Annotated[
        list[str],
        typer.Argument(metavar="FILE.json", help="bundle files to import (- for stdin)", show_default=False),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list what would be imported, change nothing")
    ] = False,
    db: DbOpt = None,
) -> None:
    """Add the runs of bundle files to the store; runs already present (same uuid) are skipped."""
    url = db_url(db) if db else default_db_url()
    emit(import_plan(files, url) if dry_run else import_bundles(files, url, RichProgress))
