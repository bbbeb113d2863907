"""Concurrent ingest (issue 27 item 2): 8 `iowall import` processes at once into PostgreSQL,
2 into SQLite, each importing its own runs and the same shared runs in its own order (one
transaction an import), while another process stores runs one at a time as `iowall run`
does and a third adds runs as a fleet's results go in (``add_new_runs``, a transaction a
group). Afterwards every run is there exactly once, with its rows once; no writer failed,
deadlocked or said "locked"."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

from sqlalchemy import func, select

from iowall.bundle.files import write_bundle
from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.store import Store
from iowall.store import schema as t

SRC = str(Path(__file__).resolve().parents[2] / "src")
#: Runs only one importer has, and runs every importer has: 700 a bundle.
OWN, SHARED = 300, 400
#: Runs only the fleet-like writer has (it has the shared ones too), and its group.
FLEET, FLEET_GROUP = 100, 150
#: Runs the concurrent single-run writer adds, one transaction each.
SINGLES = 40


def _run(i: int, label: str) -> Run:
    return Run(
        point=Point("buffered-wall", {"rw": "write", "jobs": i % 3 + 1}),
        label=label,
        status="ok",
        started_at=1.7e9 + i,
        finished_at=1.7e9 + i + 10.0,
        batch=f"{label}-{i // 50}",
        metrics=(
            Metric("write_bw_bytes_per_s", 1.5e9 + i, "B/s"),
            Metric(f"m{i % 7}", float(i), "s", "lower"),
        ),
        env={"kernel": f"6.18.{i % 5}", "host": {"hostname": f"h{i % 3}", "cpu_count": 2}, "free": i},
        bed={"kind": "ram", "fs": "xfs"},
        artifacts=(
            Artifact("fio.json", "application/json", json.dumps({"i": i, "pad": "x" * 200})),
            Artifact("job.fio", "text/plain", f"[job]\nsize={i}M\n"),
        ),
        series=(Series("cpu", "sys", "share", tuple((k / 2, (i + k) % 10 / 10) for k in range(50))),),
        uuid=str(uuid.UUID(int=random.Random(f"{label}{i}").getrandbits(128), version=4)),
    )


SINGLE_WRITER = """
import dataclasses, sys
from iowall.store import Store
sys.path.insert(0, {tests!r})
from test_import_concurrency import _run
s = Store({url!r})
for i in range({n}):
    s.add_run(dataclasses.replace(_run(i, "single"), uuid=""))
"""


FLEET_WRITER = """
import random, sys
from iowall.store import Store
from iowall.store.ingest import add_new_runs
sys.path.insert(0, {tests!r})
from test_import_concurrency import FLEET, FLEET_GROUP, SHARED, _run
runs = [_run(i, "fleet") for i in range(FLEET)] + [_run(i, "shared") for i in range(SHARED)]
random.Random(99).shuffle(runs)
print(add_new_runs(Store({url!r}), runs, group=FLEET_GROUP, waiting=lambda m: print(m, file=sys.stderr)))
"""


def _ingest_at_once(url: str, importers: int, tmp_path: Path) -> None:
    shared = [_run(i, "shared") for i in range(SHARED)]
    files, source = [], {r.uuid: r for r in shared}
    for k in range(importers):
        mine = [_run(i, f"own{k}") for i in range(OWN)] + shared
        random.Random(k).shuffle(mine)
        source.update((r.uuid, r) for r in mine)
        files.append(str(tmp_path / f"b{k}.json"))
        write_bundle(mine, files[-1])
    env = dict(os.environ, PYTHONPATH=SRC)
    single = [
        sys.executable,
        "-c",
        SINGLE_WRITER.format(tests=str(Path(__file__).parent), url=url, n=SINGLES),
    ]
    fleet = [sys.executable, "-c", FLEET_WRITER.format(tests=str(Path(__file__).parent), url=url)]
    source.update((r.uuid, r) for r in (_run(i, "fleet") for i in range(FLEET)))
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd in (single, fleet)
    ]
    procs += [
        subprocess.Popen(
            [sys.executable, "-m", "iowall", "import", f, "--db", url],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err and "deadlock" not in err, err
    expect = set(source)
    imported = int(outs[1][0]) + sum(int(out.split()[1]) for out, _ in outs[2:])  # "imported N runs, …"
    assert imported == len(expect), [o for o, _ in outs]
    s = Store(url)
    with s.engine.connect() as conn:
        uuids = list(conn.execute(select(t.runs.c.uuid)).scalars())
        counts = {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (t.run_metrics, t.artifacts, t.series)
        }
    stored = set(uuids)
    assert len(uuids) == len(stored) == len(expect) + SINGLES, "a run is doubled or lost"
    assert expect <= stored, f"{len(expect - stored)} runs lost"
    assert counts == {"run_metrics": len(uuids), "artifacts": 2 * len(uuids), "run_series": len(uuids)}
    for r in s.runs():  # each run whole: its own metrics, not another's
        if r.label != "single":
            assert set(r.metrics) == set(source[r.uuid].metrics)


def test_eight_importers_into_postgresql_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    _ingest_at_once(pg_url, 8, tmp_path)


def test_two_importers_into_sqlite_lose_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    Store(url)  # one process makes the file
    _ingest_at_once(url, 2, tmp_path)
    con = sqlite3.connect(tmp_path / "shared.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
