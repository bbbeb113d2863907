"""Packed: a run's metrics in one compressed row of ``run_metrics`` (kind ids and float64
values) instead of a ``metrics`` row per value; an environment document compressed against
the previous one of its host (codec.DOC_DELTA) when that is less than half its size; base64
artifacts (gzipped profiles) kept as the bytes they encode. Existing rows are converted in
place, nothing lost; the downgrade gives back 0003's rows exactly.

Revision ID: 0004
Revises: 0003
"""

import math
import zlib
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

from iowall.store import codec

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

#: Runs converted per batch: bounded memory on a store of any size.
_BATCH = 2000


def _by_run(conn: Any, sql: str) -> Iterator[dict[int, list[Any]]]:
    """Rows of ``sql`` (run id first; ``run_id`` BETWEEN :lo AND :hi) grouped by run, for
    _BATCH run ids at a time (keyset over runs.id)."""
    after = -1
    while ids := [
        i
        for (i,) in conn.execute(
            sa.text("SELECT id FROM runs WHERE id > :a ORDER BY id LIMIT :n"), {"a": after, "n": _BATCH}
        )
    ]:
        out: dict[int, list[Any]] = {}
        for r in conn.execute(sa.text(sql), {"lo": ids[0], "hi": ids[-1]}):
            out.setdefault(r[0], []).append(r)
        yield out
        after = ids[-1]


def upgrade() -> None:
    conn = op.get_bind()
    op.create_table(
        "run_metrics",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("encoding", sa.String(16), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    for runs in _by_run(
        conn,
        "SELECT m.run_id, m.kind_id, m.value FROM metrics m JOIN "
        "metric_kinds k ON k.id = m.kind_id WHERE m.run_id BETWEEN :lo "
        "AND :hi ORDER BY m.run_id, k.name",
    ):
        rows = []
        for rid, ms in runs.items():
            enc, data = codec.pack_metrics([m[1] for m in ms], [float(m[2]) for m in ms])
            rows.append({"r": rid, "e": enc, "d": data})
        if rows:
            conn.execute(
                sa.text("INSERT INTO run_metrics (run_id, encoding, data) VALUES (:r, :e, :d)"), rows
            )
    op.drop_table("metrics")
    _deltas(conn)
    for runs in _by_run(
        conn, "SELECT run_id, name, encoding, body, data FROM artifacts WHERE run_id BETWEEN :lo AND :hi"
    ):
        ups = []
        for rid, name, old, body, raw in (r for rs in runs.values() for r in rs):
            enc, text, packed = codec.pack_body(codec.unpack_body(old, body, raw))
            if enc != old:
                ups.append({"r": rid, "n": name, "e": enc, "b": text, "d": packed})
        if ups:
            conn.execute(
                sa.text(
                    "UPDATE artifacts SET encoding = :e, body = :b, data = :d WHERE run_id = :r AND name = :n"
                ),
                ups,
            )


def _deltas(conn: Any) -> None:
    """Each host's environments, oldest run first, as deltas against the last one kept whole
    (the first, and any that gains too little): what store.write.insert_run does for new
    runs."""
    base: dict[str, tuple[str, str]] = {}  # host → (ref, text) of its current whole document
    seen: set[str] = set()
    after = -1
    while rows := list(
        conn.execute(
            sa.text(
                "SELECT r.id, r.host, r.env_ref, d.encoding, d.data FROM runs r JOIN run_docs d "
                "ON d.ref = r.env_ref WHERE r.id > :a ORDER BY r.id LIMIT :n"
            ),
            {"a": after, "n": _BATCH},
        )
    ):
        ups = []
        for _, host, ref, enc, data in rows:
            if ref in seen or enc != codec.DOC_ZLIB:
                continue
            seen.add(ref)
            text = codec.unpack_doc(enc, data)
            packed = codec.pack_delta(text, *base[host]) if host in base else None
            if packed is None:
                base[host] = (ref, text)
            else:
                ups.append({"r": ref, "e": packed[1], "d": packed[2]})
        if ups:
            conn.execute(sa.text("UPDATE run_docs SET encoding = :e, data = :d WHERE ref = :r"), ups)
        after = rows[-1][0]


def _pack_0003(body: str) -> tuple[str, str, bytes | None]:
    """An artifact body as 0003 packed it: zlib when that is smaller, else the text."""
    raw = body.encode("utf-8", "surrogatepass")
    z = zlib.compress(raw, 6)
    return (
        ("zlib", "", z) if len(body) >= codec.MIN_COMPRESS and len(z) < len(raw) else ("identity", body, None)
    )


def downgrade() -> None:
    conn = op.get_bind()
    deltas = list(
        conn.execute(
            sa.text("SELECT ref, encoding, data FROM run_docs WHERE encoding = :e"), {"e": codec.DOC_DELTA}
        )
    )
    for i in range(0, len(deltas), _BATCH):
        ups = []
        for ref, enc, data in deltas[i : i + _BATCH]:
            b = codec.delta_base(enc, data)
            benc, bdata = conn.execute(
                sa.text("SELECT encoding, data FROM run_docs WHERE ref = :r"), {"r": b}
            ).one()
            text = codec.unpack_doc(enc, data, codec.unpack_doc(benc, bdata))
            ups.append({"r": ref, "e": codec.DOC_ZLIB, "d": codec.pack_doc(text)[2]})
        if ups:
            conn.execute(sa.text("UPDATE run_docs SET encoding = :e, data = :d WHERE ref = :r"), ups)
    for runs in _by_run(
        conn,
        "SELECT run_id, name, encoding, body, data FROM artifacts WHERE "
        "run_id BETWEEN :lo AND :hi AND encoding = 'base64'",
    ):
        ups = []
        for r, n, e, b, d in (x for rs in runs.values() for x in rs):
            enc, text, packed = _pack_0003(codec.unpack_body(e, b, d))
            ups.append({"r": r, "n": n, "e": enc, "b": text, "d": packed})
        if ups:
            conn.execute(
                sa.text(
                    "UPDATE artifacts SET encoding = :e, body = :b, data = :d WHERE run_id = :r AND name = :n"
                ),
                ups,
            )
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("kind_id", sa.Integer, sa.ForeignKey("metric_kinds.id"), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
        sqlite_with_rowid=False,
    )
    sqlite = conn.dialect.name == "sqlite"
    for runs in _by_run(
        conn, "SELECT run_id, encoding, data FROM run_metrics WHERE run_id BETWEEN :lo AND :hi"
    ):
        rows = [
            {"r": r, "k": k, "v": v}
            for rs in runs.values()
            for r, e, d in rs
            for k, v in codec.unpack_metrics(e, d)
        ]
        nan = [x for x in rows if sqlite and math.isnan(x["v"])]
        rows = [x for x in rows if not (sqlite and math.isnan(x["v"]))]
        if rows:
            conn.execute(sa.text("INSERT INTO metrics (run_id, kind_id, value) VALUES (:r, :k, :v)"), rows)
        for x in nan:  # SQLite keeps a NaN float as NULL: as text, as 0003 did
            conn.execute(sa.text("INSERT INTO metrics (run_id, kind_id, value) VALUES (:r, :k, 'NaN')"), x)
    op.drop_table("run_metrics")
