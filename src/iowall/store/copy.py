"""``iowall db copy``: runs, whole, from one store to another (SQLite or PostgreSQL either
way), the same as an export and an import would carry them, with the reports of their
batches; runs the destination already has (same uuid) are skipped, so copying twice adds
nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Connection, select

from ..model import Run
from . import schema as t
from .bundle import import_runs
from .db import Store
from .ingest import GROUP, Waiting, gc_paused
from .rows import RunFilter
from .write import dialect_insert

#: Runs read and written per transaction (the ingest's group): memory stays bounded on a
#: large store, and an interrupted copy keeps what it finished (the next copy skips it).
CHUNK = GROUP
_T = TypeVar("_T")


@dataclass(frozen=True)
class Copied:
    """What a copy did: runs added, runs skipped as already there, reports added."""

    copied: int
    skipped: int
    reports: int


def copy_runs(
    src: Store,
    dst: Store,
    flt: RunFilter | None = None,
    *,
    chunk: int = CHUNK,
    done: Callable[[int], None] | None = None,
    waiting: Waiting | None = None,
) -> Copied:
    """Copy the runs of ``src`` matching ``flt`` (metrics, series, artifacts, environment,
    everything a run carries) into ``dst`` under ``dst``'s own ids, oldest first, read
    ``chunk`` runs at a time (keyset pages): memory bounded whatever ``src`` holds.
    ``done``/``waiting``: as ``store.ingest.add_new_runs`` takes them."""
    flt = flt or RunFilter()
    if flt.limit is None:
        stream: Iterable[Run] = src.iter_runs(flt, with_series=True, with_artifacts=True, page=chunk)
    else:  # the last N: their ids first, then the runs a chunk at a time
        ids = [r.id for r in src.runs(flt) if r.id is not None]
        stream = (
            r
            for i in range(0, len(ids), chunk)
            for r in src.iter_runs(
                RunFilter(ids=ids[i : i + chunk]), with_series=True, with_artifacts=True, page=chunk
            )
        )
    copied = skipped = 0
    batches: set[str] = set()
    with gc_paused():  # reading too (ingest.gc_paused)
        for group in _groups(stream, chunk):  # a transaction each
            batches.update(r.batch for r in group)
            added, present = import_runs(dst, group, done=done, waiting=waiting)
            copied += added
            skipped += present
    reports = copy_reports(src, dst, batches)
    return Copied(copied, skipped, reports)


def _groups(runs: Iterable[Run], n: int) -> Iterator[list[Run]]:
    """``runs`` in lists of ``n`` (the last one shorter)."""
    group: list[Run] = []
    for r in runs:
        group.append(r)
        if len(group) == n:
            yield group
            group = []
    if group:
        yield group


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
