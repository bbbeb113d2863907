"""`locks`: the lock contention of two runs or labels, joined by caller with deltas (seed
000's two perf-lock tables made into one)."""

from __future__ import annotations

import json
from typing import Any

from ..analysis.regress.locks import LockComparison, join_contention
from ..store import RunFilter, Store
from ..vocab.errors import NotFound, UserError


def contention_rows(store: Store, side: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Rows of the locks probe for a run id or every run of a label (summed by the join)."""
    runs = store.runs(RunFilter(ids=[int(side)])) if side.isdigit() else store.runs(RunFilter(label=side))
    if not runs:
        raise NotFound(f"no run or label {side!r} in the store")
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


def compare_locks(store: Store, a: str, b: str, top: int) -> LockComparison:
    """The ``top`` callers of A's and B's lock contention joined (``analysis.regress.locks``)."""
    a_rows, a_ids = contention_rows(store, a)
    b_rows, b_ids = contention_rows(store, b)
    return LockComparison(a, tuple(a_ids), b, tuple(b_ids), tuple(join_contention(a_rows, b_rows)[:top]))
