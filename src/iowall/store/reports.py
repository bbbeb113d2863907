"""Reports kept with their batch: written once when a measurement ends, read by
``iowall report BATCH`` (a batch id or a unique prefix of one), copied with their runs by
``iowall db copy``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import Connection, select

from ..errors import UserError
from ..results import Report
from . import schema as t
from .db import Store
from .write import dialect_insert

_T = TypeVar("_T")


def add_report(store: Store, report: Report) -> None:
    """Store ``report`` under its batch (replacing nothing: a batch has one report)."""
    with store.engine.begin() as conn:
        conn.execute(
            t.reports.insert().values(
                batch=report.batch,
                kind=report.kind,
                name=report.name,
                label=report.label,
                created_at=time.time(),
                doc_json=json.dumps(report.to_json(), default=str),
            )
        )


def get_report(store: Store, batch: str) -> Report:
    """The report of ``batch`` (or of the one batch starting with it); a UserError when there
    is none or the prefix is ambiguous."""
    if not batch.strip():
        raise UserError("give a batch id (see 'iowall runs', column batch)")
    with store.reading() as db:  # a substring, not LIKE: case-sensitive on both backends
        rows = db.all(
            "SELECT batch, doc_json FROM reports WHERE substr(batch, 1, :n) = :prefix ORDER BY batch LIMIT 3",
            {"n": len(batch), "prefix": batch},
        )
    if not rows:
        raise UserError(
            f"no report stored for batch {batch!r}: 'iowall runs' lists batches; "
            "reports are kept from this version of iowall on"
        )
    if len(rows) > 1:
        raise UserError(f"batch {batch!r} is ambiguous: " + ", ".join(r[0] for r in rows))
    doc: dict[str, Any] = json.loads(rows[0][1])
    try:
        return Report.from_json(doc)
    except (ValueError, KeyError) as e:
        raise UserError(f"cannot read the report of batch {rows[0][0]}: {e}") from None


def copy_reports(src: Store, dst: Store, batches: Iterable[str]) -> int:
    """Copy the reports of ``batches`` that ``dst`` lacks; how many it copied. The run ids a
    report keeps (``run_ids``, ``compare_sides``) are renumbered to ``dst``'s ids of the
    same runs (by uuid), those of runs ``dst`` lacks dropped; its text is kept as written."""
    want = sorted(set(batches))
    if not want:
        return 0
    with src.engine.connect() as conn:
        rows = [
            r
            for chunk in _chunks(want)
            for r in conn.execute(select(t.reports).where(t.reports.c.batch.in_(chunk))).mappings()
        ]
    copied = 0
    with dst.engine.begin() as conn:
        for r in rows:
            doc = json.loads(r["doc_json"])
            ids = {int(i) for i in doc.get("run_ids", [])}
            ids |= {int(i) for _, side in doc.get("compare_sides", []) for i in side}
            new = _renumber(src, conn, ids)
            doc["run_ids"] = [new[int(i)] for i in doc.get("run_ids", []) if int(i) in new]
            doc["compare_sides"] = [
                [lab, [new[int(i)] for i in side if int(i) in new]]
                for lab, side in doc.get("compare_sides", [])
            ]
            row = dict(r) | {"doc_json": json.dumps(doc)}
            done = conn.execute(
                dialect_insert(conn)(t.reports)
                .values(**row)
                .on_conflict_do_nothing(index_elements=["batch"])
                .returning(t.reports.c.batch)
            ).first()
            copied += done is not None
    return copied


def _renumber(src: Store, dst_conn: Connection, ids: set[int]) -> dict[int, int]:
    """Source run id → the id of the same run (same uuid) in the destination."""
    if not ids:
        return {}
    with src.engine.connect() as conn:
        uuid_of = {
            i: u
            for chunk in _chunks(sorted(ids))
            for i, u in conn.execute(select(t.runs.c.id, t.runs.c.uuid).where(t.runs.c.id.in_(chunk)))
        }
    id_of = {
        u: i
        for chunk in _chunks(sorted(uuid_of.values()))
        for u, i in dst_conn.execute(select(t.runs.c.uuid, t.runs.c.id).where(t.runs.c.uuid.in_(chunk)))
    }
    return {s: id_of[u] for s, u in uuid_of.items() if u in id_of}


def _chunks(xs: Sequence[_T], n: int = 500) -> Iterator[Sequence[_T]]:
    for i in range(0, len(xs), n):
        yield xs[i : i + n]
