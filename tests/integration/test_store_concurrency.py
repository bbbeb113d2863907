"""Two processes writing one SQLite store at once, as a CI box sees it: `iowall run` storing
its runs while `iowall import` adds bundle after bundle. Both land every run (WAL and a
busy timeout: writers wait for each other instead of failing with 'database is locked')."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

PLAN = textwrap.dedent("""\
    label = "writer"
    repeat = 4
    probes = ["cpu"]
    [workload]
    kind = "fio"
    rw = "write"
    bs = "1M"
    size = "64M"
    [bed]
    kind = "ram"
    size = "512M"
    [axes]
    jobs = [1, 2]
    """)
BUNDLES = 25


def test_run_and_import_at_once_land_everything(tmp_path: Path) -> None:
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    plan = tmp_path / "w.toml"
    plan.write_text(PLAN)
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))
    # A real run to import copies of: its bundle, with fresh uuids per copy.
    seed = dict(env, IOWALL_DB=f"sqlite:///{tmp_path / 'seed.db'}")
    iowall("run", str(plan), "--repeat", "1", "--probes", "none", "--label", "seed", env=seed, check=True)
    iowall("export", "-o", str(tmp_path / "seed.json"), env=seed, check=True)
    doc = json.loads((tmp_path / "seed.json").read_text())
    per = len(doc["runs"])
    files = []
    for i in range(BUNDLES):
        for r in doc["runs"]:
            r["uuid"] = str(uuid.uuid4())
        f = tmp_path / f"b{i}.json"
        f.write_text(json.dumps(doc))
        files.append(str(f))

    db = tmp_path / "shared.db"
    shared = dict(env, IOWALL_DB=f"sqlite:///{db}")
    runner = subprocess.Popen(
        [exe, "run", str(plan)], env=shared, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    script = " && ".join(f"{exe} import {f} >/dev/null" for f in files)
    importer = subprocess.Popen(["sh", "-c", script], env=shared, stderr=subprocess.PIPE, text=True)
    _, run_err = runner.communicate(timeout=900)
    _, imp_err = importer.communicate(timeout=900)
    assert runner.returncode == 0, run_err
    assert importer.returncode == 0, imp_err
    assert "locked" not in run_err + imp_err
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        by_label = dict(con.execute("SELECT label, count(*) FROM runs GROUP BY label"))
        uuids = con.execute("SELECT count(DISTINCT uuid), count(*) FROM runs").fetchone()
    finally:
        con.close()
    assert by_label == {"writer": 8, "seed": BUNDLES * per}, by_label
    assert uuids[0] == uuids[1] == 8 + BUNDLES * per
