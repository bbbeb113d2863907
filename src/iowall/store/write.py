"""The store's SQLAlchemy half: the engine, the migrations (Alembic) and the inserts of a run.
Imported only when a store is written or migrated, or read on PostgreSQL: reading a SQLite
store needs none of it (``store.reader``)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, select, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import OperationalError

from ..machine.dirs import redact_url
from ..model import Run
from ..vocab.errors import StoreFailed, UserError
from . import codec
from . import schema as t
from .faults import machine_fault
from .packing import metrics_row, pack_run
from .rows import CHUNK

MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")

#: The advisory lock key that serialises migrations on PostgreSQL ("iowall" in ASCII).
MIGRATE_LOCK = 0x696F77616C6C
#: The advisory lock key that serialises imports (``store.ingest``) on PostgreSQL.
IMPORT_LOCK = MIGRATE_LOCK + 1


def make_engine(url: str, shown: str) -> Engine:
    """The SQLAlchemy engine of a store URL (``shown``: the URL as messages show it)."""
    pg = url.startswith(("postgresql", "postgres:"))
    try:
        engine = create_engine(
            engine_url(url), future=True, connect_args={"connect_timeout": 10} if pg else {}
        )
    except Exception as e:  # bad URL syntax, missing driver
        raise UserError(f"cannot open store {shown!r}: {redact_url(str(e))}") from e
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def migrate(engine: Engine, shown: str) -> None:
    """Bring the store to the newest migration (Alembic), one migrator at a time."""
    from alembic import command  # imported here: alembic costs 0.2 s at every open
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # one migrator at a time; the rest wait
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATE_LOCK})
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
            else:
                _sqlite_migrate(conn, lambda: command.upgrade(cfg, "head"), cfg)
    except Exception as e:
        said = f"cannot open store {shown!r}: {e.__class__.__name__}: {redact_url(str(e).splitlines()[0])}"
        if machine_fault(e):  # not the user's input: the disk or the server
            raise StoreFailed(said) from e
        raise UserError(said) from e


def insert_run(conn: Connection, run: Run) -> int:
    """Insert one run on ``conn``; the caller owns the transaction (``store.ingest``
    inserts many at once)."""
    p = pack_run(run)
    row = p.row
    docs = []
    for col, ref in (("env_json", "env_ref"), ("bed_json", "bed_ref")):  # kept once (codec)
        base = delta_base(conn, row["host"]) if col == "env_json" else None
        packed = codec.pack_delta(row[col], *base) if base else None
        row[ref], enc, data = packed or codec.pack_doc(row[col])
        row[col] = ""
        docs.append({"ref": row[ref], "encoding": enc, "data": data})
    conn.execute(dialect_insert(conn)(t.run_docs).on_conflict_do_nothing(index_elements=["ref"]), docs)
    rid = int(conn.execute(t.runs.insert().values(**row)).inserted_primary_key[0])  # type: ignore[index]
    for r in (*p.artifacts, *p.series):
        r["run_id"] = rid
    if p.metrics:
        kinds = kind_ids(conn, {k for k, _ in p.metrics})
        conn.execute(t.run_metrics.insert(), [metrics_row(rid, p, kinds)])
    if p.artifacts:
        conn.execute(t.artifacts.insert(), p.artifacts)
    if p.series:
        conn.execute(t.series.insert(), p.series)
    return rid


def insert_report(conn: Connection, row: dict[str, Any]) -> None:
    """Insert a report's row (``store.reports.add_report``)."""
    conn.execute(t.reports.insert().values(**row))


