"""PostgreSQL going away under a job, against the suite's own server (tests/pg.py): a write
whose connection was cut (the server killed its backends, as a restart does) is tried again
with a line saying so, and stored once; a store error a new connection cannot mend stands."""

from __future__ import annotations

import pytest

from iowall.model import Metric, Point, Run
from iowall.store import RunFilter, Store

from ..pg import Cluster

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test


def _run(i: int) -> Run:
    return Run(
        point=Point("plan:pg", {"jobs": 1}),
        label="pg",
        status="ok",
        started_at=float(i),
        finished_at=float(i) + 1,
        metrics=(Metric("write_bw_bytes_per_s", 1e9, "B/s"),),
        batch="b",
    )


def test_a_cut_connection_is_tried_again_and_stored_once(pg_cluster: Cluster, pg_url: str) -> None:
    store = Store(pg_url)
    store.add_run(_run(0))  # the pool now holds a connection
    db = pg_url.split("?")[0].rsplit("/", 1)[1]
    killed = pg_cluster.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{db}' AND pid <> pg_backend_pid()"
    )
    assert int(killed) >= 1, (db, killed)
    said: list[str] = []
    store.add_run(_run(1), waiting=said.append)
    assert len(said) == 1 and "was lost" in said[0] and "trying again in 1 s" in said[0], said
    assert [r.started_at for r in store.runs(RunFilter(batch="b"))] == [0.0, 1.0]
