"""The store: SQLite by default, PostgreSQL by URL, one code path (SQLAlchemy Core), schema
kept current by Alembic migrations run on open."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, func, literal_column, or_, select

from ..errors import UserError
from ..model import Artifact, Metric, Point, Run, Series
from ..paths import db_url, default_db_url
from . import schema as t

_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


#: What may follow a kernel selector in a release it matches: ``6.18`` matches ``6.18.44``,
#: ``6.18-rc1`` and ``6.18+``, never ``6.180``.
KERNEL_SEPARATORS = (".", "-", "+", "_", "~")


def kernel_matches(release: str, selector: str) -> bool:
    """Whether ``release`` (``uname -r``) is ``selector`` or starts with it followed by a
    separator (KERNEL_SEPARATORS)."""
    return release == selector or any(release.startswith(selector + sep)
                                      for sep in KERNEL_SEPARATORS)


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list: every field set must match; ``ids`` overrides the rest. ``kernel``
    matches by release prefix (``kernel_matches``); ``limit`` keeps the last N (0: none)."""

    ids: Sequence[int] = ()
    label: str | None = None
    recipe: str | None = None
    batch: str | None = None
    status: str | None = None
    host: str | None = None
    kernel: str | None = None
    #: the commit or build id the runs were made with (``--commit`` / ``IOWALL_COMMIT``)
    commit: str | None = None
    limit: int | None = None


def _env_commit(row: Any) -> str | None:
    """The commit recorded in a run row's environment, if any."""
    try:
        env = json.loads(row["env_json"]) if row.get("env_json") else {}
    except (TypeError, ValueError):
        return None
    c = env.get("commit") if isinstance(env, dict) else None
    return str(c) if c is not None else None


