"""Many runs into the store at once (``iowall import``, ``db copy``, a fleet's results): each
run packed and checked outside any transaction, then written GROUP runs a statement, one
executemany per table, as the scale fill packs them (benchmarks/store_scale.py), instead of
nine statements a run (rates in docs/benchmarks.md, "Import rate"). ``iowall import`` writes
all its files in one transaction while they are still being read (``import_parts``: all or
nothing); the others commit GROUP runs a transaction.

Runs whose uuid the store has are skipped, also those another writer adds meanwhile (the
uuid's unique constraint decides). Writers take turns, and a writer that has to wait says so
(``waiting``) instead of failing: on SQLite the transaction takes the write lock first
(BEGIN IMMEDIATE, retried past the busy timeout), on PostgreSQL an advisory lock (two
importers inserting the same uuids in different orders would otherwise deadlock)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Float, Integer, LargeBinary, String, Table, Text, select, text
from sqlalchemy.exc import IntegrityError

from ..vocab.errors import UserError
from . import codec
from . import schema as t
from .db import Store
from .gcpause import gc_paused
from .packing import Kind, Packed, metric_kinds, metrics_row, pack_run
from .rows import CHUNK
from .write import IMPORT_LOCK, Waiting, delta_base, dialect_insert, kind_ids, sqlite_write_turn

#: Runs a statement, and a transaction where each group commits (``db copy``, a fleet's
#: results): a concurrent writer waits for one group's writes (0.2 s), and an interrupted
#: copy keeps every group it finished (the next one skips them).
GROUP = 500


class Packable(Protocol):
    """What ``import_runs`` takes: a ``Run``, or a bundle's run model (with ``pack_model``)."""

    @property
    def uuid(self) -> str: ...


R = TypeVar("R", bound=Packable)


def add_new_runs(
    store: Store,
    runs: Sequence[R],
    *,
    done: Callable[[int], None] | None = None,
    waiting: Waiting | None = None,
    group: int = GROUP,
    pack: Callable[[R, set[tuple[str, ...]]], Packed] = pack_run,  # type: ignore[assignment]
) -> int:
    """Add the runs of ``runs`` the store lacks (by uuid), ``group`` a transaction, under new
    store ids; how many it added. ``done(n)`` after each group of ``n`` runs; ``pack`` makes
    a run's rows (``pack_run`` for a ``Run``)."""
    with gc_paused():
        return _add_new_runs(store, runs, done, waiting, group, pack)


def import_runs(
    store: Store,
    runs: Sequence[R],
    *,
    done: Callable[[int], None] | None = None,
    waiting: Callable[[str], None] | None = None,
    pack: Callable[[R, set[tuple[str, ...]]], Packed] = pack_run,  # type: ignore[assignment]
) -> tuple[int, int]:
    """Add the runs whose uuid the store lacks, under new store ids (a run's ``id`` is not
    stored), a group of runs a transaction (``store.ingest``: ``done`` after each, ``waiting``
    when the store is busy); returns (added, skipped as already present). Running it twice
    adds nothing; a run another writer adds meanwhile is skipped too."""
    seen: set[str] = set()
    new = []
    for r in runs:  # once each: the store decides about the rest, inside its transaction
        if not r.uuid or r.uuid not in seen:
            seen.add(r.uuid)
            new.append(r)
    added = add_new_runs(store, new, done=done, waiting=waiting, pack=pack)
    return added, len(runs) - added


def _add_new_runs(
    store: Store,
    runs: Sequence[R],
    done: Callable[[int], None] | None,
    waiting: Waiting | None,
    group: int,
    pack: Callable[[R, set[tuple[str, ...]]], Packed],
) -> int:
    added = 0
    checked: set[tuple[str, ...]] = set()
    for lo in range(0, len(runs), group):
        part = runs[lo : lo + group]
        with store.engine.connect() as conn:  # not packed when stored already (a re-import)
            stored = _stored_uuids(conn, [r.uuid for r in part if r.uuid])
        added += write_group(store, [pack(r, checked) for r in part if r.uuid not in stored], added, waiting)
        if done is not None:
            done(len(part))
    return added


