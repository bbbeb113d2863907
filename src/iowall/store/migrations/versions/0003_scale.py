"""Scale: an index on runs.status (``runs --status``); ix_metrics_name dropped (no query
used it; it cost about a tenth of the store); raw artifacts zlib-compressed, with an
``encoding`` column so rows read whatever wrote them; the series of a run in one compressed
row of ``run_series`` instead of a row of JSON per series in ``series``; a metric's name,
unit and direction kept once in ``metric_kinds``, a metric row being (run, kind, value), a
WITHOUT ROWID table on SQLite; a run's environment and bed JSON compressed in
``run_docs``, each content once (a series of runs shares one bed), named by ref from the
run. Existing rows are converted, nothing lost.

Revision ID: 0003
Revises: 0002
"""

import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from iowall.model import Series
from iowall.store import codec

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

#: Rows converted per statement batch: bounded memory on a store of any size.
_BATCH = 2000


def _pages(conn: Any, sql: str) -> Iterator[list[Any]]:
    """Rows of ``sql`` (which selects ``run_id`` first, filters on ``run_id > :after`` and
    orders by it) in batches, keyset-paged by run id; a run's rows never straddle a batch."""
    after = -1
    while True:
        rows = list(conn.execute(sa.text(sql), {"after": after, "n": _BATCH}))
        if not rows:
            return
        last = rows[-1][0]
        if len(rows) == _BATCH and rows[0][0] != last:
            rows = [r for r in rows if r[0] != last]  # the last run whole in the next batch
            last = rows[-1][0]
        elif len(rows) == _BATCH:  # one run holds a whole batch: take all of its rows
            rows = list(
                conn.execute(
                    sa.text(sql.replace("run_id > :after", "run_id = :after").replace("LIMIT :n", "")),
                    {"after": last},
                )
            )
        yield rows
        after = last