class Store:
    """Runs, their metrics, raw artifacts and series, in one database."""

    def __init__(self, url: str | None = None) -> None:
        self.url = db_url(url) if url else default_db_url()
        try:
            self.engine: Engine = create_engine(self.url, future=True)
        except Exception as e:  # bad URL syntax, missing driver
            raise UserError(f"cannot open store {self.url!r}: {e}") from e
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._migrate()

    def _migrate(self) -> None:
        from alembic import command  # imported here: alembic costs 0.7 s at CLI start-up
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", _MIGRATIONS)
        try:
            with self.engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except Exception as e:
            raise UserError(f"cannot open store {self.url!r}: {e.__class__.__name__}: "
                            f"{str(e).splitlines()[0]}") from e

    # -- writing ---------------------------------------------------------------------------
    def add_run(self, run: Run) -> int:
        """Insert a run with everything it carries; returns its id."""
        return self.add_runs([run])[0]

    def add_runs(self, runs: Sequence[Run]) -> list[int]:
        """Insert several runs in one transaction (all or none); keeps ``run.uuid`` when set."""
        with self.engine.begin() as conn:
            return [self._insert(conn, run) for run in runs]

    @staticmethod
    def _insert(conn: Connection, run: Run) -> int:
        """Insert one run on ``conn``; the caller owns the transaction."""
        host = run.env.get("host", {})
        rid = conn.execute(t.runs.insert().values(
            uuid=run.uuid or str(uuidlib.uuid4()), batch=run.batch, recipe=run.point.recipe,
            label=run.label, status=run.status, point_key=run.point.key(),
            point_json=json.dumps(dict(run.point.params), sort_keys=True),
            fingerprint=run.fingerprint(), repeat_index=run.repeat_index,
            started_at=run.started_at, finished_at=run.finished_at,
            host=str(host.get("hostname", "")) if isinstance(host, dict) else "",
            kernel=str(run.env.get("kernel", "")),
            env_json=json.dumps(run.env, sort_keys=True, default=str),
            bed_json=json.dumps(run.bed, sort_keys=True, default=str),
            error=run.error, notes_json=json.dumps(list(run.notes)),
        )).inserted_primary_key[0]  # type: ignore[index]
        nan = [m for m in run.metrics if conn.dialect.name == "sqlite" and math.isnan(m.value)]
        numbers = [m for m in run.metrics if m not in nan]
        if numbers:
            conn.execute(t.metrics.insert(), [
                {"run_id": rid, "name": m.name, "value": float(m.value), "unit": m.unit,
                 "direction": m.direction} for m in numbers])
        for m in nan:  # as text, past the column type's float(), which SQLite would keep as NULL
            conn.execute(t.metrics.insert().values(
                run_id=rid, name=m.name, value=literal_column(f"'{SQLITE_NAN}'"), unit=m.unit,
                direction=m.direction))
        if run.artifacts:
            conn.execute(t.artifacts.insert(), [
                {"run_id": rid, "name": a.name, "content_type": a.content_type,
                 "body": a.body} for a in run.artifacts])
        if run.series:
            conn.execute(t.series.insert(), [
                {"run_id": rid, "probe": s.probe, "name": s.name, "unit": s.unit,
                 "samples_json": json.dumps(s.samples)} for s in run.series])
        return int(rid)

    # -- reading ---------------------------------------------------------------------------
    def runs(self, flt: RunFilter = RunFilter(), *, with_series: bool = False) -> list[Run]:
        """Runs matching ``flt``, oldest first, with metrics (artifacts on demand)."""
        q = select(t.runs).order_by(t.runs.c.id)
        if flt.ids:
            q = q.where(t.runs.c.id.in_(list(flt.ids)))
        for col in ("label", "recipe", "batch", "status", "host"):
            v = getattr(flt, col)
            if v is not None:
                q = q.where(getattr(t.runs.c, col) == v)
        if flt.kernel is not None:
            k = t.runs.c.kernel
            q = q.where(or_(k == flt.kernel, *(k.startswith(flt.kernel + sep, autoescape=True)
                                               for sep in KERNEL_SEPARATORS)))
        if flt.limit is not None and flt.limit < 0:
            raise UserError(f"keep the last {flt.limit} runs? give 0 or more")
        if flt.limit is not None and flt.commit is None:
            q = q.order_by(None).order_by(t.runs.c.id.desc()).limit(flt.limit)
        with self.engine.connect() as conn:
            rows = list(conn.execute(q).mappings())
            if flt.limit is not None and flt.commit is None:
                rows.reverse()
            if flt.commit is not None:  # kept in the environment, not a column
                rows = [r for r in rows if _env_commit(r) == flt.commit]
                if flt.limit is not None:
                    rows = rows[len(rows) - flt.limit:] if flt.limit else []
            ids = [r["id"] for r in rows]
            mets: dict[int, list[Metric]] = {i: [] for i in ids}
            for chunk in _chunks(ids, 500):
                for m in conn.execute(select(t.metrics).where(t.metrics.c.run_id.in_(chunk))
                                      .order_by(t.metrics.c.run_id, t.metrics.c.name)):
                    mets[m.run_id].append(Metric(m.name, float(m.value), m.unit, m.direction))
            sers: dict[int, list[Series]] = {i: [] for i in ids}
            if with_series:
                for chunk in _chunks(ids, 500):
                    for s in conn.execute(select(t.series).where(t.series.c.run_id.in_(chunk))):
                        sers[s.run_id].append(Series(s.probe, s.name, s.unit, tuple(
                            (float(a), float(b)) for a, b in json.loads(s.samples_json))))
        return [_run_from_row(r, mets[r["id"]], sers[r["id"]]) for r in rows]

    def get_run(self, run_id: int) -> Run:
        """One run with metrics, series and artifacts; UserError if there is no such run."""
        found = self.runs(RunFilter(ids=[run_id]), with_series=True)
        if not found:
            raise UserError(f"no run {run_id} in {self.url}")
        run = found[0]
        with self.engine.connect() as conn:
            arts = tuple(Artifact(a.name, a.content_type, a.body) for a in conn.execute(
                select(t.artifacts).where(t.artifacts.c.run_id == run_id)
                .order_by(t.artifacts.c.name)))
        return _replace(run, artifacts=arts)

    def artifact(self, run_id: int, name: str) -> Artifact | None:
        """One raw artifact of a run (e.g. ``fio.json``)."""
        with self.engine.connect() as conn:
            a = conn.execute(select(t.artifacts).where(
                (t.artifacts.c.run_id == run_id) & (t.artifacts.c.name == name))).first()
        return Artifact(a.name, a.content_type, a.body) if a else None

    def artifacts_of(self, run_ids: Sequence[int]) -> dict[int, tuple[Artifact, ...]]:
        """Every raw artifact of many runs at once, by run id, sorted by name (for export)."""
        out: dict[int, list[Artifact]] = {int(i): [] for i in run_ids}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(out), 500):
                for a in conn.execute(select(t.artifacts).where(t.artifacts.c.run_id.in_(chunk))
                                      .order_by(t.artifacts.c.run_id, t.artifacts.c.name)):
                    out[a.run_id].append(Artifact(a.name, a.content_type, a.body))
        return {k: tuple(v) for k, v in out.items()}

    def known_uuids(self, uuids: Iterable[str]) -> set[str]:
        """Which of ``uuids`` are already stored (import skips those runs)."""
        want = sorted(set(uuids))
        found: set[str] = set()
        with self.engine.connect() as conn:
            for i in range(0, len(want), 500):
                found.update(conn.execute(select(t.runs.c.uuid)
                                          .where(t.runs.c.uuid.in_(want[i:i + 500]))).scalars())
        return found

    def count(self) -> int:
        """How many runs are stored."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(t.runs)).scalar_one())

    def labels(self) -> list[str]:
        """Distinct labels, oldest first."""
        with self.engine.connect() as conn:
            q = select(t.runs.c.label, func.min(t.runs.c.id)).group_by(t.runs.c.label)
            return [r[0] for r in sorted(conn.execute(q), key=lambda r: r[1])]


#: How SQLite keeps a NaN metric: it stores a NaN float as NULL, which the NOT NULL value
#: column refuses; the text ``NaN`` keeps its meaning and reads back through ``float()``.
SQLITE_NAN = "NaN"


def is_unique_violation(e: Exception) -> bool:
    """Whether a database error is a uniqueness conflict (a row someone else inserted),
    not another constraint (NOT NULL, a foreign key, a check)."""
    orig = getattr(e, "orig", e)
    if getattr(orig, "sqlstate", None) == "23505":  # PostgreSQL unique_violation
        return True
    return "UNIQUE constraint failed" in str(orig)  # SQLite


def _sqlite_pragmas(dbapi_conn: Any, _rec: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.close()


def _chunks(xs: list[int], n: int) -> Iterable[list[int]]:
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


def _run_from_row(r: Any, mets: list[Metric], sers: list[Series]) -> Run:
    return Run(
        id=r["id"], point=Point(r["recipe"], json.loads(r["point_json"])), label=r["label"],
        status=r["status"], started_at=r["started_at"], finished_at=r["finished_at"],
        metrics=tuple(mets), env=json.loads(r["env_json"]), bed=json.loads(r["bed_json"]),
        series=tuple(sers), batch=r["batch"], repeat_index=r["repeat_index"], error=r["error"],
        notes=tuple(json.loads(r["notes_json"])), uuid=r["uuid"],
    )


def _replace(run: Run, **kw: Any) -> Run:
    return dataclasses.replace(run, **kw)