def add_new_packed(
    store: Store,
    groups: Iterable[Sequence[Packed]],
    *,
    done: Callable[[int], None] | None = None,
    waiting: Waiting | None = None,
) -> int:
    """Add the runs of ``groups`` (packed already: ``store.copy`` reads them packed from
    another store) the store lacks, a group a transaction; how many it added."""
    added = 0
    with gc_paused():
        for packed in groups:
            added += write_group(store, packed, added, waiting)
            if done is not None:
                done(len(packed))
    return added


def import_parts(store: Store, parts: Iterable[Sequence[Packed]], *, waiting: Waiting | None = None) -> int:
    """Add the runs of ``parts`` (a bundle file's runs each, packed as they are read) the
    store lacks, all in one transaction that holds the store's write turn from the first
    part on; how many runs it added. Each part is written while the next ones are still
    being read and checked, and the commit comes after the last: a part that fails (its
    file's UserError, an interrupt) leaves the store as it was, so an import is all or
    nothing. Other writers wait meanwhile, and say so (``write.sqlite_write_turn``)."""
    added = 0
    with _refusals(store, 0), gc_paused(), ExitStack() as turn:
        conn: Connection | None = None
        for part in parts:
            if part and conn is None:
                conn = turn.enter_context(_transaction(store, waiting))
            for lo in range(0, len(part), GROUP):
                assert conn is not None
                added += _write(conn, part[lo : lo + GROUP])
    return added


def write_group(store: Store, packed: Sequence[Packed], before: int, waiting: Waiting | None) -> int:
    """Write ``packed`` in one transaction holding the store's write turn; how many runs it
    added (those stored meanwhile are skipped). A run the store refuses is a UserError that
    says how many runs (``before``) this import had added already."""
    if not packed:
        return 0
    with _refusals(store, before), _transaction(store, waiting) as conn:
        return _write(conn, packed)


@contextmanager
def _refusals(store: Store, before: int) -> Iterator[None]:
    """A run the store refuses (a constraint) as a UserError that names the constraint and
    says what was kept: the ``before`` runs added by earlier transactions."""
    try:
        yield
    except Exception as e:
        # the driver's own error too: on PostgreSQL the runs go in by the driver (_pg_insert)
        if not isinstance(
            e, (IntegrityError, getattr(store.engine.dialect.loaded_dbapi, "IntegrityError", ()))
        ):
            raise
        what = str(getattr(e, "orig", e)).splitlines()[0]
        kept = (
            "nothing was imported"
            if not before
            else f"{before} runs before it were imported (importing again skips them)"
        )
        raise UserError(f"import into {store.shown}: the store refused a run ({what}); {kept}") from None


@contextmanager
def _transaction(store: Store, waiting: Waiting | None) -> Iterator[Connection]:
    """A transaction that holds the store's write turn from its start."""
    if store.engine.dialect.name == "postgresql":
        with store.engine.begin() as conn:
            lock = {"k": IMPORT_LOCK}
            if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), lock).scalar_one():
                _say(waiting, store, "another import is writing to it")
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), lock)
            yield conn
        return
    with sqlite_write_turn(store.engine, store.shown, waiting) as conn:
        yield conn


def _say(waiting: Waiting | None, store: Store, why: str) -> None:
    if waiting is not None:
        waiting(f"waiting for {store.shown}: {why}")


