"""`iowall locks A B`: lock contention of two runs or labels joined by caller, with deltas
(seed 000's two perf-lock tables made into one)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.locks import compare_locks
from ..report.emit import emit
from ..store import Store
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt

SideArg = Annotated[
    str,
    typer.Argument(metavar="A|B", help="a run id or a label: A the base, B the new side", show_default=False),
]


def locks(
    a: SideArg,
    b: SideArg,
    top: Annotated[int, typer.Option(min=1, metavar="N", help="callers to show")] = 20,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Join two lock-contention profiles by caller, with contended and wait deltas."""
    emit(compare_locks(Store.existing(db), a, b, top), fmt, output)
