"""The store: SQLite by default, PostgreSQL by URL. Reads are SQL text run on either backend's
DB-API connection (``store.reader``: a SQLite store is read without SQLAlchemy); writes are
SQLAlchemy Core and the schema is kept current by Alembic migrations (``store.write``, imported
when first needed)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..machine import spooldir
from ..machine.dirs import db_url, default_db_url, redact_url
from ..model import Artifact, Run
from ..vocab.errors import NotFound, StoreFailed, UserError
from . import codec
from .faults import RETRY_S, connection_lost, failure_text, read_only_fs, room_problem, say
from .reader import Reader, connect_pg, connect_sqlite, sqlite_file
from .rows import (
    ARTIFACTS,
    CHUNK,
    EVERY_RUN,
    MetricNames,
    RunFilter,
    and_where,
    artifact,
    check_limit,
    env_commit,
    load,
    uuids_in,
    where,
    with_docs,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

#: The newest migration's revision id: a store already there opens without alembic or
#: SQLAlchemy (tests/unit/test_store_head.py checks it against the migration scripts).
HEAD = "0005"

#: Runs a listing counts at most beyond what it shows ("more than 10,000 older runs"): a
#: count of every matching run read a million index entries on PostgreSQL (0.14 s of the
#: dashboard's runs page at a million runs, 0.05 s at 100,000: docs/benchmarks.md).
COUNTED = 10_000


class Store:
    """Runs, their metrics, raw artifacts and series, in one database."""

    def __init__(self, url: str | None = None) -> None:
        self.url = db_url(url) if url else default_db_url()
        self.dialect = "postgresql" if self.url.startswith(("postgresql", "postgres:")) else "sqlite"
        self._file = sqlite_file(self.url)
        self._engine: Engine | None = None
        if self._file is None and self.dialect == "sqlite":  # in memory: one engine holds it
            self._engine = self._make_engine()
        problem = None if self._file is None or os.path.exists(self._file) else room_problem(self._file)
        if problem:  # a new store where a job could not keep its runs: refused before a file is made
            raise StoreFailed(f"the store {self.shown} {problem}")
        if self._file is not None and read_only_fs(self._file):
            raise StoreFailed(
                f"the store {self.shown} is on a read-only filesystem: SQLite cannot open its "
                "write-ahead log there (copy the file somewhere writable to read it)"
            )
        with none_left_if_failed(self.url):  # a store that cannot be made is not left half made
            if not self._at_head():
                from .write import migrate  # the SQLAlchemy half: only when there is work for it

                migrate(self.engine, self.shown)
        spooldir.opened(self.url, self)  # runs the store could not take before: imported now

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (writes, migrations; PostgreSQL reads once it is made), made
        when first used."""
        if self._engine is None:
            self._engine = self._make_engine()
        return self._engine

    def close(self) -> None:
        """Let go of the connections the store's engine holds, if one was made (a store in
        memory keeps its engine: closing it would drop the store)."""
        if self._engine is not None and self._file is not None:
            self._engine.dispose()

    def _make_engine(self) -> Engine:
        from .write import make_engine  # 0.2 s of SQLAlchemy that reading SQLite does not need

        return make_engine(self.url, self.shown)

    @property
    def shown(self) -> str:
        """The store's URL as every message and page shows it: without its password."""
        return redact_url(self.url)

    @classmethod
    def existing(cls, url: str | None = None) -> Store:
        """The store ``url`` names (default: the user's), to read: a SQLite file that does not
        exist is an error, not a new empty store (a mistyped ``--db`` made one and answered
        "No runs")."""
        full = db_url(url) if url else default_db_url()
        path = sqlite_file(full)
        if path is not None and not os.path.exists(path):
            raise UserError(
                f"no store at {path}: nothing has been stored there (run, limits "
                "and import make a store); check --db or IOWALL_DB"
            )
        return cls(full)

    @contextmanager
    def reading(self) -> Iterator[Reader]:
        """A connection to read with, on the driver itself: sqlite3 on a SQLite file; on
        PostgreSQL psycopg (a connection of its own), or one from the engine's pool once the
        engine is made (a process that writes, the dashboard's server: ``pooled``); SQLite
        in memory through the engine (its one connection holds the database)."""
        if self._file is not None:
            con: Any = connect_sqlite(self._file)
        elif self._engine is None and self.dialect == "postgresql":
            con = connect_pg(self.url)
        else:
            with self.engine.connect() as conn:
                yield Reader(conn.connection.driver_connection, self.dialect)
            return
        try:
            yield Reader(con, self.dialect)
        finally:
            con.close()

    def pooled(self) -> Store:
        """This store with its PostgreSQL reads from a pool of connections kept open
        (SQLAlchemy's), for a process that reads many times (``iowall serve``; a SQLite file
        is opened per read, which costs nothing to speak of); returns itself."""
        self.engine  # noqa: B018  (made now: reading() takes its connections from then on)
        return self

    def _at_head(self) -> bool:
        """Whether the store's alembic_version is HEAD already (one query, no alembic); False
        when it cannot be read (a new store): migrate."""
        try:
            with self.reading() as db:
                return db.all("SELECT version_num FROM alembic_version") == [(HEAD,)]
        except Exception:  # no such table (a new store) or an unreachable one: alembic says
            return False

    # -- writing ---------------------------------------------------------------------------
    def add_run(self, run: Run, waiting: Callable[[str], None] | None = None) -> int:
        """Insert a run with everything it carries; returns its id."""
        return self.add_runs([run], waiting)[0]

    def add_runs(self, runs: Sequence[Run], waiting: Callable[[str], None] | None = None) -> list[int]:
        """Insert several runs in one transaction (all or none); keeps ``run.uuid`` when set.
        On SQLite it waits for the write lock as long as another writer holds it (an import
        of many runs), telling ``waiting`` once, instead of failing after the busy timeout."""
        from .write import insert_run, sqlite_write_turn  # SQLAlchemy, when a store is written

        if self.dialect == "sqlite":
            with sqlite_write_turn(self.engine, self.shown, waiting) as conn:
                return [insert_run(conn, run) for run in runs]
        for wait in (*RETRY_S, None):
            try:
                with self.engine.begin() as conn:
                    return [insert_run(conn, run) for run in runs]
            except Exception as e:
                if wait is None or not connection_lost(e):
                    raise
                (waiting or say)(
                    f"the connection to {self.shown} was lost ({failure_text(e)}); trying again in {wait:g} s"
                )
                self.engine.dispose()  # the pool's connections are dead: new ones
                time.sleep(wait)
        raise AssertionError("unreachable")

    def check_room(self) -> None:
        """Refuse, before a job measures, a store that could not keep its runs: a SQLite
        file on a filesystem with less than ``ROOM_BYTES`` free or mounted read-only, a file
        or directory it cannot write, a PostgreSQL server in read-only mode. StoreFailed
        with one line saying which."""
        if self._file is not None:
            problem = room_problem(self._file)
            if problem:
                raise StoreFailed(f"the store {self.shown} {problem}")
        elif self.dialect == "postgresql":
            with self.engine.connect() as conn:
                ro = conn.exec_driver_sql("SHOW transaction_read_only").scalar()
            if str(ro).lower() == "on":
                raise StoreFailed(
                    f"the store {self.shown} is read-only (a standby, or default_transaction_read_only)"
                )

    # -- reading ---------------------------------------------------------------------------
    def runs(
        self, flt: RunFilter = EVERY_RUN, *, with_series: bool = False, metrics: MetricNames = None
    ) -> list[Run]:
        """Runs matching ``flt``, oldest first, with their metrics (those ``metrics`` keeps,
        by name, when given) and, on demand, series."""
        check_limit(flt)
        p: dict[str, Any] = {}
        newest = flt.limit is not None and flt.commit is None
        q = "SELECT * FROM runs" + where(flt, self.dialect, p)
        if newest:
            p["lim"] = flt.limit
            q += " ORDER BY id DESC LIMIT :lim"
        else:
            q += " ORDER BY id"
        with self.reading() as db:
            rows = with_docs(db, db.maps(q, p))
            if newest:
                rows.reverse()
            if flt.commit is not None:  # kept in the environment, not a column
                rows = [r for r in rows if env_commit(r) == flt.commit]
                if flt.limit is not None:
                    rows = rows[len(rows) - flt.limit :] if flt.limit else []
            return load(db, rows, with_series=with_series, metrics=metrics)

    def iter_runs(
        self,
        flt: RunFilter = EVERY_RUN,
        *,
        with_series: bool = False,
        with_artifacts: bool = False,
        page: int = CHUNK,
    ) -> Iterator[Run]:
        """Runs matching ``flt`` (its ``limit`` ignored), oldest first, ``page`` at a time by
        keyset (id > the last one seen): memory bounded by a page, whatever the store holds."""
        for db, rows in self.row_pages(flt, page=page):
            yield from load(db, rows, with_series=with_series, with_artifacts=with_artifacts)

    def row_pages(
        self, flt: RunFilter = EVERY_RUN, *, page: int = CHUNK, docs: bool = True
    ) -> Iterator[tuple[Reader, list[dict[str, Any]]]]:
        """The rows of the runs ``flt`` selects (its ``limit`` ignored; their documents read,
        as ``with_docs``, unless ``docs`` is False and ``flt`` selects no commit), oldest
        first, ``page`` at a time by keyset, each page with the open reader to read the rest
        of its runs on (before the next page is asked for)."""
        after = 0
        while True:
            p: dict[str, Any] = {"after": after, "n": page}
            q = "SELECT * FROM runs" + and_where(where(flt, self.dialect, p), "id > :after")
            with self.reading() as db:
                rows = db.maps(q + " ORDER BY id LIMIT :n", p)
                if docs or flt.commit is not None:
                    rows = with_docs(db, rows)
                if not rows:
                    return
                after = rows[-1]["id"]
                if flt.commit is not None:
                    rows = [r for r in rows if env_commit(r) == flt.commit]
                yield db, rows

    def page_ids(self, flt: RunFilter, *, limit: int = 50, **window: float | None) -> list[int]:
        """Ids of the newest ``limit`` runs matching ``flt`` in ``window`` (``before``: an id
        below it; ``since``, ``until``: a start time in [since, until)), newest first: one
        LIMITed query in the id order of an index (keyset paging), whatever the store's size.
        ``flt.commit`` and ``flt.limit`` are not applied here."""
        p: dict[str, Any] = {"n": max(0, limit)}
        q = _window(where(flt, self.dialect, p), p, **window)
        with self.reading() as db:
            return [int(i) for (i,) in db.all(f"SELECT id FROM runs{q} ORDER BY id DESC LIMIT :n", p)]

    def count(self, flt: RunFilter = EVERY_RUN, *, at_most: int | None = None, **window: float | None) -> int:
        """How many runs ``flt`` selects (its ``limit`` ignored; every stored run by default)
        in ``window`` (as ``page_ids``); with ``at_most``, counting stops past it (the answer
        is then ``at_most + 1``), so that a page's count reads a bounded number of index
        entries whatever the store holds."""
        if flt.commit is not None:
            before = window.get("before")
            n = sum(1 for r in self.iter_runs(flt) if before is None or (r.id or 0) < before)
            return n if at_most is None else min(n, at_most + 1)
        p: dict[str, Any] = {}
        q = _window(where(flt, self.dialect, p), p, **window)
        if at_most is not None:
            p["cap"] = at_most + 1
            q = f"SELECT count(*) FROM (SELECT 1 FROM runs{q} LIMIT :cap) AS capped"
        else:
            q = "SELECT count(*) FROM runs" + q
        with self.reading() as db:
            return int(db.scalar(q, p))

    def page(
        self, flt: RunFilter, *, number: int, size: int, before: int | None = None, at_most: int | None = None
    ) -> tuple[list[Run], int]:
        """Page ``number`` (1: the newest ``size`` runs) of the runs matching ``flt`` with an id
        below ``before`` (every run when None), oldest first within the page, and how many
        runs match (below ``before``) in all (counted up to ``at_most`` past the page, as
        ``count`` does). No OFFSET: page N is the last ``size`` of the
        newest N × ``size`` ids, read from an index alone (``page_ids``), then its runs by id;
        ``before`` (the keyset) makes any page cost what the first does."""
        if number < 1 or size < 1:
            raise UserError(f"page {number} of {size} runs? give a page and a size from 1")
        total = self.count(flt, before=before, at_most=at_most)
        if flt.commit is not None:  # filtered in Python: page over the matching ids
            ids = [
                r.id for r in self.iter_runs(flt) if r.id is not None and (before is None or r.id < before)
            ]
            ids = ids[max(0, len(ids) - number * size) : len(ids) - (number - 1) * size]
        else:
            ids = self.page_ids(flt, before=before, limit=number * size)[(number - 1) * size :]
            ids.reverse()
        return (self.runs(RunFilter(ids=ids)) if ids else []), total

    def metric_names(self, flt: RunFilter = EVERY_RUN) -> list[str]:
        """Every metric name of the runs ``flt`` selects, in the order ``iter_runs`` first
        meets them (a run's metrics by name): the columns of a CSV listing, found in bounded
        memory."""
        if flt.commit is not None:
            return list(dict.fromkeys(m.name for r in self.iter_runs(flt) for m in r.metrics))
        first: dict[str, int] = {}
        after = 0
        with self.reading() as db:
            kinds = dict(db.all("SELECT id, name FROM metric_kinds"))
            while True:
                p: dict[str, Any] = {"after": after, "n": CHUNK}
                q = "SELECT id FROM runs" + and_where(where(flt, self.dialect, p), "id > :after")
                ids = [i for (i,) in db.all(q + " ORDER BY id LIMIT :n", p)]
                if not ids:
                    break
                pm: dict[str, Any] = {}
                sql = "SELECT run_id, encoding, data FROM run_metrics WHERE " + db.where_in(
                    "run_id", "id", ids, pm
                )
                for rid, enc, data in db.all(sql, pm):  # keyset pages of the selected runs: bounded
                    for kind, _ in codec.unpack_metrics(enc, bytes(data)):
                        if first.setdefault(kinds[kind], rid) > rid:
                            first[kinds[kind]] = rid
                after = ids[-1]
        return [name for name, _ in sorted(first.items(), key=lambda kv: (kv[1], kv[0]))]

    def get_run(self, run_id: int) -> Run:
        """One run with metrics, series and artifacts; UserError if there is no such run."""
        with self.reading() as db:
            rows = with_docs(db, db.maps("SELECT * FROM runs WHERE id = :id", {"id": run_id}))
            if not rows:
                raise NotFound(f"no run {run_id} in {self.shown}")
            return load(db, rows, with_series=True, with_artifacts=True)[0]

    def artifact(self, run_id: int, name: str) -> Artifact | None:
        """One raw artifact of a run (e.g. ``fio.json``)."""
        with self.reading() as db:
            a = db.maps(ARTIFACTS + " WHERE run_id = :id AND name = :name", {"id": run_id, "name": name})
        return artifact(a[0]) if a else None

    def artifacts_of(self, run_ids: Sequence[int]) -> dict[int, tuple[Artifact, ...]]:
        """Every raw artifact of many runs at once, by run id, sorted by name (for export)."""
        out: dict[int, list[Artifact]] = {int(i): [] for i in run_ids}
        ids = list(out)
        with self.reading() as db:
            for i in range(0, len(ids), CHUNK):
                p: dict[str, Any] = {}
                for a in db.maps(
                    ARTIFACTS + " WHERE " + db.where_in("run_id", "id", ids[i : i + CHUNK], p), p
                ):
                    out[a["run_id"]].append(artifact(a))
        return {k: tuple(sorted(v, key=lambda a: a.name)) for k, v in out.items()}

    def known_uuids(self, uuids: Iterable[str]) -> set[str]:
        """Which of ``uuids`` are already stored (import skips those runs)."""
        with self.reading() as db:
            return uuids_in(db, sorted(set(uuids)))

    def id_of_uuid(self, uuid: str) -> int | None:
        """The id of the run with this uuid, if stored."""
        with self.reading() as db:
            rid = db.scalar("SELECT id FROM runs WHERE uuid = :u", {"u": uuid})
        return None if rid is None else int(rid)

    def labels(self) -> list[str]:
        """Distinct labels, oldest first. Read from the label index alone (a loose index scan:
        the next label after each, then its first run by the (label, id) index of 0005): a
        query per label, none over every run."""
        with self.reading() as db:
            found = db.all(
                "WITH RECURSIVE l(label) AS ("
                " SELECT min(label) FROM runs"
                " UNION ALL"
                " SELECT (SELECT min(r.label) FROM runs r WHERE r.label > l.label) FROM l"
                " WHERE l.label IS NOT NULL)"
                " SELECT label, (SELECT min(r.id) FROM runs r WHERE r.label = l.label) FROM l"
                " WHERE label IS NOT NULL"
            )
        return [label for label, _ in sorted(found, key=lambda r: r[1])]


