"""Reads that do not grow with the store (issue 27 items 3 and 4): a SQLite store read without
SQLAlchemy, pages by keyset (no OFFSET), labels and kernel prefixes served by indexes
(migration 0005), on SQLite and PostgreSQL, and a store migrated in place answering as
before."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from iowall.cli import runs as runs_cli
from iowall.cli.main import main
from iowall.model import Metric, Point, Run
from iowall.results import Report
from iowall.store import RunFilter, Store
from iowall.store import db as store_db
from iowall.store.reports import add_report
from iowall.store.rows import where
from iowall.store.write import engine_url
from tests.fresh_process import fresh_run
from tests.unit.test_store_scale import _cfg

SRC = str(Path(__file__).resolve().parents[2] / "src")
KERNELS = ("6.6", "6.6.1", "6.6-rc2", "6.60.1", "6.6a", "6.6.1+x", "6.6_b", "6.1.0", "6.6~1", "6.6/x")


def _run(i: int) -> Run:
    return Run(
        point=Point("limits", {"jobs": i % 3}),
        label=f"L{(i * 7) % 5}",  # labels first met out of alphabetical order
        status="ok" if i % 4 else "failed",
        started_at=1e9 + i,
        finished_at=1e9 + i + 1,
        env={"kernel": KERNELS[i % len(KERNELS)], "host": {"hostname": f"h{i % 2}"}},
        bed={"kind": "ram"},
        metrics=(Metric("bw", float(i), "B/s"),),
    )


def _fill(url: str, n: int = 40) -> Store:
    s = Store(url)
    s.add_runs([_run(i) for i in range(n)])
    return s


def _labels_by_group_by(s: Store) -> list[str]:
    """Labels, oldest first, as the store found them before 0005 (a GROUP BY of every run)."""
    with s.reading() as db:
        rows = db.all("SELECT label, min(id) FROM runs GROUP BY label")
    return [label for label, _ in sorted(rows, key=lambda r: r[1])]


def test_pages_by_keyset_match_pages_by_number(store_url: str) -> None:
    s = _fill(store_url)
    every = [r.id for r in s.runs()]
    for flt in (RunFilter(), RunFilter(label="L1"), RunFilter(kernel="6.6")):
        want = [r.id for r in s.runs(flt)]
        pages, before, number = [], None, 1
        while True:
            by_number, total = s.page(flt, number=number, size=3)
            by_key, below = s.page(flt, number=1, size=3, before=before)
            assert [r.id for r in by_number] == [r.id for r in by_key]
            assert total == len(want) and below == len([i for i in want if before is None or i < before])
            if not by_key:
                break
            pages = [r.id for r in by_key] + pages
            before, number = by_key[0].id, number + 1
        assert pages == want and set(want) <= set(every)


def test_runs_before_lists_the_next_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    ids = [r.id for r in _fill(db).runs()]
    assert main(["runs", "--limit", "5", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert f"35 older runs not shown: --before {ids[-5]} (or --page 2)" in err
    assert main(["runs", "--limit", "5", "--before", str(ids[-5]), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert [int(line.split()[0]) for line in out.splitlines()[1:]] == ids[-10:-5]
    assert f"30 older runs not shown: --before {ids[-10]}" in err
    assert main(["runs", "--last", "3", "--before", "9", "--db", db]) == 2


def test_sqlite_pages_use_no_offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "s.db")
    s = _fill(db)
    seen: list[str] = []

    def traced(path: str) -> sqlite3.Connection:
        con = sqlite3.connect(path, timeout=30)
        con.set_trace_callback(seen.append)
        return con

    monkeypatch.setattr(store_db, "connect_sqlite", traced)
    got, total = s.page(RunFilter(label="L2"), number=2, size=3)
    assert len(got) == 3 and total == 8
    assert seen and not [q for q in seen if "OFFSET" in q.upper()]


def _plan(s: Store, sql: str, params: dict[str, Any]) -> str:
    """The query plan of ``sql`` on ``s``'s backend, as text (PostgreSQL told to avoid
    sequential scans: on a table this small it would choose one whatever the indexes)."""
    with s.reading() as db:
        if db.dialect == "sqlite":
            return "\n".join(str(r[-1]) for r in db.all("EXPLAIN QUERY PLAN " + sql, params))
        db.all("SELECT set_config('enable_seqscan', 'off', false)")
        try:
            return "\n".join(str(r[0]) for r in db.all("EXPLAIN " + sql, params))
        finally:
            db.all("SELECT set_config('enable_seqscan', 'on', false)")


def test_labels_and_kernel_prefixes_are_served_by_indexes(store_url: str) -> None:
    s = _fill(store_url)
    assert s.labels() == _labels_by_group_by(s) == ["L0", "L2", "L4", "L1", "L3"]
    p: dict[str, Any] = {}
    kernel = f"SELECT id FROM runs{where(RunFilter(kernel='6.6'), s.dialect, p)} ORDER BY id"
    want = sorted(
        r.id for r in s.runs() if r.env["kernel"] in ("6.6", "6.6.1", "6.6-rc2", "6.6.1+x", "6.6_b", "6.6~1")
    )
    assert [r.id for r in s.runs(RunFilter(kernel="6.6"))] == want
    plan = _plan(s, kernel, p)
    if s.dialect == "sqlite":
        assert "ix_runs_kernel" in plan and "SCAN runs" not in plan, plan
    else:
        assert "ix_runs_kernel_c" in plan and "Seq Scan" not in plan, plan
    with s.reading() as db:  # the labels' loose index scan: every step a seek of an index
        found = db.all("SELECT min(id) FROM runs WHERE label = :l", {"l": "L3"})
    assert found
    label_plan = _plan(s, "SELECT min(id) FROM runs WHERE label = :l", {"l": "L3"})
    next_plan = _plan(s, "SELECT min(label) FROM runs WHERE label > :l", {"l": "L3"})
    for plan in (label_plan, next_plan):
        assert "ix_runs_label_id" in plan and "SCAN runs" not in plan and "Seq Scan" not in plan, plan


def test_migration_0005_adds_the_indexes_and_answers_as_before(store_url: str) -> None:
    s = _fill(store_url)
    engine = create_engine(engine_url(store_url))
    with engine.begin() as conn:
        command.downgrade(_cfg(conn), "0004")
    before = Store.__new__(Store)  # read as 0004 left it: no migration on open
    before.__dict__.update(s.__dict__)
    answers = (
        _labels_by_group_by(before),
        [r.id for r in before.runs(RunFilter(kernel="6.6"))],
        [r.id for r in before.page(RunFilter(label="L4"), number=2, size=2)[0]],
    )
    migrated = Store(store_url)  # at 0004: upgraded to head on open
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0005"
        if migrated.dialect == "sqlite":
            idx = {r[1] for r in conn.execute(text("PRAGMA index_list(runs)"))}
            assert "ix_runs_label_id" in idx and "ix_runs_label" not in idx
        else:
            idx = {
                r[0] for r in conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'runs'"))
            }
            assert {"ix_runs_label_id", "ix_runs_kernel_c"} <= idx
            assert not {"ix_runs_label", "ix_runs_kernel"} & idx
    assert (
        migrated.labels(),
        [r.id for r in migrated.runs(RunFilter(kernel="6.6"))],
        [r.id for r in migrated.page(RunFilter(label="L4"), number=2, size=2)[0]],
    ) == answers
    engine.dispose()


def test_reading_a_store_imports_no_sqlalchemy(store_url: str) -> None:
    # nor pydantic: typer 0.29 imported it to build an adapter for every option (half of
    # a 0.24 s `iowall runs`), hence typer<0.29 (pyproject.toml)
    rid = _fill(store_url, 3).runs()[0].id
    calls = [["runs", "--db", store_url], ["runs", "--label", "L0", "--db", store_url]]
    rcs, heavy, _ = fresh_run(
        [*calls, ["show", str(rid), "--db", store_url]], ["sqlalchemy", "alembic", "pydantic"]
    )
    assert rcs == [0, 0, 0] and heavy == []


def test_reprinting_a_report_without_a_compare_imports_no_numpy(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    s = _fill(db, 3)
    add_report(s, Report(kind="plan", name="p", title="a plan", head=("one line",), batch="b-1", label="L0"))
    rcs, heavy, (out,) = fresh_run(
        [["report", "b-", "--db", db]], ["numpy", "scipy", "sqlalchemy", "alembic", "pydantic"]
    )
    assert rcs == [0] and heavy == [] and "a plan" in out and "one line" in out


def test_counts_stop_past_a_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's count reads at most COUNTED entries past the page: "more than N" beyond."""
    db = str(tmp_path / "s.db")
    s = _fill(db)
    assert s.count(RunFilter()) == 40 and s.count(RunFilter(), at_most=9) == 10
    assert s.count(RunFilter(label="L1"), at_most=100) == 8
    monkeypatch.setattr(runs_cli, "COUNTED", 9)
    assert main(["runs", "--limit", "5", "--db", db]) == 0
    assert "more than 9 older runs not shown: --before" in capsys.readouterr().err
    monkeypatch.setattr(runs_cli, "COUNTED", 35)
    assert main(["runs", "--limit", "5", "--db", db]) == 0
    assert "35 older runs not shown: --before" in capsys.readouterr().err
