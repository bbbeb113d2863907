"""The store: SQLite by default, PostgreSQL by URL, one code path (SQLAlchemy Core), schema
kept current by Alembic migrations run on open."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    event,
    func,
    select,
    text,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..dirs import db_url, default_db_url, redact_url
from ..errors import UserError
from ..model import Artifact, Run
from . import codec
from . import schema as t
from .packing import metrics_row, pack_run
from .rows import (
    CHUNK,
    EVERY_RUN,
    KERNEL_SEPARATORS,
    RunFilter,
    artifact,
    check_limit,
    chunks,
    env_commit,
    load,
    where,
    with_docs,
)

_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


def kernel_matches(release: str, selector: str) -> bool:
    """Whether ``release`` (``uname -r``) is ``selector`` or starts with it followed by a
    separator (KERNEL_SEPARATORS)."""
    return release == selector or any(release.startswith(selector + sep) for sep in KERNEL_SEPARATORS)


class Store:
    """Runs, their metrics, raw artifacts and series, in one database."""

    def __init__(self, url: str | None = None) -> None:
        self.url = db_url(url) if url else default_db_url()
        pg = self.url.startswith(("postgresql", "postgres:"))
        try:
            self.engine: Engine = create_engine(
                engine_url(self.url), future=True, connect_args={"connect_timeout": 10} if pg else {}
            )
        except Exception as e:  # bad URL syntax, missing driver
            raise UserError(f"cannot open store {self.shown!r}: {redact_url(str(e))}") from e
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._migrate()

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
        path = full.removeprefix("sqlite:///")
        if full.startswith("sqlite:///") and path not in ("", ":memory:") and not os.path.exists(path):
            raise UserError(
                f"no store at {path}: nothing has been stored there (run, limits "
                "and import make a store); check --db or IOWALL_DB"
            )
        return cls(full)

    def _migrate(self) -> None:
        if self._at_head():
            return
        from alembic import command  # imported here: alembic costs 0.2 s at every open
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", _MIGRATIONS)
        try:
            with self.engine.begin() as conn:
                if conn.dialect.name == "postgresql":  # one migrator at a time; the rest wait
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATE_LOCK})
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, "head")
                else:
                    _sqlite_migrate(conn, lambda: command.upgrade(cfg, "head"), cfg)
        except Exception as e:
            raise UserError(
                f"cannot open store {self.shown!r}: {e.__class__.__name__}: "
                f"{redact_url(str(e).splitlines()[0])}"
            ) from e

    def _at_head(self) -> bool:
        """Whether the store's alembic_version is HEAD already, read without importing
        alembic (0.2 s a command); False when it cannot be read (a new store): migrate."""
        try:
            with self.engine.connect() as conn:
                found = conn.execute(text("SELECT version_num FROM alembic_version")).all()
        except Exception:  # no such table (a new store) or an unreachable one: alembic says
            return False
        return [tuple(r) for r in found] == [(HEAD,)]

    # -- writing ---------------------------------------------------------------------------
    def add_run(self, run: Run) -> int:
        """Insert a run with everything it carries; returns its id."""
        return self.add_runs([run])[0]

    def add_runs(self, runs: Sequence[Run]) -> list[int]:
        """Insert several runs in one transaction (all or none); keeps ``run.uuid`` when set."""
        ids: list[int] = []
        with self.engine.begin() as conn:
            ids.extend(self._insert(conn, run) for run in runs)
        return ids

    @staticmethod
    def _insert(conn: Connection, run: Run) -> int:
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
            conn.execute(t.run_metrics.insert(), [metrics_row(rid, p.metrics, kinds)])
        if p.artifacts:
            conn.execute(t.artifacts.insert(), p.artifacts)
        if p.series:
            conn.execute(t.series.insert(), p.series)
        return rid

    # -- reading ---------------------------------------------------------------------------
    def runs(self, flt: RunFilter = EVERY_RUN, *, with_series: bool = False) -> list[Run]:
        """Runs matching ``flt``, oldest first, with metrics (artifacts on demand)."""
        check_limit(flt)
        q = where(select(t.runs), flt).order_by(t.runs.c.id)
        if flt.limit is not None and flt.commit is None:
            q = q.order_by(None).order_by(t.runs.c.id.desc()).limit(flt.limit)
        with self.engine.connect() as conn:
            rows = with_docs(conn, list(conn.execute(q).mappings()))
            if flt.limit is not None and flt.commit is None:
                rows.reverse()
            if flt.commit is not None:  # kept in the environment, not a column
                rows = [r for r in rows if env_commit(r) == flt.commit]
                if flt.limit is not None:
                    rows = rows[len(rows) - flt.limit :] if flt.limit else []
            return load(conn, rows, with_series=with_series)

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
        after = 0
        while True:
            q = where(select(t.runs), flt).where(t.runs.c.id > after).order_by(t.runs.c.id).limit(page)
            with self.engine.connect() as conn:
                rows = with_docs(conn, list(conn.execute(q).mappings()))
                if not rows:
                    return
                after = rows[-1]["id"]
                if flt.commit is not None:
                    rows = [r for r in rows if env_commit(r) == flt.commit]
                runs = load(conn, rows, with_series=with_series, with_artifacts=with_artifacts)
            yield from runs

    def page(self, flt: RunFilter, *, number: int, size: int) -> tuple[list[Run], int]:
        """Page ``number`` (1: the newest ``size`` runs) of the runs matching ``flt``, oldest
        first within the page, and how many runs match in all."""
        if number < 1 or size < 1:
            raise UserError(f"page {number} of {size} runs? give a page and a size from 1")
        total = self.count(flt)
        if flt.commit is not None:  # filtered in Python: page over the matching ids
            ids = [r.id for r in self.iter_runs(flt) if r.id is not None]
            ids = ids[max(0, len(ids) - number * size) : len(ids) - (number - 1) * size]
            return (self.runs(RunFilter(ids=ids)) if ids else []), total
        q = where(select(t.runs), flt).order_by(t.runs.c.id.desc()).limit(size).offset((number - 1) * size)
        with self.engine.connect() as conn:
            rows = with_docs(conn, list(conn.execute(q).mappings()))
            rows.reverse()
            return load(conn, rows), total

    def metric_names(self, flt: RunFilter = EVERY_RUN) -> list[str]:
        """Every metric name of the runs ``flt`` selects, in the order ``iter_runs`` first
        meets them (a run's metrics by name): the columns of a CSV listing, found in bounded
        memory."""
        if flt.commit is not None:
            return list(dict.fromkeys(m.name for r in self.iter_runs(flt) for m in r.metrics))
        first: dict[str, int] = {}
        after = 0
        with self.engine.connect() as conn:
            kinds = {i: n for i, n in conn.execute(select(t.metric_kinds.c.id, t.metric_kinds.c.name))}
            m = t.run_metrics.c
            while ids := list(
                conn.execute(
                    where(select(t.runs.c.id), flt)
                    .where(t.runs.c.id > after)
                    .order_by(t.runs.c.id)
                    .limit(CHUNK)
                ).scalars()
            ):
                for rid, enc, data in conn.execute(
                    select(m.run_id, m.encoding, m.data).where(m.run_id.in_(ids))
                ):  # keyset pages of the selected runs: bounded
                    for kind, _ in codec.unpack_metrics(enc, data):
                        if first.setdefault(kinds[kind], rid) > rid:
                            first[kinds[kind]] = rid
                after = ids[-1]
        return [name for name, _ in sorted(first.items(), key=lambda kv: (kv[1], kv[0]))]

    def get_run(self, run_id: int) -> Run:
        """One run with metrics, series and artifacts; UserError if there is no such run."""
        with self.engine.connect() as conn:
            rows = with_docs(conn, list(conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings()))
            if not rows:
                raise UserError(f"no run {run_id} in {self.shown}")
            return load(conn, rows, with_series=True, with_artifacts=True)[0]

    def artifact(self, run_id: int, name: str) -> Artifact | None:
        """One raw artifact of a run (e.g. ``fio.json``)."""
        with self.engine.connect() as conn:
            a = conn.execute(
                select(t.artifacts).where((t.artifacts.c.run_id == run_id) & (t.artifacts.c.name == name))
            ).first()
        return artifact(a) if a else None

    def artifacts_of(self, run_ids: Sequence[int]) -> dict[int, tuple[Artifact, ...]]:
        """Every raw artifact of many runs at once, by run id, sorted by name (for export)."""
        out: dict[int, list[Artifact]] = {int(i): [] for i in run_ids}
        with self.engine.connect() as conn:
            for chunk in chunks(list(out)):
                for a in conn.execute(select(t.artifacts).where(t.artifacts.c.run_id.in_(chunk))):
                    out[a.run_id].append(artifact(a))
        return {k: tuple(sorted(v, key=lambda a: a.name)) for k, v in out.items()}

    def known_uuids(self, uuids: Iterable[str]) -> set[str]:
        """Which of ``uuids`` are already stored (import skips those runs)."""
        want = sorted(set(uuids))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for i in range(0, len(want), 500):
                found.update(
                    conn.execute(select(t.runs.c.uuid).where(t.runs.c.uuid.in_(want[i : i + 500]))).scalars()
                )
        return found

    def count(self, flt: RunFilter = EVERY_RUN) -> int:
        """How many runs ``flt`` selects (its ``limit`` ignored; every stored run by default)."""
        if flt.commit is not None:
            return sum(1 for _ in self.iter_runs(flt))
        with self.engine.connect() as conn:
            return int(conn.execute(where(select(func.count()).select_from(t.runs), flt)).scalar_one())

    def labels(self) -> list[str]:
        """Distinct labels, oldest first."""
        with self.engine.connect() as conn:
            q = select(t.runs.c.label, func.min(t.runs.c.id)).group_by(t.runs.c.label)
            return [r[0] for r in sorted(conn.execute(q), key=lambda r: r[1])]


def engine_url(url: str) -> str:
    """The SQLAlchemy URL of a store URL: ``postgresql://`` and ``postgres://`` go through
    psycopg 3 (the driver iowall depends on), not SQLAlchemy's default psycopg2."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def kind_ids(conn: Connection, kinds: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """The metric_kinds id of each (name, unit, direction), added when missing (a kind
    another writer adds meanwhile is taken, not duplicated: the unique constraint decides)."""
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
    missing = sorted(kinds - set(have))
    if missing:
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


#: The newest migration's revision id: a store already there opens without alembic
#: (tests/unit/test_store_head.py checks it against the migration scripts).
HEAD = "0004"

#: The advisory lock key that serialises migrations on PostgreSQL ("iowall" in ASCII).
_MIGRATE_LOCK = 0x696F77616C6C
#: The advisory lock key that serialises imports (``store.ingest``) on PostgreSQL.
IMPORT_LOCK = _MIGRATE_LOCK + 1


def _sqlite_migrate(conn: Connection, upgrade: Callable[[], None], cfg: Any) -> None:
    """Run ``upgrade`` on SQLite in one BEGIN IMMEDIATE transaction: one migrator at a time
    (the others wait, busy_timeout, then find the store current), and all of it or none
    (the driver would otherwise commit each DDL statement by itself, so two processes
    opening a new store at once interleaved their CREATE TABLEs)."""
    dbapi = conn.connection.driver_connection
    assert dbapi is not None
    level = dbapi.isolation_level
    dbapi.isolation_level = None  # the driver begins nothing: the BEGIN below is the one
    try:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        cfg.attributes["connection"] = conn
        try:
            upgrade()
        except BaseException:
            conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")
    finally:
        dbapi.isolation_level = level


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
    cur.execute("PRAGMA busy_timeout=30000")  # first: switching to WAL waits for a writer too
    cur.execute(f"PRAGMA page_size={SQLITE_PAGE}")  # takes effect only in a new file
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.close()


def id_of_uuid(store: Store, uuid: str) -> int | None:
    """The id of the run with this uuid, if stored."""
    with store.engine.connect() as conn:
        rid = conn.execute(select(t.runs.c.id).where(t.runs.c.uuid == uuid)).scalar_one_or_none()
    return None if rid is None else int(rid)
