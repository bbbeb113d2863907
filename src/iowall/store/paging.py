"""Keyset paging over the stored runs, for the dashboard (``iowall.web.queries``): one
indexed, LIMITed query a page, whatever the store's size."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from . import schema as t
from .db import Store
from .rows import RunFilter, where


def page_ids(
    store: Store,
    flt: RunFilter,
    *,
    before: int | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = 50,
) -> list[int]:
    """Ids of the newest ``limit`` runs matching ``flt`` with an id below ``before`` and a start
    time in [since, until): one indexed, LIMITed query (keyset paging), whatever the store's
    size. ``flt.commit`` and ``flt.limit`` are not applied here."""
    c = t.runs.c
    q = _window(where(select(c.id).order_by(c.id.desc()).limit(max(0, limit)), flt), since, until)
    if before is not None:
        q = q.where(c.id < before)
    with store.engine.connect() as conn:
        return [int(i) for i in conn.execute(q).scalars()]


def count_window(
    store: Store, flt: RunFilter, *, since: float | None = None, until: float | None = None
) -> int:
    """How many runs ``page_ids`` pages through: ``flt`` and a start time in [since, until)."""
    q = _window(where(select(func.count()).select_from(t.runs), flt), since, until)
    with store.engine.connect() as conn:
        return int(conn.execute(q).scalar_one())


def _window(q: Any, since: float | None, until: float | None) -> Any:
    if since is not None:
        q = q.where(t.runs.c.started_at >= since)
    if until is not None:
        q = q.where(t.runs.c.started_at < until)
    return q