def _series_table(name: str) -> tuple[Any, ...]:
    return (
        name,
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("probe", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("samples_json", sa.Text, nullable=False),
    )


def upgrade() -> None:
    op.create_index("ix_runs_status", "runs", ["status"])
    op.drop_index("ix_metrics_name", table_name="metrics")
    op.add_column(
        "artifacts", sa.Column("encoding", sa.String(16), nullable=False, server_default=codec.IDENTITY)
    )
    op.add_column("artifacts", sa.Column("data", sa.LargeBinary, nullable=True))
    op.create_table(
        "run_series",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("encoding", sa.String(16), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    conn = op.get_bind()
    _split_metrics()
    _docs_apart(conn)
    for rows in _pages(
        conn, "SELECT run_id, name, body FROM artifacts WHERE run_id > :after ORDER BY run_id LIMIT :n"
    ):
        ups = []
        for run_id, name, body in rows:
            enc, text, data = codec.pack_body(body)
            if enc != codec.IDENTITY:
                ups.append({"r": run_id, "n": name, "e": enc, "b": text, "d": data})
        if ups:
            conn.execute(
                sa.text(
                    "UPDATE artifacts SET encoding = :e, body = :b, data = :d WHERE run_id = :r AND name = :n"
                ),
                ups,
            )
    for rows in _pages(
        conn,
        "SELECT run_id, probe, name, unit, samples_json FROM series "
        "WHERE run_id > :after ORDER BY run_id LIMIT :n",
    ):
        by_run: dict[int, list[Series]] = {}
        for run_id, probe, name, unit, sj in rows:
            by_run.setdefault(run_id, []).append(Series(probe, name, unit, codec.pairs(json.loads(sj))))
        ins = []
        for run_id, series in by_run.items():
            enc, data = codec.pack_series(sorted(series, key=lambda s: (s.probe, s.name)))
            ins.append({"r": run_id, "e": enc, "d": data})
        conn.execute(sa.text("INSERT INTO run_series (run_id, encoding, data) VALUES (:r, :e, :d)"), ins)
    op.drop_table("series")


def downgrade() -> None:
    conn = op.get_bind()
    _docs_back(conn)
    op.create_table(*_series_table("series"))
    for rows in _pages(
        conn, "SELECT run_id, encoding, data FROM run_series WHERE run_id > :after ORDER BY run_id LIMIT :n"
    ):
        conn.execute(
            sa.text("INSERT INTO series VALUES (:r, :p, :n, :u, :s)"),
            [
                {
                    "r": r,
                    "p": s.probe,
                    "n": s.name,
                    "u": s.unit,
                    "s": json.dumps([list(p) for p in s.samples]),
                }
                for r, e, d in rows
                for s in codec.unpack_series(e, d)
            ],
        )
    op.drop_table("run_series")
    for rows in _pages(
        conn,
        "SELECT run_id, name, encoding, body, data FROM artifacts WHERE "
        "run_id > :after AND encoding <> 'identity' ORDER BY run_id LIMIT :n",
    ):
        conn.execute(
            sa.text(
                "UPDATE artifacts SET encoding = 'identity', body = :b, data = NULL "
                "WHERE run_id = :r AND name = :n"
            ),
            [{"r": r, "n": n, "b": codec.unpack_body(e, b, d)} for r, n, e, b, d in rows],
        )
    op.drop_column("artifacts", "data")
    op.drop_column("artifacts", "encoding")
    _join_metrics()
    op.create_index("ix_metrics_name", "metrics", ["name"])
    op.drop_index("ix_runs_status", table_name="runs")


def _runs_pages(conn: Any, sql: str) -> Iterator[list[Any]]:
    """Rows of ``sql`` (``id`` first, ``id > :after``, ordered by id) _BATCH at a time."""
    after = -1
    while rows := list(conn.execute(sa.text(sql), {"after": after, "n": _BATCH})):
        yield rows
        after = rows[-1][0]


def _docs_apart(conn: Any) -> None:
    """Each run's environment and bed JSON into run_docs, compressed, each content once;
    the run keeps its refs (env_ref, bed_ref) and '' in env_json, bed_json."""
    op.add_column("runs", sa.Column("env_ref", sa.String(32), nullable=True))
    op.add_column("runs", sa.Column("bed_ref", sa.String(32), nullable=True))
    op.create_table(
        "run_docs",
        sa.Column("ref", sa.String(32), primary_key=True),
        sa.Column("encoding", sa.String(16), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    stored: set[str] = set()
    for rows in _runs_pages(
        conn, "SELECT id, env_json, bed_json FROM runs WHERE id > :after ORDER BY id LIMIT :n"
    ):
        docs, ups = [], []
        for rid, env, bed in rows:
            (er, ee, ed), (br, be, bd) = codec.pack_doc(env), codec.pack_doc(bed)
            for ref, enc, data in ((er, ee, ed), (br, be, bd)):
                if ref not in stored:
                    stored.add(ref)
                    docs.append({"r": ref, "e": enc, "d": data})
            ups.append({"i": rid, "er": er, "br": br})
        if docs:
            conn.execute(sa.text("INSERT INTO run_docs (ref, encoding, data) VALUES (:r, :e, :d)"), docs)
        conn.execute(
            sa.text(
                "UPDATE runs SET env_json = '', bed_json = '', env_ref = :er, bed_ref = :br WHERE id = :i"
            ),
            ups,
        )


def _docs_back(conn: Any) -> None:
    """The reverse of _docs_apart: the documents in the runs' own columns again."""
    for rows in _runs_pages(
        conn,
        "SELECT r.id, e.encoding, e.data, b.encoding, b.data "
        "FROM runs r JOIN run_docs e ON e.ref = r.env_ref "
        "JOIN run_docs b ON b.ref = r.bed_ref WHERE r.id > :after "
        "ORDER BY r.id LIMIT :n",
    ):
        conn.execute(
            sa.text("UPDATE runs SET env_json = :e, bed_json = :b WHERE id = :i"),
            [
                {"i": i, "e": codec.unpack_doc(ee, ed), "b": codec.unpack_doc(be, bd)}
                for i, ee, ed, be, bd in rows
            ],
        )
    op.drop_table("run_docs")
    op.drop_column("runs", "bed_ref")
    op.drop_column("runs", "env_ref")


def _split_metrics() -> None:
    """metrics (run_id, name, value, unit, direction) → metric_kinds (id, name, unit,
    direction) and metrics (run_id, kind_id, value), WITHOUT ROWID on SQLite."""
    op.create_table(
        "metric_kinds",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
        sa.UniqueConstraint("name", "unit", "direction", name="uq_metric_kinds"),
    )
    op.execute(
        "INSERT INTO metric_kinds (name, unit, direction) SELECT DISTINCT name, unit, direction FROM metrics"
    )
    op.create_table(
        "metrics_new",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("kind_id", sa.Integer, sa.ForeignKey("metric_kinds.id"), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sqlite_with_rowid=False,
    )
    op.execute(
        "INSERT INTO metrics_new (run_id, kind_id, value) SELECT m.run_id, k.id, m.value "
        "FROM metrics m JOIN metric_kinds k ON k.name = m.name AND k.unit = m.unit "
        "AND k.direction = m.direction"
    )
    op.drop_table("metrics")
    op.rename_table("metrics_new", "metrics")


def _join_metrics() -> None:
    """The reverse of _split_metrics: one metrics table with names, units and directions."""
    op.create_table(
        "metrics_old",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
    )
    op.execute(
        "INSERT INTO metrics_old (run_id, name, value, unit, direction) SELECT m.run_id, "
        "k.name, m.value, k.unit, k.direction FROM metrics m JOIN metric_kinds k "
        "ON k.id = m.kind_id"
    )
    op.drop_table("metrics")
    op.drop_table("metric_kinds")
    op.rename_table("metrics_old", "metrics")
