"""Reports kept with their batch: written once when a measurement ends, read by
``iowall report BATCH`` (a batch id or a unique prefix of one); ``iowall db copy`` copies
them with their runs (store/copy.py)."""

from __future__ import annotations

import json
import time
from typing import Any

from ..results import Report
from ..vocab.errors import NotFound, UserError
from .db import Store


def add_report(store: Store, report: Report) -> None:
    """Store ``report`` under its batch (replacing nothing: a batch has one report)."""
    from .write import insert_report  # SQLAlchemy: only when a store is written

    with store.engine.begin() as conn:
        insert_report(
            conn,
            dict(
                batch=report.batch,
                kind=report.kind,
                name=report.name,
                label=report.label,
                created_at=time.time(),
                doc_json=json.dumps(report.to_json(), default=str),
            ),
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
        raise NotFound(
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
