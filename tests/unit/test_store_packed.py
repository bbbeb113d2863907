"""Migration 0004 (packed metrics, environment deltas, base64 artefacts as bytes): a store
made at 0003 reads the same after it, and back at 0003 holds 0003's rows again; new runs
are written packed and read back exactly. On SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import math
import zlib
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, create_engine, text

from iowall.model import Artifact, Metric, Point, Run
from iowall.store import Store, codec, db
from iowall.store.write import engine_url
from tests.unit.test_store_scale import _cfg

PROFILE = base64.b64encode(gzip.compress(b"vfs_write;xfs_file_write_iter 42\n" * 40, mtime=0)).decode()
FIO = json.dumps(
    {"jobs": [{"jobname": "w", "write": {"bw_bytes": 123456789}}]} | {f"k{i}": i for i in range(40)}
)


def _env(i: int) -> str:
    return json.dumps(
        {
            "kernel": "6.18",
            "host": {"hostname": "h"},
            "sysctl": {f"vm.knob_{k}": k * 7 for k in range(60)},
            "dirty_threshold_bytes": 1000 + i,
        },
        sort_keys=True,
    )


VALUES = [(5.5, 0.25), (float("nan"), float("inf")), (1e-300, 3.0)]


def _at_0003(conn: Connection) -> list[int]:
    """Three runs of one host written as 0003 wrote them; their ids."""
    sqlite = conn.dialect.name == "sqlite"
    conn.execute(
        text(
            "INSERT INTO metric_kinds (name, unit, direction) VALUES "
            "('bw', 'B/s', 'higher'), ('lat', 's', 'lower')"
        )
    )
    kinds = dict(conn.execute(text("SELECT name, id FROM metric_kinds")).all())
    ids = []
    for i, (bw, lat) in enumerate(VALUES):
        env_ref, enc, data = codec.pack_doc(_env(i))
        bed_ref, benc, bdata = codec.pack_doc("{}")
        for r, e, d in ((env_ref, enc, data), (bed_ref, benc, bdata)):
            if not conn.execute(text("SELECT 1 FROM run_docs WHERE ref = :r"), {"r": r}).first():
                conn.execute(text("INSERT INTO run_docs VALUES (:r, :e, :d)"), {"r": r, "e": e, "d": d})
        conn.execute(
            text(
                "INSERT INTO runs (uuid, batch, recipe, label, status, point_key, point_json, "
                "fingerprint, repeat_index, started_at, finished_at, host, kernel, env_json, "
                "bed_json, error, notes_json, env_ref, bed_ref) VALUES (:u, 'b', 'limits', 'old', "
                "'ok', 'limits:jobs=1', '{\"jobs\": 1}', 'f', 0, :t, :t, 'h', '6.18', '', '', '', "
                "'[]', :er, :br)"
            ),
            {"u": f"6f1c2e4a-0000-4000-8000-00000000000{i}", "t": float(i), "er": env_ref, "br": bed_ref},
        )
        rid = conn.execute(text("SELECT max(id) FROM runs")).scalar_one()
        ids.append(rid)
        for name, v in (("bw", bw), ("lat", lat)):
            value = "'NaN'" if sqlite and math.isnan(v) else ":v"
            conn.execute(
                text(f"INSERT INTO metrics VALUES (:r, :k, {value})"), {"r": rid, "k": kinds[name], "v": v}
            )
        for name, body in (("profile.folded.gz", PROFILE), ("fio.json", FIO)):
            z = zlib.compress(body.encode(), 6)  # as 0003 packed a body: zlib when smaller
            enc, b, d = ("zlib", "", z) if len(z) < len(body) else ("identity", body, None)
            conn.execute(
                text("INSERT INTO artifacts VALUES (:r, :n, 'text/plain', :b, :e, :d)"),
                {"r": rid, "n": name, "b": b, "e": enc, "d": d},
            )
    return ids


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _check(s: Store, ids: list[int]) -> None:
    for i, rid in enumerate(ids):
        r = s.get_run(rid)
        assert _same(r.metric("bw"), VALUES[i][0]) and _same(r.metric("lat"), VALUES[i][1])
        assert [m.name for m in r.metrics] == ["bw", "lat"]
        assert json.dumps(r.env, sort_keys=True) == _env(i)
        assert {a.name: a.body for a in r.artifacts} == {"profile.folded.gz": PROFILE, "fio.json": FIO}


def _rows(conn: Connection, sql: str) -> list[Any]:
    return [tuple(r) for r in conn.execute(text(sql))]


def _artifacts(conn: Connection) -> list[Any]:
    return [
        (r, n, e, b, zlib.decompress(bytes(d)) if d is not None else None)
        for r, n, e, b, d in _rows(
            conn, "SELECT run_id, name, encoding, body, data FROM artifacts ORDER BY 1, 2"
        )
    ]


def test_migration_0004_converts_a_0003_store_and_back(store_url: str) -> None:
    engine = create_engine(engine_url(store_url))
    with engine.begin() as conn:
        command.upgrade(_cfg(conn), "0003")  # a fresh SQLite file
        command.downgrade(_cfg(conn), "0003")  # the suite's PostgreSQL template is at head
        ids = _at_0003(conn)
        metrics_0003 = _rows(conn, "SELECT run_id, kind_id, value FROM metrics ORDER BY 1, 2")
        docs_0003 = _rows(conn, "SELECT ref, encoding, data FROM run_docs ORDER BY ref")
        arts_0003 = _artifacts(conn)
    s = Store(store_url)  # migrates to head
    _check(s, ids)
    with s.engine.connect() as conn:
        assert _rows(conn, "SELECT encoding, count(*) FROM run_docs GROUP BY encoding ORDER BY 1") == [
            ("zlib", 2),
            ("zlib-delta", 2),
        ]
        assert _rows(conn, "SELECT DISTINCT encoding FROM artifacts ORDER BY 1") == [("base64",), ("zlib",)]
        assert _rows(conn, "SELECT count(*) FROM run_metrics") == [(3,)]
    with engine.begin() as conn:  # back at 0003: its own rows again
        command.downgrade(_cfg(conn), "0003")
        assert [
            (r, k, str(v))
            for r, k, v in _rows(conn, "SELECT run_id, kind_id, value FROM metrics ORDER BY 1, 2")
        ] == [(r, k, str(v)) for r, k, v in metrics_0003]
        assert [
            (r, e, codec.unpack_doc(e, bytes(d)))
            for r, e, d in _rows(conn, "SELECT ref, encoding, data FROM run_docs ORDER BY ref")
        ] == [(r, e, codec.unpack_doc(e, bytes(d))) for r, e, d in docs_0003]
        assert _artifacts(conn) == arts_0003
        command.upgrade(_cfg(conn), "head")
    _check(Store(store_url), ids)
    engine.dispose()


def test_new_runs_are_written_packed(store_url: str) -> None:
    """Metrics bit for bit (NaN, inf, -0.0 as 0.0, as before), environments of one host as
    deltas against its first, read back whole."""
    s = Store(store_url)
    runs = [
        Run(
            point=Point("limits", {"jobs": 1}),
            label="p",
            status="ok",
            started_at=i,
            finished_at=i + 1.0,
            env=json.loads(_env(i)),
            bed={"kind": "ram"},
            metrics=(
                Metric("a", VALUES[i][0], "B/s"),
                Metric("Z", -0.0, "s", "lower"),
                Metric("b", VALUES[i][1], "s", "lower"),
            ),
            artifacts=(Artifact("profile.folded.gz", "application/gzip+base64", PROFILE),),
        )
        for i in range(3)
    ]
    ids = s.add_runs(runs)
    for r, rid in zip(runs, ids, strict=True):
        got = s.get_run(rid)
        want = sorted((m.name, m.value + 0.0, m.unit, m.direction) for m in r.metrics)
        assert [m.name for m in got.metrics] == [w[0] for w in want] == ["Z", "a", "b"]
        assert all(
            _same(m.value, w[1])
            and (m.unit, m.direction) == w[2:]
            and math.copysign(1, m.value) == math.copysign(1, w[1])
            for m, w in zip(got.metrics, want, strict=True)
        )
        assert got.env == r.env and got.artifacts == r.artifacts
    with s.engine.connect() as conn:
        assert _rows(conn, "SELECT count(*) FROM run_metrics") == [(3,)]
        assert _rows(conn, "SELECT encoding, count(*) FROM run_docs GROUP BY encoding ORDER BY 1") == [
            ("zlib", 2),
            ("zlib-delta", 2),
        ]
    assert s.metric_names() == ["Z", "a", "b"]


def test_metric_names_past_pages_of_runs_without_metrics(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CSV columns: names in the order runs first have them, found past whole pages of
    runs that have none (a page with no metrics row does not end the listing)."""
    monkeypatch.setattr(db, "CHUNK", 2)
    s = Store(store_url)
    bare = [
        Run(
            point=Point("limits", {"jobs": 1}),
            label="p",
            status="failed",
            started_at=float(i),
            finished_at=i + 1.0,
        )
        for i in range(5)
    ]
    s.add_runs(
        bare
        + [
            dataclasses.replace(bare[0], metrics=(Metric("z", 1.0, "s"),)),
            dataclasses.replace(bare[0], metrics=(Metric("a", 1.0, "s"), Metric("z", 2.0, "s"))),
        ]
    )
    assert s.metric_names() == ["z", "a"]
