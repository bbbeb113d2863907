"""`iowall locks A B`: lock contention of two runs or labels joined by caller, with deltas
(seed 000's two perf-lock tables made into one)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ..analysis.locks import LockComparison, join_contention
from ..errors import UserError
from ..report.emit import emit
from ..store import RunFilter, Store
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt

SideArg = Annotated[
    str,
    typer.Argument(metavar="A|B", help="a run id or a label: A the base, B the new side", show_default=False),
]


def contention_rows(store: Store, side: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows of the locks probe for a run id or every run of a label (summed by the join)."""
    runs = store.runs(RunFilter(ids=[int(side)])) if side.isdigit() else store.runs(RunFilter(label=side))
    if not runs:
        raise UserError(f"no run or label {side!r} in the store")
    rows: list[dict[str, Any]] = []
    used = []
    for r in runs:
        art = store.artifact(r.id, "lock_contention.json") if r.id is not None else None
        if art is not None:
            rows += json.loads(art.body)
            used.append(int(r.id or 0))
    if not used:
        raise UserError(f"{side!r} has no lock-contention data: run it with --probes default,locks")
    return rows, used


def locks(
    a: SideArg,
    b: SideArg,
    top: Annotated[int, typer.Option(min=1, metavar="N", help="callers to show")] = 20,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Join two lock-contention profiles by caller, with contended and wait deltas."""
    store = Store.existing(db)
    a_rows, a_ids = contention_rows(store, a)
    b_rows, b_ids = contention_rows(store, b)
    emit(
        LockComparison(a, tuple(a_ids), b, tuple(b_ids), tuple(join_contention(a_rows, b_rows)[:top])),
        fmt,
        output,
    )