def _write(conn: Connection, packed: Sequence[Packed]) -> int:
    """Insert the runs of ``packed`` the store lacks, on ``conn`` (the caller's transaction);
    how many it inserted."""
    by_uuid = {p.row["uuid"]: p for p in packed}
    stored = _stored_uuids(conn, list(by_uuid))
    todo = [p for u, p in by_uuid.items() if u not in stored]
    if not todo:
        return 0
    docs = _pack_docs(conn, [p for p in todo if p.docs is None])
    for p in todo:  # documents copied as another store kept them
        docs.update(p.docs or {})
    if docs:
        rows = [{"ref": r, "encoding": e, "data": d} for r, (e, d) in sorted(docs.items())]
        if conn.dialect.name == "postgresql":
            _pg_insert(conn, t.run_docs, rows, "ref")
        else:
            ins = dialect_insert(conn)(t.run_docs).on_conflict_do_nothing(index_elements=["ref"])
            conn.execute(ins, rows)
    if conn.dialect.name == "postgresql":
        got = _pg_insert(conn, t.runs, [p.row for p in todo], "uuid", "id, uuid")
    else:
        ins = (
            dialect_insert(conn)(t.runs)
            .on_conflict_do_nothing(index_elements=["uuid"])
            .returning(t.runs.c.id, t.runs.c.uuid)
        )
        got = list(conn.execute(ins, [p.row for p in todo]))
    ids = {u: int(i) for i, u in got}  # a uuid added meanwhile: absent
    named: set[Kind] = set()
    for p in todo:
        named.update(metric_kinds(p.metrics))
    kinds = kind_ids(conn, named, lambda: _packed_order(todo))
    mets: list[dict[str, Any]] = []
    arts: list[dict[str, Any]] = []
    sers: list[dict[str, Any]] = []
    for p in todo:
        rid = ids.get(p.row["uuid"])
        if rid is None:
            continue
        if p.metrics:
            mets.append(metrics_row(rid, p, kinds))
        for r in p.artifacts:
            r["run_id"] = rid  # the run's rows, made for this insert: set, not copied
        for r in p.series:
            r["run_id"] = rid
        arts.extend(p.artifacts)
        sers.extend(p.series)
    for table, rows in ((t.run_metrics, mets), (t.artifacts, arts), (t.series, sers)):
        if rows and conn.dialect.name == "postgresql":
            _copy(conn, table, rows)
        elif rows:
            _insert_many(conn, table, rows)
    return len(ids)


def _packed_order(todo: Sequence[Packed]) -> dict[Kind, int]:
    """Each metric kind's id where the runs were packed (``kind_ids``' order)."""
    return {
        k: i
        for p in todo
        if p.kept_metrics
        for k, i in zip(metric_kinds(p.metrics), p.kept_metrics[0], strict=True)
    }


