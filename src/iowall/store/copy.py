"""``iowall db copy``: runs, whole, from one store to another (SQLite or PostgreSQL either
way), the same as an export and an import would carry them, with the reports of their
batches; runs the destination already has (same uuid) are skipped, so copying twice adds
nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, func, select

from . import codec
from . import schema as t
from .db import Store
from .ingest import GROUP, add_new_packed
from .packing import KeptMetrics, Kind, Packed
from .reader import Reader
from .row_checks import RUNS, check_row
from .rows import ARTIFACTS, KINDS, RunFilter, chunks, doc_texts, kept_docs
from .write import Waiting, dialect_insert

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
    ``done``/``waiting``: as ``store.ingest.add_new_runs`` takes them.

    The rows go across as they are kept (``packed_runs``): artifacts and series stay
    compressed, metrics are renumbered to ``dst``'s kinds; nothing is decoded into Runs and
    encoded again (3.4-4.8x the rate of an export and an import at 10,000 runs,
    docs/benchmarks.md)."""
    flt = flt or RunFilter()
    if flt.limit is None:
        pages: Iterable[RunFilter] = [flt]
    else:  # the last N: their ids first, then the runs a chunk at a time
        ids = [r.id for r in src.runs(flt) if r.id is not None]
        pages = (RunFilter(ids=ids[i : i + chunk]) for i in range(0, len(ids), chunk))
    seen = 0
    batches: set[str] = set()

    def groups() -> Iterator[list[Packed]]:
        nonlocal seen
        for f in pages:
            for db, rows in src.row_pages(f, page=chunk, docs=False):
                seen += len(rows)
                batches.update(r["batch"] for r in rows)
                yield packed_runs(db, rows, kinds)

    kinds = _seed_kinds(src, dst)
    copied = add_new_packed(dst, groups(), done=done, waiting=waiting)
    reports = copy_reports(src, dst, batches)
    return Copied(copied, seen - copied, reports)


def _seed_kinds(src: Store, dst: Store) -> dict[int, Kind]:
    """A destination that holds no metric kind yet takes the source's, in the source's id
    order: both number them from 1, so each run's metrics row crosses as it is (its ids the
    same: ``packing.metrics_row``) instead of being compressed again. Wherever the ids
    differ (a store with kinds of its own), the rows are renumbered: never wrong, only slower.
    Returns the source's kinds by id."""
    with src.reading() as db:
        by_id = {i: (n, u, d) for i, n, u, d in db.all(KINDS + " ORDER BY id")}
    kinds = [{"name": n, "unit": u, "direction": d} for n, u, d in by_id.values()]
    if not kinds:
        return by_id
    with dst.engine.begin() as conn:
        if conn.execute(select(func.count()).select_from(t.metric_kinds)).scalar_one() == 0:
            conn.execute(
                dialect_insert(conn)(t.metric_kinds).on_conflict_do_nothing(
                    index_elements=["name", "unit", "direction"]
                ),
                kinds,
            )
    return by_id


#: The columns of a runs row that a copy carries (the id is the destination's own).
RUN_COLUMNS = (
    "uuid",
    "batch",
    "recipe",
    "label",
    "status",
    "point_key",
    "point_json",
    "fingerprint",
    "repeat_index",
    "started_at",
    "finished_at",
    "host",
    "kernel",
    "env_json",
    "bed_json",
    "error",
    "notes_json",
)


def packed_runs(db: Reader, rows: Sequence[Mapping[str, Any]], kinds: dict[int, Kind]) -> list[Packed]:
    """The runs of ``rows`` (runs rows, ``Store.row_pages``) as the rows an ingest writes,
    read on ``db`` one query per table per chunk, all as kept: environment and bed documents
    by ref (a delta's base too), metrics as their row (``KeptMetrics``), artifacts and
    series compressed; a body kept as text before compression existed is compressed as an
    import would. A run whose documents are kept in its row (before 0003) or were read
    already (``with_docs``) is packed from their text. ``kinds``: the source's metric kinds
    by id, read again into it when a run names one it lacks (added since)."""
    ids = [r["id"] for r in rows]
    mets: dict[int, KeptMetrics] = {}
    arts: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
    sers: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
    for part in chunks(ids):
        p: dict[str, Any] = {}
        of_part = " WHERE " + db.where_in("run_id", "id", part, p)
        for rid, enc, data in db.all("SELECT run_id, encoding, data FROM run_metrics" + of_part, p):
            data = bytes(data)
            kind_ids, _ = codec.metrics_columns(enc, data)
            if not kinds.keys() >= set(kind_ids):
                kinds.update({i: (n, u, d) for i, n, u, d in db.all(KINDS)})
            mets[rid] = KeptMetrics(kinds, (kind_ids, enc, data))  # the pairs made only if needed
        for rid, enc, data in db.all("SELECT run_id, encoding, data FROM run_series" + of_part, p):
            sers[rid].append({"run_id": 0, "encoding": enc, "data": bytes(data)})
        for a in db.maps(ARTIFACTS + of_part, p):
            arts[a["run_id"]].append(_artifact_row(a))
    kept = kept_docs(db, rows)
    texts: dict[str, str] | None = None  # decoded when a run is packed from its text
    out = []
    for r in rows:
        row = {c: r[c] for c in RUN_COLUMNS}
        check_row(RUNS, row, f"run {row['uuid']}")
        docs = None
        if r["env_ref"] and r["bed_ref"] and not r["env_json"] and not r["bed_json"]:
            row["env_ref"], row["bed_ref"] = r["env_ref"], r["bed_ref"]
            docs = {ref: kept[ref] for ref in (r["env_ref"], r["bed_ref"])}
            docs.update({b: kept[b] for e, d in list(docs.values()) if (b := codec.delta_base(e, d))})
        else:  # packed from the text, as an import would
            for ref, col in (("env_ref", "env_json"), ("bed_ref", "bed_json")):
                if r[ref] and not r[col]:
                    texts = texts if texts is not None else doc_texts(kept)
                    row[col] = texts[r[ref]]
        m = mets.get(r["id"])
        out.append(Packed(row, m or [], arts[r["id"]], sers[r["id"]], docs, m.kept if m else None))
    return out


def _artifact_row(a: Mapping[str, Any]) -> dict[str, Any]:
    """An artifacts row to insert, as kept (the run id set on insert)."""
    enc, body, data = a["encoding"], a["body"], a["data"]
    if enc == codec.IDENTITY:
        enc, body, data = codec.pack_body(body)
    return {
        "run_id": 0,
        "name": a["name"],
        "content_type": a["content_type"],
        "encoding": enc,
        "body": body,
        "data": None if data is None else bytes(data),
    }


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
