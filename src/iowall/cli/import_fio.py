"""`iowall import-fio FILE…`: fio's own JSON (json, json+, fio --client) into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..model import Run, check_label
from ..report.emit import emit
from ..report.run import Imported
from ..store import Store
from ..store.ingest import import_runs
from ..vocab.errors import UserError
from ..workloads.fio_import import read_runs
from .options import DbOpt


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None


def import_fio(
    files: Annotated[
        list[str],
        typer.Argument(
            metavar="FILE",
            help="fio output files (--output-format=json or json+, fio --client "
            "included); text around the JSON is skipped",
            show_default=False,
        ),
    ],
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            help="label of every imported run (default: each file's name without "
            "its extension, e.g. base.json → base)",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="NAME",
            help="the host that ran fio, for output without one (fio --client output names its hosts itself)",
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Import fio's JSON as runs: one per reporting group (and host), figures as fio's."""
    runs: list[Run] = []
    for f in files:  # every file valid before anything is written
        name = check_label(
            label if label is not None else Path(f).stem or f,
            "--label" if label is not None else f"the label {Path(f).stem!r}",
        )
        runs += read_runs(_read(f), f, label=name, hostname=host or "")
    store = Store(db)
    present = store.known_uuids(r.uuid for r in runs)
    added, skipped = import_runs(store, runs)
    emit(Imported(tuple(runs), frozenset(present), len(files), added, skipped))
