"""PostgreSQL as a second store, against the suite's own server (tests/pg.py): `db copy`
is lossless and idempotent both ways, `compare` prints the same on both backends, and
concurrent writers lose nothing and duplicate nothing."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import queue
import random
import time
import uuid as uuidlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from iowall.bundle.files import bundle_doc, read_bundle, write_bundle
from iowall.cli.main import main
from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.results import Report
from iowall.store import Store
from iowall.store import schema as t
from iowall.store.ingest import import_runs
from iowall.store.reports import add_report, get_report

from ..pg import Cluster
from ..unit.compare_data import runs as compare_runs

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test


def _whole_run(i: int, label: str) -> Run:
    """A run carrying a bit of everything: NaN and infinite metrics, unicode, series."""
    return Run(
        point=Point("buffered-wall", {"rw": "write", "jobs": i % 3 + 1, "direct": False}),
        label=label,
        status="ok" if i % 4 else "failed",
        started_at=1.7e9 + i / 3,
        finished_at=1.7e9 + i / 3 + 10.125,
        batch=f"batch-{i // 4}",
        repeat_index=i % 2,
        metrics=(
            Metric("write_bw_bytes_per_s", 1.5e9 + i * 0.1, "B/s"),
            Metric("write_clat_p99_s", float("inf") if i == 2 else 1e-3 / 3, "s", "lower"),
            Metric("Write_iops", float("nan") if i == 1 else 123.0, "IO/s"),
            Metric("a_b", -0.0, "s", "lower"),
        ),
        env={"kernel": f"6.18.{i}", "host": {"hostname": "büx", "cpu_count": 2}, "commit": "abc"},
        bed={"kind": "ram", "fs": "xfs", "block_size": 4096},
        artifacts=(
            Artifact("fio.json", "application/json", json.dumps({"i": i, "s": "✓"})),
            Artifact("Notes.txt", "text/plain", "line\n\ttab ü\n"),
        ),
        series=(
            Series("cpu", "sys", "share", ((0.0, 0.1), (0.5, 1 / 3))),
            Series("Flusher", "busy", "share", ((0.0, 0.0),)),
        ),
        error="" if i % 4 else "fio died: ENOSPC",
        notes=("a note", "ünï"),
    )


def _runs_of(url: str, label: str | None = None) -> str:
    """The runs of a store (or those with ``label``) as their bundle text, without the
    store's own ids: equal text is equal runs, NaN included."""
    s = Store(url)
    runs = [s.get_run(r.id or 0) for r in s.runs() if label is None or r.label == label]
    docs = bundle_doc(runs)["runs"]
    for d in docs:
        d.pop("source_id")
    return json.dumps(docs, ensure_ascii=False)


def _copy(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["db", "copy", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _report(batch: str, ids: list[int]) -> Report:
    return Report(
        kind="recipe",
        name="buffered-wall",
        title="t",
        batch=batch,
        label="base",
        run_ids=tuple(ids),
        compare_sides=(("base", tuple(ids[:1])), ("patched", tuple(ids[1:]))),
        tail=(f"runs {ids[0]}–{ids[-1]}",),
    )


def test_copy_is_lossless_and_idempotent_both_ways(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_a, sqlite_b = f"sqlite:///{tmp_path / 'a.db'}", str(tmp_path / "b.db")
    src = Store(sqlite_a)
    ids = src.add_runs([_whole_run(i, "base" if i < 6 else "patched") for i in range(10)])
    add_report(src, _report("batch-0", ids[:4]))
    dst = Store(pg_url)
    dst.add_run(_whole_run(99, "local"))  # the destination numbers runs its own way

    rc, out, _ = _copy(capsys, sqlite_a, pg_url)
    assert rc == 0
    assert out.startswith("copied 10 runs and 1 report from sqlite:///") and out.endswith(
        "; 0 already there\n"
    )
    copied = _runs_of(pg_url, "base")[:-1] + ", " + _runs_of(pg_url, "patched")[1:]
    assert copied == _runs_of(sqlite_a) and '"value": NaN' in copied
    assert _copy(capsys, sqlite_a, pg_url)[1].startswith("copied 0 runs and 0 reports")
    assert Store(pg_url).count() == 11

    # the report's run ids now name the same runs in the destination's numbering
    rep = get_report(Store(pg_url), "batch-0")
    uuids = {r.id: r.uuid for r in Store(pg_url).runs()}
    src_uuids = {r.id: r.uuid for r in src.runs()}
    assert [uuids[i] for i in rep.run_ids] == [src_uuids[i] for i in ids[:4]]
    assert [uuids[i] for i in rep.compare_sides[1][1]] == [src_uuids[i] for i in ids[1:4]]
    assert rep.tail == get_report(src, "batch-0").tail  # text as written

    # back to SQLite, selected by label: the same runs, byte for byte as a bundle
    rc, out, _ = _copy(capsys, pg_url, sqlite_b, "--select", "patched")
    assert rc == 0 and out.startswith("copied 4 runs and 0 reports")
    assert _runs_of(f"sqlite:///{sqlite_b}") == _runs_of(sqlite_a, "patched")
    rc, out, _ = _copy(capsys, pg_url, sqlite_b)
    assert out.startswith("copied 7 runs and 1 report") and out.endswith("; 4 already there\n")


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["nosuch://x", "b.db"], "cannot open store 'nosuch://x'"),
        (["{tmp}/missing.db", "{tmp}/b.db"], "no store at "),
        (["{tmp}/a.db", "postgresql://nobody@/x?host={tmp}"], "cannot open store 'postgresql://"),
        (["{tmp}/a.db", "{tmp}/a.db"], "SRC and DST are the same store"),
        (["{tmp}/a.db", "{tmp}/b.db", "--select", "x.json"], "bundle x.json: no such file"),
    ],
)
def test_copy_bad_stores_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expect: str
) -> None:
    Store(str(tmp_path / "a.db"))
    rc, out, err = _copy(capsys, *(a.format(tmp=tmp_path) for a in args))
    assert rc == 2 and out == ""
    assert err.startswith("iowall: error: ") and expect in err and err.count("\n") == 1


