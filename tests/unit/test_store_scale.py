"""The store at scale: paging and keyset streaming return every run exactly once; streamed
listings and exports are the bytes the whole-list renderers give; compressed artifacts and
series read back exactly; migration 0003 upgrades (and downgrades) a store with its rows."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, func, select, text

from iowall.actions.selection import collect_runs
from iowall.bundle import files as b
from iowall.cli.main import main
from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.recipes.tables import columns
from iowall.report.emit import render
from iowall.report.run import RunList
from iowall.store import RunFilter, Store, codec
from iowall.store import schema as t
from iowall.store.copy import Copied, copy_runs
from iowall.store.db import HEAD
from iowall.store.rows import kept_docs
from iowall.store.write import MIGRATIONS, engine_url

FIO = json.dumps(
    {"jobs": [{"jobname": f"j{i}", "write": {"bw_bytes": 1000 + i}} for i in range(40)]}, indent=2
)
BODIES = ["", "x", "ünïcode ✓\r\n" * 30, FIO, "tab\tend\n"]
P1, P2 = (Point("limits", {"rw": "write", "jobs": j}).key() for j in (1, 2))
SAMPLES = ((0.0, -0.0), (0.5, math.inf), (1.0, 1e-300), (1.5, 0.1 + 0.2), (2.0, -math.inf))


def _run(i: int, label: str, *, status: str = "ok", jobs: int | None = None, commit: str = "") -> Run:
    env = {"kernel": f"6.{i % 3}", "host": {"hostname": f"h{i % 2}", "cpu_count": 2}}
    if commit:
        env["commit"] = commit
    return Run(
        point=Point("limits", {"rw": "write", "jobs": jobs if jobs is not None else i % 4}),
        label=label,
        status=status,
        started_at=1e9 + i,
        finished_at=1e9 + i + 1.5,  # type: ignore[arg-type]
        batch=f"b{i // 5}",
        env=env,
        bed={"kind": "ram", "fs": "xfs"},
        metrics=(Metric(f"m{i % 3}", float(i), "B/s"), Metric("wall_s", 1.0 + i, "s", "lower")),
        artifacts=(
            Artifact("fio.json", "application/json", FIO + str(i)),
            Artifact("tiny", "text/plain", str(i)),
        ),
        series=(Series("cpu", "sys", "share", tuple((float(k), k / 7) for k in range(i % 5))),),
    )


def _fill(url: str, n: int = 23) -> Store:
    s = Store(url)
    s.add_runs(
        [
            _run(i, "ab"[i % 2], status="failed" if i % 7 == 3 else "ok", commit="c1" if i % 3 == 0 else "")
            for i in range(n)
        ]
    )
    return s


def test_pages_and_keyset_stream_give_every_run_once(store_url: str) -> None:
    s = _fill(store_url)
    every = [r.id for r in s.runs()]
    for flt in (
        RunFilter(),
        RunFilter(label="a"),
        RunFilter(status="failed"),
        RunFilter(commit="c1"),
        RunFilter(statuses=("ok",), label="b"),
    ):
        want = [r.id for r in s.runs(flt)]
        assert want and set(want) <= set(every)
        assert [r.id for r in s.iter_runs(flt, page=4)] == want
        assert s.count(flt) == len(want)
        for size in (1, 4, 50):
            pages, number = [], 1
            while True:
                got, total = s.page(flt, number=number, size=size)
                assert total == len(want)
                if not got:
                    break
                assert [r.id for r in got] == sorted(r.id for r in got)  # oldest first
                pages = [r.id for r in got] + pages  # page 1 is the newest
                number += 1
            assert pages == want, (flt, size)
    assert [r.id for r in s.page(RunFilter(), number=1, size=5)[0]] == every[-5:]
    with s.engine.connect() as conn:  # 23 runs: one bed, 6 environments, each kept once
        assert conn.execute(select(func.count()).select_from(t.run_docs)).scalar_one() == 7


def test_streamed_runs_listing_is_the_whole_list_rendering(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = _fill(store_url)
    whole = RunList(tuple(s.runs()), tuple("" for _ in range(s.count())))
    for fmt in ("json", "csv"):
        assert main(["runs", "--format", fmt, "--db", store_url]) == 0
        assert capsys.readouterr().out == render(whole, fmt)
    empty = RunList((), ())
    assert main(["runs", "--label", "none", "--format", "json", "--db", store_url]) == 0
    assert capsys.readouterr().out == render(empty, "json")
    rows = list(csv.reader(io.StringIO(render(whole, "csv"))))
    assert rows[0][-4:] == ["m0", "wall_s", "m1", "m2"] and len(rows) == 24


def test_text_listing_is_a_page_and_says_how_many_more(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = _fill(store_url)
    ids = [r.id for r in s.runs()]
    assert main(["runs", "--limit", "5", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    assert [int(line.split()[0]) for line in out.splitlines()[1:]] == ids[-5:]
    assert f"18 older runs not shown: --before {ids[-5]} (or --page 2)" in err
    assert main(["runs", "--limit", "5", "--page", "5", "--db", store_url]) == 0
    out, err = capsys.readouterr()
    assert [int(line.split()[0]) for line in out.splitlines()[1:]] == ids[:3] and not err
    assert main(["runs", "--last", "2", "--limit", "5", "--db", store_url]) == 2


def test_streamed_export_is_the_old_export_byte_for_byte(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = _fill(store_url, 9)
    when, src = "2026-01-02T03:04:05+00:00", {"host": "box", "store": store_url}
    old = (
        json.dumps(
            b.bundle_doc(collect_runs(s, []), source=src, created_at=when),
            separators=(",", ":"),
            ensure_ascii=False,
            default=str,
        )
        + "\n"
    )
    out = tmp_path / "new.json"
    n = b.write_bundle(
        s.iter_runs(with_series=True, with_artifacts=True, page=2), str(out), source=src, created_at=when
    )
    assert n == 9 and out.read_text(encoding="utf-8") == old
    assert main(["export", "-o", str(tmp_path / "cli.json"), "--measured-only", "--db", store_url]) == 0
    doc = json.loads((tmp_path / "cli.json").read_text())
    assert [r["source_id"] for r in doc["runs"]] == [r.id for r in s.runs() if r.status == "ok"]
    # said once: the file and what it holds on one line
    assert capsys.readouterr().err == f"wrote {tmp_path / 'cli.json'}: 8 runs (2 labels, 3 kernels)\n"
    assert [r.uuid for r in b.read_bundle(str(out))] == [r.uuid for r in s.runs()]


def test_compressed_artifacts_and_series_read_back_exactly(store_url: str) -> None:
    s = Store(store_url)
    run = dataclasses.replace(
        _run(1, "z"),
        artifacts=tuple(Artifact(f"a{i}", "text/plain", body) for i, body in enumerate(BODIES)),
        series=(Series("p", "x", "s", SAMPLES), Series("p", "empty", "s", ())),
    )
    rid = s.add_run(run)
    got = s.get_run(rid)
    assert [a.body for a in got.artifacts] == BODIES
    assert s.artifact(rid, "a3") == Artifact("a3", "text/plain", FIO)
    assert s.artifacts_of([rid])[rid] == got.artifacts
    x = next(se for se in got.series if se.name == "x")
    assert [tuple(map(math.copysign, (1.0, 1.0), p)) for p in x.samples] == [
        tuple(map(math.copysign, (1.0, 1.0), p)) for p in SAMPLES
    ]
    assert x.samples == SAMPLES and next(se for se in got.series if se.name == "empty").samples == ()
    with s.engine.connect() as conn:
        enc = dict(conn.execute(select(t.artifacts.c.name, t.artifacts.c.encoding)).all())
        fio = conn.execute(select(t.artifacts.c.data).where(t.artifacts.c.name == "a3")).scalar()
    assert enc == {"a0": "identity", "a1": "identity", "a2": "zlib", "a3": "zlib", "a4": "identity"}
    assert len(fio) < len(FIO) / 4


def _cfg(conn: object) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    cfg.attributes["connection"] = conn
    return cfg


def test_migration_0003_upgrades_a_0002_store_with_its_rows(store_url: str) -> None:
    engine = create_engine(engine_url(store_url))
    with engine.begin() as conn:
        command.upgrade(_cfg(conn), "0002")  # a fresh SQLite file
        command.downgrade(_cfg(conn), "0002")  # the suite's PostgreSQL template is at head
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0002"
        conn.execute(
            text(
                "INSERT INTO runs (uuid, batch, recipe, label, status, point_key, point_json, "
                "fingerprint, repeat_index, started_at, finished_at, host, kernel, env_json, "
                "bed_json, error, notes_json) VALUES ('6f1c2e4a-0000-4000-8000-000000000001', 'b', "
                "'limits', 'old', 'ok', 'limits:jobs=1', '{\"jobs\": 1}', 'f', 0, 1.0, 2.0, 'h', "
                "'6.18', '{\"kernel\": \"6.18\"}', '{}', '', '[]')"
            )
        )
        rid = conn.execute(text("SELECT id FROM runs")).scalar_one()
        conn.execute(text("INSERT INTO metrics VALUES (:r, 'bw', 5.5, 'B/s', 'higher')"), {"r": rid})
        for i, body in enumerate(BODIES):
            conn.execute(
                text("INSERT INTO artifacts VALUES (:r, :n, 'text/plain', :b)"),
                {"r": rid, "n": f"a{i}", "b": body},
            )
        conn.execute(
            text("INSERT INTO series VALUES (:r, 'cpu', 'sys', 'share', :s)"),
            {"r": rid, "s": json.dumps([[0.0, 0.5], [1.0, 0.1 + 0.2]])},
        )
    s = Store(store_url)  # migrates to head
    got = s.get_run(rid)
    assert [a.body for a in got.artifacts] == BODIES
    assert got.series[0].samples == ((0.0, 0.5), (1.0, 0.1 + 0.2))
    assert got.metric("bw") == 5.5 and got.label == "old"
    assert got.env == {"kernel": "6.18"} and got.bed == {}
    with s.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM artifacts WHERE encoding = 'zlib'")).scalar_one() == 2
        assert conn.execute(text("SELECT encoding FROM run_series")).scalar_one() == "json-zlib"
        assert conn.execute(text("SELECT env_json || bed_json FROM runs")).scalar_one() == ""
        assert conn.execute(text("SELECT count(*) FROM run_docs")).scalar_one() == 2
    rid2 = s.add_run(_run(4, "new"))
    before = s.get_run(rid2)
    with s.engine.begin() as conn:  # and back: 0002 reads its text again
        command.downgrade(_cfg(conn), "0002")
        bodies = dict(
            conn.execute(text("SELECT name, body FROM artifacts WHERE run_id = :r"), {"r": rid}).all()
        )
        pairs = conn.execute(
            text("SELECT samples_json FROM series WHERE run_id = :r"), {"r": rid2}
        ).scalar_one()
    assert bodies == {f"a{i}": body for i, body in enumerate(BODIES)}
    assert json.loads(pairs) == [[float(k), k / 7] for k in range(4)]
    assert Store(store_url).get_run(rid2) == before  # and up again
    engine.dispose()


def test_columns_loads_only_the_compared_runs(store_url: str) -> None:
    s = Store(store_url)
    s.add_runs(
        [
            _run(i, lab, jobs=j, status=st)
            for i, (lab, j, st) in enumerate(
                [
                    ("base", 1, "ok"),
                    ("base", 2, "ok"),
                    ("new", 1, "ok"),
                    ("new", 1, "failed"),
                    ("other", 3, "ok"),
                    ("new", 2, "filled"),
                ]
            )
        ]
    )
    mine = s.runs(RunFilter(label="new"))
    cols = columns(s, "limits", mine, "new")
    assert cols.labels == ("base", "new")
    assert sorted((k, lab, [r.id for r in rs]) for (k, lab), rs in cols.samples.items()) == [
        (P1, "base", [1]),
        (P1, "new", [3]),
        (P2, "base", [2]),
        (P2, "new", [6]),
    ]
    assert codec.pairs([[1, 2]]) == ((1.0, 2.0),)


def test_export_to_a_fifo_writes_through_it_and_leaves_it_a_fifo(tmp_path: Path, store_url: str) -> None:
    # -o /dev/null once renamed a temporary file over the device: a FIFO stands in for it
    s = _fill(store_url, 3)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert b.write_bundle(s.iter_runs(with_series=True, with_artifacts=True), str(fifo)) == 3
    reader.join(10)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".iowall-")]
    assert len(json.loads(got[0])["runs"]) == 3


def test_db_copy_reads_a_chunk_at_a_time_and_carries_every_run_whole(store_url: str, store_url2: str) -> None:
    src, dst = _fill(store_url), Store(store_url2)
    assert copy_runs(src, dst, chunk=4) == Copied(23, 0, 0)
    assert copy_runs(src, dst, chunk=4) == Copied(0, 23, 0)

    def whole(s: Store) -> list[Run]:
        return [dataclasses.replace(r, id=None) for r in s.iter_runs(with_series=True, with_artifacts=True)]

    assert whole(dst) == whole(src)
    last = Store(store_url2.replace("iowall2", "iowall3")) if "sqlite" in store_url2 else None
    if last is not None:  # the last N of a label, a chunk of ids at a time
        assert copy_runs(src, last, RunFilter(label="a", limit=5), chunk=2).copied == 5
        assert [r.uuid for r in last.runs()] == [r.uuid for r in src.runs(RunFilter(label="a", limit=5))]


def _whole_runs(s: Store) -> list[Run]:
    return [dataclasses.replace(r, id=None) for r in s.iter_runs(with_series=True, with_artifacts=True)]


def _rows(s: Store, sql: str) -> list[tuple]:
    with s.engine.connect() as conn:
        return [
            tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in conn.execute(text(sql))
        ]


def test_db_copy_carries_rows_as_kept(store_url: str, store_url2: str) -> None:
    # the copy moves rows across without decoding them into runs: documents and metrics rows
    # byte for byte into a new store; a body kept as text (from before compression) is
    # compressed, and an environment kept in its row (before 0003) packed, as an import would
    src, dst = _fill(store_url, 4), Store(store_url2)
    body = "x" * 500
    env = json.dumps(src.runs()[1].env, sort_keys=True, default=str)
    with src.engine.begin() as conn:
        first = "(SELECT min(id) FROM runs)"
        conn.execute(
            text(
                "UPDATE artifacts SET encoding = 'identity', body = :b, data = NULL "
                f"WHERE run_id = {first} AND name = 'fio.json'"
            ),
            {"b": body},
        )
        second = "(SELECT min(id) + 1 FROM runs)"
        conn.execute(text(f"UPDATE runs SET env_json = :e, env_ref = NULL WHERE id = {second}"), {"e": env})
    assert copy_runs(src, dst) == Copied(4, 0, 0)
    assert _rows(dst, "SELECT name FROM artifacts WHERE encoding = 'identity'") == [("tiny",)] * 4
    assert body in [a.body for r in _whole_runs(dst) for a in r.artifacts]
    assert _whole_runs(dst) == _whole_runs(src)
    for sql in (
        "SELECT encoding, data FROM run_metrics ORDER BY run_id",
        "SELECT * FROM metric_kinds ORDER BY id",
    ):
        assert _rows(dst, sql) == _rows(src, sql)
    kept = "SELECT ref, encoding, data FROM run_docs WHERE ref IN (SELECT bed_ref FROM runs) ORDER BY ref"
    assert _rows(dst, kept) == _rows(src, kept)
    assert _rows(dst, "SELECT count(*) FROM runs WHERE env_ref IS NULL") == [(0,)]


def test_db_copy_into_a_store_with_kinds_of_its_own_renumbers_the_metrics(
    store_url: str, store_url2: str
) -> None:
    src, dst = _fill(store_url, 4), Store(store_url2)
    dst.add_runs([dataclasses.replace(_run(9, "other"), metrics=(Metric("zz_first", 1.0, "s"),), uuid=None)])
    assert copy_runs(src, dst).copied == 4
    assert [r for r in _whole_runs(dst) if r.label != "other"] == _whole_runs(src)


def test_db_copy_reads_kinds_added_to_the_source_while_it_copies(store_url: str, store_url2: str) -> None:
    # the source's kinds are read once, at the start; a run added meanwhile with a new
    # metric names a kind id the copy has not seen: it reads them again, not KeyError
    src, dst = _fill(store_url, 4), Store(store_url2)
    added = False

    def done(_n: int) -> None:
        nonlocal added
        if not added:
            added = True
            late = dataclasses.replace(_run(9, "late"), metrics=(Metric("zz_new", 2.0, "s"),), uuid=None)
            src.add_runs([late])

    assert copy_runs(src, dst, chunk=2, done=done).copied == 5
    assert _whole_runs(dst) == _whole_runs(src)


def test_a_missing_delta_base_is_asked_for_once(store_url: str) -> None:
    # a base the store lacks (a damaged store) was asked for again and again: every read of
    # its runs hung; now kept_docs returns what there is
    s = _fill(store_url, 3)
    gone = "f" * codec.REF_LEN  # a delta's base: its ref, then the compressed text
    with s.engine.begin() as conn:
        conn.execute(
            text("UPDATE run_docs SET encoding = :e, data = :d WHERE ref = (SELECT min(env_ref) FROM runs)"),
            {"e": codec.DOC_DELTA, "d": gone.encode() + b"x"},
        )

    def hung(_sig: int, _frame: object) -> None:
        raise TimeoutError("kept_docs still asking after 10 s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with s.reading() as db:
            got = kept_docs(db, db.maps("SELECT * FROM runs"))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert gone not in got and any(codec.delta_base(e, d) == gone for e, d in got.values())


def test_processes_opening_a_new_sqlite_store_at_once_migrate_it_once(tmp_path: Path) -> None:
    # each DDL statement used to commit by itself: two first opens interleaved their
    # CREATE TABLEs ("table alembic_version already exists")
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code = f"from iowall.store import Store; print(Store({url!r}).count())"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, outs, strict=True)] == [(0, "0")] * 6, [
        err for _, err in outs
    ]
    with Store(url).engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == HEAD


def test_a_figure_to_a_fifo_leaves_it_a_fifo(tmp_path: Path) -> None:
    """write_bytes (plots) as open_atomic: a path that is not a regular file is written
    through, never renamed over (as root, `-o /dev/null` once replaced the device)."""
    from iowall.machine.atomic import write_bytes

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_bytes(str(fifo), b"\x89PNG", what="figure")
    reader.join(10)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and got == [b"\x89PNG"]