def _window(
    where_sql: str,
    params: dict[str, Any],
    before: float | None = None,
    since: float | None = None,
    until: float | None = None,
) -> str:
    """``where_sql`` with an id below ``before`` and a start time in [since, until), each when
    given."""
    if before is not None:
        params["before"] = before
        where_sql = and_where(where_sql, "id < :before")
    if since is not None:
        params["since"] = since
        where_sql = and_where(where_sql, "started_at >= :since")
    if until is not None:
        params["until"] = until
        where_sql = and_where(where_sql, "started_at < :until")
    return where_sql


@contextmanager
def none_left_if_failed(url: str) -> Iterator[None]:
    """Around a command that may make the SQLite store at ``url``: if there was none and the
    command fails or is interrupted (an import's bad file, Ctrl-C) before a run is in it,
    none is left (``remove_if_empty``)."""
    path = sqlite_file(url)
    new = path if path is not None and not os.path.exists(path) else None
    try:
        yield
    except BaseException:
        if new is not None:
            remove_if_empty(new)
        raise


def remove_if_empty(path: str) -> None:
    """Remove the SQLite store at ``path``, its WAL too, if it holds no run: one a command
    made before it failed (``iowall import`` into a store that was not there), also one
    interrupted while its tables were being made (no ``runs`` table yet, or no byte yet). A
    store with runs, or one that cannot be read, is left as it is: the command's own error
    is what the user sees."""
    if not os.path.exists(path):
        return
    try:
        con = connect_sqlite(path)
        try:
            made = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
            ).fetchone()
            n = con.execute("SELECT count(*) FROM runs").fetchone()[0] if made else 0
        finally:
            con.close()
        if n == 0:
            for f in (path, f"{path}-wal", f"{path}-shm"):
                if os.path.exists(f):
                    os.unlink(f)
    except (sqlite3.Error, OSError):
        pass