def _insert_many(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Rows into a SQLite table by the driver's executemany: SQLAlchemy's would process
    each row's parameters (a fifth of the writing)."""
    cols = list(rows[0])
    sql = f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    conn.exec_driver_sql(sql, list(map(operator.itemgetter(*cols), rows)))


def _pg_insert(
    conn: Connection, table: Table, rows: list[dict[str, Any]], conflict: str, returning: str = ""
) -> list[tuple[Any, ...]]:
    """Rows into a PostgreSQL table, those whose ``conflict`` key is there already skipped, as
    one INSERT of unnest() over a column array each: a statement of a placeholder a column,
    not a multi-row VALUES of one a value (psycopg parses that statement in Python: a third
    of the time of writing a 500-run group). Returns the ``returning`` columns of each row."""
    cols = list(rows[0])
    arrays = []
    for c in cols:
        col = table.c[c]
        kind = float if isinstance(col.type, Float) else int if isinstance(col.type, Integer) else None
        values = [r[c] for r in rows]
        arrays.append(values if kind is None else [None if v is None else kind(v) for v in values])
    # %b: each array sent in binary, no quoting and escaping of every text in it
    types = ", ".join(f"%b::{table.c[c].type.compile(dialect=conn.dialect)}[]" for c in cols)
    sql = (
        f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT * FROM unnest({types}) "
        f"ON CONFLICT ({conflict}) DO NOTHING" + (f" RETURNING {returning}" if returning else "")
    )
    raw: Any = conn.connection.driver_connection
    with raw.cursor() as cur:
        cur.execute(sql, arrays)
        return list(cur.fetchall()) if returning else []


def _copy(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Rows into a PostgreSQL table by COPY on the transaction's connection (psycopg's
    executemany sends a statement a row: a third of the time of a 500-run group), in
    binary: compressed blobs go as they are, not as hex text for the server to decode."""
    cols = list(rows[0])
    raw: Any = conn.connection.driver_connection
    sql = f"COPY {table.name} ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)"
    with raw.cursor() as cur, cur.copy(sql) as cp:
        cp.set_types([_BINARY_TYPE[type(table.c[c].type)] for c in cols])
        for row in map(operator.itemgetter(*cols), rows):
            cp.write_row(row)


#: The PostgreSQL type a column of each kind is written as by a binary COPY.
_BINARY_TYPE = {Integer: "int4", String: "text", Text: "text", LargeBinary: "bytea", Float: "float8"}


def _stored_uuids(conn: Connection, uuids: list[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(uuids), CHUNK):
        found.update(
            conn.execute(select(t.runs.c.uuid).where(t.runs.c.uuid.in_(uuids[i : i + CHUNK]))).scalars()
        )
    return found


def _pack_docs(conn: Connection, todo: list[Packed]) -> dict[str, tuple[str, bytes]]:
    """Each run's environment and bed document, by ref (set in its row, the text cleared),
    packed as ``write.insert_run`` packs them one run at a time: an environment as a delta
    against its host's newest one kept whole; the documents new to the store, to insert."""
    refs = {codec.doc_ref(p.row[c]): p.row[c] for p in todo for c in ("env_json", "bed_json")}
    stored: dict[str, tuple[str, bytes]] = {}
    names = list(refs)
    for i in range(0, len(names), CHUNK):
        q = select(t.run_docs).where(t.run_docs.c.ref.in_(names[i : i + CHUNK]))
        stored.update({r.ref: (r.encoding, bytes(r.data)) for r in conn.execute(q)})
    new: dict[str, tuple[str, bytes]] = {}
    bases: dict[str, tuple[str, str] | None] = {}
    for p in todo:
        row, host = p.row, p.row["host"]
        if host not in bases:
            bases[host] = delta_base(conn, host)
        ref = codec.doc_ref(row["env_json"])
        if ref in stored or ref in new:  # kept already: its base is the host's from now on
            enc, data = stored.get(ref) or new[ref]
            base_ref = codec.delta_base(enc, data)
            bases[host] = (ref, refs[ref]) if base_ref is None else _doc_text(conn, base_ref, new, refs)
        else:
            base = bases[host]
            packed = codec.pack_delta(row["env_json"], *base) if base else None
            _, enc, data = packed or codec.pack_doc(row["env_json"])
            new[ref] = (enc, data)
            if packed is None:
                bases[host] = (ref, row["env_json"])
        row["env_ref"], row["env_json"] = ref, ""
        bed_ref, enc, data = codec.pack_doc(row["bed_json"])
        if bed_ref not in stored:
            new.setdefault(bed_ref, (enc, data))
        row["bed_ref"], row["bed_json"] = bed_ref, ""
    return new


def _doc_text(
    conn: Connection, ref: str, new: dict[str, tuple[str, bytes]], texts: dict[str, str]
) -> tuple[str, str] | None:
    """(ref, text) of a whole document, stored or about to be; None if there is none."""
    if ref in texts:
        return ref, texts[ref]
    if ref in new:
        return ref, codec.unpack_doc(*new[ref])
    doc = conn.execute(select(t.run_docs).where(t.run_docs.c.ref == ref)).first()
    return None if doc is None else (ref, codec.unpack_doc(doc.encoding, doc.data))