def engine_url(url: str) -> str:
    """The SQLAlchemy URL of a store URL: ``postgresql://`` and ``postgres://`` go through
    psycopg 3 (the driver iowall depends on), not SQLAlchemy's default psycopg2."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def kind_ids(
    conn: Connection,
    kinds: set[tuple[str, str, str]],
    order: Callable[[], Mapping[tuple[str, str, str], int]] | None = None,
) -> dict[tuple[str, str, str], int]:
    """The metric_kinds id of each (name, unit, direction), added when missing (a kind
    another writer adds meanwhile is taken, not duplicated: the unique constraint decides),
    in the ``order`` of their ids where the runs were packed (then an empty store numbers
    them the same, and each run's metrics row is kept as it came), by name otherwise."""
    k = t.metric_kinds

    def known() -> dict[tuple[str, str, str], int]:
        found: dict[tuple[str, str, str], int] = {}
        names = sorted({n for n, _, _ in kinds})
        for i in range(0, len(names), CHUNK):
            for r in conn.execute(select(k).where(k.c.name.in_(names[i : i + CHUNK]))):
                if (r.name, r.unit, r.direction) in kinds:
                    found[r.name, r.unit, r.direction] = r.id
        return found

    have = known() if kinds else {}
    missing = list(kinds - set(have))
    if missing:
        at = order() if order is not None else {}
        missing.sort(key=lambda kind: (at.get(kind, math.inf), kind))
        conn.execute(
            dialect_insert(conn)(k).on_conflict_do_nothing(index_elements=["name", "unit", "direction"]),
            [{"name": n, "unit": u, "direction": d} for n, u, d in missing],
        )
        have = known()
    return have


def delta_base(conn: Connection, host: str) -> tuple[str, str] | None:
    """(ref, text) of the document a new environment of ``host`` is compressed against: that
    of the host's newest run, or the one that is compressed against (one level only)."""
    ref = conn.execute(
        select(t.runs.c.env_ref).where(t.runs.c.host == host).order_by(t.runs.c.id.desc()).limit(1)
    ).scalar_one_or_none()
    for _ in range(2):
        if ref is None:
            return None
        doc = conn.execute(select(t.run_docs).where(t.run_docs.c.ref == ref)).first()
        if doc is None:
            return None
        if doc.encoding == codec.DOC_ZLIB:
            return str(ref), codec.unpack_doc(doc.encoding, doc.data)
        ref = codec.delta_base(doc.encoding, doc.data)
    return None


def dialect_insert(conn: Connection) -> Any:
    """The INSERT that knows ON CONFLICT, for this connection's backend."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert  # only on PostgreSQL

        return pg_insert
    return sqlite_insert


def _sqlite_migrate(conn: Connection, upgrade: Callable[[], None], cfg: Any) -> None:
    """Run ``upgrade`` on SQLite in one BEGIN IMMEDIATE transaction: one migrator at a time
    (the others wait, busy_timeout, then find the store current), and all of it or none
    (the driver would otherwise commit each DDL statement by itself, so two processes
    opening a new store at once interleaved their CREATE TABLEs)."""
    with sqlite_transaction(conn, lambda: conn.exec_driver_sql("BEGIN IMMEDIATE")):
        cfg.attributes["connection"] = conn
        upgrade()


@contextmanager
def sqlite_transaction(conn: Connection, begin: Callable[[], Any]) -> Iterator[None]:
    """One transaction on a SQLite ``conn`` that ``begin`` starts (``BEGIN IMMEDIATE``: the
    write lock from the start), committed at the end or rolled back on any error. The
    driver is told to begin nothing itself meanwhile."""
    dbapi = conn.connection.driver_connection
    assert dbapi is not None
    level = dbapi.isolation_level
    dbapi.isolation_level = None  # the driver begins nothing: ``begin`` is the one
    try:
        begin()
        try:
            yield
        except BaseException:
            if not conn.invalidated:  # an interrupt inside the driver drops the connection,
                conn.exec_driver_sql("ROLLBACK")  # and SQLite rolls back as it closes
            raise
        conn.exec_driver_sql("COMMIT")
    finally:
        if not conn.invalidated:
            dbapi.isolation_level = level


#: How long a writer waits for the store, in all, before it gives up (a stuck writer).
WAIT_MAX = 600.0
#: How long a first attempt waits for SQLite's write lock before saying that it waits.
_FIRST_WAIT_MS = 200
#: SQLite's busy timeout on every connection (``_sqlite_pragmas``), restored after a wait.
_BUSY_MS = 30000

#: Told, once, that a writer waits for the store and why.
Waiting = Callable[[str], None]


@contextmanager
def sqlite_write_turn(engine: Engine, shown: str, waiting: Waiting | None = None) -> Iterator[Connection]:
    """A transaction on a SQLite store that holds its write lock from the start, taken when
    another writer lets go however long that writer holds it (an import writes all its runs
    in one transaction), up to WAIT_MAX: a writer waits and says so, it does not fail with
    'database is locked' after the busy timeout."""
    with engine.connect() as conn, sqlite_transaction(conn, lambda: _begin_immediate(conn, shown, waiting)):
        yield conn


def _begin_immediate(conn: Connection, shown: str, waiting: Waiting | None) -> None:
    """BEGIN IMMEDIATE: SQLite's write lock now, not at the first insert (a transaction that
    read first and writes second fails at once with 'database is locked' when another
    writer got there in between: no busy timeout helps it). Waits up to WAIT_MAX, saying so
    once when the first short wait is not enough."""
    start = time.monotonic()
    conn.exec_driver_sql(f"PRAGMA busy_timeout={_FIRST_WAIT_MS}")
    try:
        while True:
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except OperationalError as e:
                if "locked" not in str(e.orig) and "busy" not in str(e.orig):
                    raise
                if time.monotonic() - start > WAIT_MAX:
                    raise UserError(
                        f"{shown} stayed busy for {WAIT_MAX:.0f} s (another writer holds it): "
                        "nothing was written; try again"
                    ) from None
                if conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() != _BUSY_MS:
                    if waiting is not None:
                        waiting(f"waiting for {shown}: another process is writing to it")
                    conn.exec_driver_sql(f"PRAGMA busy_timeout={_BUSY_MS}")
    finally:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={_BUSY_MS}")


#: The page size of a new SQLite store: a run's compressed rows (a profile of about 2.5 KB,
#: its metrics and series of about 1 KB each) leave less unused room in 8 KiB pages than in
#: the default 4 KiB ones: 4,620 → 4,104 bytes of artifacts pages a run (benchmarks.md).
SQLITE_PAGE = 8192


def _sqlite_pragmas(dbapi_conn: Any, _rec: Any) -> None:
    """Page size (a new file only); foreign keys; WAL (readers never block the writer, a
    crash loses no committed run);
    a 30 s busy timeout, so two processes writing at once (a run and an import, two CI jobs)
    wait for each other instead of failing with 'database is locked'."""
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={_BUSY_MS}")  # first: switching to WAL waits for a writer too
    cur.execute(f"PRAGMA page_size={SQLITE_PAGE}")  # takes effect only in a new file
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.close()
