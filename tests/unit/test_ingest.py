"""The batched ingest (store/ingest.py): the rows it writes are those of one run at a time,
an import that finds the store busy waits, says so once, then lands everything; an import
of many files is all or nothing, and a run saved meanwhile waits for it however long."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import select

from iowall.store import Store, write
from iowall.store import schema as t
from iowall.store.ingest import add_new_runs, import_parts, import_runs
from iowall.store.packing import Packed, pack_run
from iowall.store.write import IMPORT_LOCK
from iowall.vocab.errors import UserError

from ..integration.test_import_concurrency import _run


def _rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    s = Store(url)
    with s.engine.connect() as conn:
        return {
            tb.name: sorted(tuple(r) for r in conn.execute(select(tb)))
            for tb in (t.runs, t.run_docs, t.run_metrics, t.artifacts, t.series, t.metric_kinds)
        }


def test_batches_store_the_bytes_single_inserts_store(store_url: str, store_url2: str) -> None:
    runs = [_run(i, "a") for i in range(30)]
    Store(store_url).add_runs(runs[:10])  # the store holds some already: they are skipped
    Store(store_url2).add_runs(runs[:10])
    Store(store_url2).add_runs(runs[10:])
    assert add_new_runs(Store(store_url), runs, group=7) == 20
    assert _rows(store_url) == _rows(store_url2)


def test_a_busy_store_is_waited_for_and_said(store_url: str) -> None:
    said: list[str] = []
    got: list[tuple[int, int]] = []
    store = Store(store_url)  # made and migrated before another writer holds it
    if store_url.startswith("sqlite"):
        holder: sqlite3.Connection | psycopg.Connection[object] = sqlite3.connect(
            store_url.removeprefix("sqlite:///"), isolation_level=None
        )
        holder.execute("BEGIN IMMEDIATE")  # another writer's transaction
    else:
        holder = psycopg.connect(store_url, autocommit=True)
        holder.execute("SELECT pg_advisory_lock(%s)", (IMPORT_LOCK,))  # another import's turn
    runs = [dataclasses.replace(_run(i, "b"), label="b") for i in range(3)]
    worker = threading.Thread(target=lambda: got.append(import_runs(store, runs, waiting=said.append)))
    worker.start()
    time.sleep(1.0)
    assert got == [] and len(said) == 1 and said[0].startswith("waiting for "), said
    if isinstance(holder, sqlite3.Connection):
        holder.execute("COMMIT")
    else:
        holder.execute("SELECT pg_advisory_unlock(%s)", (IMPORT_LOCK,))
    worker.join(30)
    holder.close()
    assert got == [(3, 0)] and len(said) == 1


def test_an_import_is_all_or_nothing(store_url: str) -> None:
    """Parts are written as they come, in one transaction: a part that fails after others
    were written leaves the store as it was; one that does not lands all, once each."""
    store = Store(store_url)
    store.add_run(_run(0, "c"))
    runs = [_run(i, "c") for i in range(6)]

    def parts(fail: bool) -> Iterator[list[Packed]]:
        yield [pack_run(r) for r in runs[:3]]
        yield [pack_run(r) for r in runs[2:5]]  # run 2 again: written once
        if fail:
            raise UserError("bundle bad.json: created_at: missing")  # as a file read later fails
        yield [pack_run(runs[5])]

    with pytest.raises(UserError, match="bad.json"):
        import_parts(store, parts(fail=True))
    assert store.count() == 1
    assert import_parts(store, parts(fail=False)) == 5
    assert sorted(r.uuid for r in store.runs()) == sorted(r.uuid for r in runs)
    assert import_parts(store, parts(fail=False)) == 0


def test_a_run_saved_during_a_long_import_waits_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: a writer holding the store past the busy timeout (an import's one transaction)
    makes a run's save wait and say so once, not fail with 'database is locked'."""
    monkeypatch.setattr(write, "_BUSY_MS", 300)  # the holder keeps it five times as long
    url = f"sqlite:///{tmp_path / 'iowall.db'}"
    store = Store(url)
    holder = sqlite3.connect(tmp_path / "iowall.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    said: list[str] = []
    got: list[int] = []
    worker = threading.Thread(target=lambda: got.append(store.add_run(_run(1, "d"), waiting=said.append)))
    worker.start()
    time.sleep(1.5)
    assert got == [] and len(said) == 1 and said[0].startswith("waiting for "), said
    holder.execute("COMMIT")
    holder.close()
    worker.join(30)
    assert len(got) == 1 and store.count() == 1 and len(said) == 1


def test_an_interrupt_inside_the_driver_stays_an_interrupt(tmp_path: Path) -> None:
    """Ctrl-C while the driver executes: SQLAlchemy drops the connection (SQLite rolls the
    transaction back as it closes); the write turn lets the interrupt through rather than a
    PendingRollbackError from a ROLLBACK on a connection that is gone."""
    store = Store(f"sqlite:///{tmp_path / 'iowall.db'}")
    with pytest.raises(KeyboardInterrupt), write.sqlite_write_turn(store.engine, store.shown) as conn:
        conn.exec_driver_sql("INSERT INTO metric_kinds (name, unit, direction) VALUES ('x', 's', 'lower')")
        conn.invalidate()  # what SQLAlchemy does when a KeyboardInterrupt reaches it mid-statement
        raise KeyboardInterrupt
    with sqlite3.connect(tmp_path / "iowall.db") as con:
        assert con.execute("SELECT count(*) FROM metric_kinds").fetchone() == (0,)
    assert store.add_run(_run(1, "e")) > 0  # the store is writable after it