def test_an_interrupted_copy_leaves_no_store_it_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (or an error) before a copy's first group is committed: exit 130, one line,
    and no SQLite store where there was none; a store that was there is kept."""
    from iowall.cli import db as db_cli

    src = Store(str(tmp_path / "src.db"))
    src.add_run(_whole_run(0, "a"))

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(db_cli, "copy_runs", interrupted)
    rc, out, err = _copy(capsys, str(tmp_path / "src.db"), str(tmp_path / "new.db"))
    assert (rc, out, err) == (130, "", "iowall: interrupted\n")
    assert not (tmp_path / "new.db").exists()
    Store(str(tmp_path / "old.db"))
    assert _copy(capsys, str(tmp_path / "src.db"), str(tmp_path / "old.db"))[0] == 130
    assert (tmp_path / "old.db").exists()


def test_compare_prints_the_same_on_both_backends(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite = f"sqlite:///{tmp_path / 'a.db'}"
    runs = compare_runs("base", seed=1) + compare_runs("patched", seed=2, scale={"0": 0.9})
    outs = []
    for url in (sqlite, pg_url):
        Store(url).add_runs([dataclasses.replace(r, id=None) for r in runs])
        for fmt in ("text", "json"):
            assert main(["compare", "base", "patched", "--format", fmt, "--db", url]) == 0
            outs.append(capsys.readouterr().out)
    assert "worse" in outs[0]
    assert outs[0] == outs[2] and outs[1] == outs[3]


# -- concurrent writers --------------------------------------------------------------------

WRITERS = 4
RUNS_EACH = 50


def _writer(url: str, k: int, bundle: str, start: Any, out: Any) -> None:
    """One writing process: opens the store when the others do, adds RUNS_EACH runs of its
    own one transaction each, and halfway imports the shared bundle (shuffled) with the others."""
    start.wait()
    s = Store(url)
    shared = read_bundle(bundle)
    random.Random(k).shuffle(shared)
    result = (0, 0)
    for i in range(RUNS_EACH):
        if i == RUNS_EACH // 2:
            start.wait()
            result = import_runs(s, shared)
        s.add_run(dataclasses.replace(_whole_run(i, f"w{k}"), batch=f"w{k}"))
    out.put((k, result))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_writers_lose_nothing_and_duplicate_nothing(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'a.db'}"
        Store(url)  # a SQLite file is created by one process, not raced
    else:  # an empty database: the writers' first open races the migrations too
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        name = "c_" + uuidlib.uuid4().hex[:12]
        cluster.psql(f"CREATE DATABASE {name} TEMPLATE template0")
        request.addfinalizer(lambda: cluster.drop_db(name))
        url = cluster.url(name)
    bundle = str(tmp_path / "shared.json")
    shared = [dataclasses.replace(_whole_run(i, "shared"), uuid=str(uuidlib.uuid4())) for i in range(20)]
    write_bundle(shared, bundle)

    ctx = mp.get_context("fork")  # the children start with iowall imported: 0.1 s, not 2
    start, out = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, k, bundle, start, out)) for k in range(WRITERS)]
    t0 = time.monotonic()
    for p in procs:
        p.start()
    results: dict[int, tuple[int, int]] = {}
    while len(results) < WRITERS:  # a writer that dies fails the test now, not at a timeout
        try:
            k, res = out.get(timeout=0.2)
            results[k] = res
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead or time.monotonic() - t0 > 300:
                for p in procs:
                    p.kill()
                pytest.fail(f"writers ended with {dead or 'a timeout'}")
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    print(f"{backend}: {WRITERS} writers, {time.monotonic() - t0:.1f} s")

    # every writer saw every shared run, and exactly one added each
    assert all(a + s == len(shared) for a, s in results.values())
    assert sum(a for a, _ in results.values()) == len(shared)
    s = Store(url)
    assert s.count() == WRITERS * RUNS_EACH + len(shared)
    runs = s.runs()
    assert len({r.uuid for r in runs}) == len(runs)
    assert {r.uuid for r in runs if r.label == "shared"} == {r.uuid for r in shared}
    for k in range(WRITERS):
        mine = [r for r in runs if r.label == f"w{k}"]
        assert sorted(r.started_at for r in mine) == [_whole_run(i, "").started_at for i in range(RUNS_EACH)]
    with s.engine.connect() as conn:
        # a run's series (0003) and metrics (0004) are one row each; its metrics name 4 kinds
        # shared by all runs
        for table, per_run in ((t.run_metrics, 1), (t.artifacts, 2), (t.series, 1)):
            assert conn.execute(select(func.count()).select_from(table)).scalar_one() == per_run * len(runs)
        assert conn.execute(select(func.count()).select_from(t.metric_kinds)).scalar_one() == 4
