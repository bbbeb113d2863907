"""`iowall locks A B`: lock contention of two runs or labels joined by caller, with deltas
(seed 000's two perf-lock tables made into one)."""

from __future__ import annotations

import json
from typing import Any

import typer

from ..analysis.locks import format_locks_table, join_contention
from ..errors import UserError
from ..store import RunFilter, Store
from .common import check_format, open_store, print_json


def contention_rows(store: Store, side: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows of the locks probe for a run id or every run of a label (summed by the join)."""
    runs = store.runs(RunFilter(ids=[int(side)])) if side.isdigit() else \
        store.runs(RunFilter(label=side))
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
    a: str = typer.Argument(..., metavar="A", help="base: a run id or a label"),
    b: str = typer.Argument(..., metavar="B", help="new: a run id or a label"),
    top: int = typer.Option(20, help="callers to show"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Join two lock-contention profiles by caller, with contended and wait deltas."""
    check_format(fmt, ("text", "json"))
    store = open_store(db)
    a_rows, a_ids = contention_rows(store, a)
    b_rows, b_ids = contention_rows(store, b)
    joined = join_contention(a_rows, b_rows)[:top]
    if fmt == "json":
        print_json({"a": {"selector": a, "runs": a_ids}, "b": {"selector": b, "runs": b_ids},
                    "rows": [{"caller": j.caller, "type": j.type,
                              "a": j.a.__dict__, "b": j.b.__dict__,
                              "delta_contended": j.delta_contended,
                              "delta_wait_s": j.delta_wait_s} for j in joined]})
        return
    typer.echo(f"lock contention: (a) {a} runs {a_ids}   (b) {b} runs {b_ids}")
    typer.echo(format_locks_table(joined))
