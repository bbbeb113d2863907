"""The batched ingest (store/ingest.py): the rows it writes are those of one run at a time,
and an import that finds the store busy waits, says so once, then lands everything."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time

import psycopg
from sqlalchemy import select

from iowall.store import Store
from iowall.store import schema as t
from iowall.store.ingest import add_new_runs, import_runs
from iowall.store.write import IMPORT_LOCK

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
