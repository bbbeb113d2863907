"""Faults from outside a job, with real fio and real filesystems: the store's disk filling
mid-run (the run waits in the spool, the next command imports it, once), a store refused
before measuring (no room, read-only), a plan whose every point failed exiting 1, and every
store error one line, never a traceback (docs/safety.md)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.store import Store
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

PLAN = textwrap.dedent(
    """
    label = "{label}"
    repeat = {repeat}
    probes = ["default"]
    [workload]
    kind = "fio"
    rw = "write"
    bs = "1M"
    size = "{size}"
    direct = 0
    [bed]
    kind = "ram"
    fs = "xfs"
    size = "{bed}"
    [axes]
    jobs = [1]
    """
)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 9 MiB for the store (room for a job by ``Store.check_room``, not for much
    more), unmounted after the test."""
    mnt = tmp_path / "store-fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=9m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _env(tmp_path: Path, db: Path) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.update(
        IOWALL_DB=str(db), XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state")
    )
    return env


def _first_run_stored(tmp_path: Path, db: Path, label: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """A four-run job started on the store ``db``, once its first run is stored."""
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(label=label, repeat=4, size="64M", bed="512M"))
    env = _env(tmp_path, db)
    exe = str(Path(sys.executable).with_name("iowall"))
    child = subprocess.Popen(
        [exe, "run", str(plan), "--no-hold-memory"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while _stored(db) < 1 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stored(db) >= 1, "no run was stored"
    return child, env


def _stored(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            return int(con.execute("SELECT count(*) FROM runs").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_a_store_that_fills_mid_run_loses_nothing(tmp_path: Path, small_fs: Path) -> None:
    """The store's filesystem fills once the first run is stored: the job stops with one line
    (exit 4) naming the spool file; the run waits there; the next command on that store
    imports it, once."""
    db = small_fs / "s.db"
    child, env = _first_run_stored(tmp_path, db, "fills")
    # fill what is left of the store's filesystem
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={small_fs / 'fill'}", "bs=64k"], capture_output=True, check=False
    )
    _, err = child.communicate(timeout=600)
    stored_before = _stored(db)
    assert child.returncode == 4, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("iowall: store failed")]
    assert len(lines) == 1, err
    spool = next((w for w in lines[0].split() if w.endswith(".json")), "")
    assert spool and Path(spool).exists() and "database or disk is full" in lines[0], lines[0]

    (small_fs / "fill").unlink()  # room again: the next command imports what waits
    listed = iowall("spool", "--format", "json", env=env, check=True)
    assert [f["runs"] for f in json.loads(listed.stdout)["files"]] == [1]
    first = iowall("runs", "--format", "json", env=env, check=True)
    assert "imported 1 run" in first.stderr
    assert len(json.loads(first.stdout)["runs"]) == stored_before + 1
    assert not Path(spool).exists()
    again = iowall("runs", "--format", "json", env=env, check=True)
    assert "imported" not in again.stderr and len(json.loads(again.stdout)["runs"]) == stored_before + 1


def test_a_store_without_room_is_refused_before_measuring(tmp_path: Path) -> None:
    """A store on a filesystem with under 8 MiB free, or one mounted read-only, is refused
    in one line (exit 4) before the machine lock or a bed."""
    plan = tmp_path / "p.toml"
    plan.write_text(PLAN.format(label="room", repeat=1, size="64M", bed="512M"))
    for opts, said in (("size=2m", "MiB free on its filesystem"), ("size=20m", "read-only filesystem")):
        mnt = tmp_path / opts.replace("=", "")
        mnt.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], check=True)
        try:
            if said.startswith("read-only"):
                Store(str(mnt / "s.db")).close()  # a store that was written, then its disk went read-only
                subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
            cp = iowall("run", str(plan), "--no-hold-memory", env=_env(tmp_path, mnt / "s.db"))
            assert cp.returncode == 4 and said in cp.stderr, cp.stderr
            assert "Traceback" not in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
            if not said.startswith("read-only"):
                assert not list(mnt.iterdir())  # refused before a store file was made
        finally:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_store_that_cannot_be_made_leaves_nothing(tmp_path: Path) -> None:
    """A store whose tables do not fit: one line, printed once, and no half-made file."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=120k", "tmpfs", str(mnt)], check=True)
    try:
        plan = tmp_path / "p.toml"
        plan.write_text(PLAN.format(label="tiny", repeat=1, size="64M", bed="512M"))
        cp = iowall("run", str(plan), "--no-hold-memory", env=_env(tmp_path, mnt / "s.db"))
        assert cp.returncode == 4 and "Traceback" not in cp.stderr
        assert "MiB free on its filesystem" in cp.stderr and len(cp.stderr.splitlines()) == 1, cp.stderr
        assert not list(mnt.iterdir())
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_plan_whose_every_point_failed_exits_1(tmp_path: Path) -> None:
    """fio fills the bed (No space left on device): the run is stored as failed, the report
    says so, the JSON's outcome counts it, and the exit code is 1, not 0."""
    plan = tmp_path / "fill.toml"
    plan.write_text(PLAN.format(label="filled", repeat=1, size="900M", bed="400M"))
    env = _env(tmp_path, tmp_path / "s.db")
    cp = iowall("run", str(plan), "--no-hold-memory", "--format", "json", env=env)
    assert cp.returncode == 1, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["outcome"] == {"measured": 0, "failed": 1, "interrupted": 0, "exit_code": 1}
    assert any("1 of 1 run did not measure (1 failed): exit code 1" in t for t in doc["tail"])
    assert doc["runs"][0]["status"] == "failed" and "No space left on device" in doc["runs"][0]["error"]


def test_a_corrupt_store_is_one_line(tmp_path: Path) -> None:
    """A file that is not a database: one line, no traceback, whatever the command."""
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database, " * 512)
    for args in (("runs",), ("show", "1"), ("history", "label=x")):
        cp = iowall(*args, env=_env(tmp_path, bad))
        assert cp.returncode in (2, 4) and "Traceback" not in cp.stderr, (args, cp.stderr)
        assert len(cp.stderr.strip().splitlines()) == 1, (args, cp.stderr)


def test_a_job_killed_mid_run_loses_nothing_and_stores_nothing_twice(tmp_path: Path) -> None:
    """SIGKILL of the whole job once a run is stored: `recover` tears the bed down, the next
    command imports whatever the spool kept, and no uuid is stored twice."""
    import os
    import signal

    db = tmp_path / "s.db"
    child, env = _first_run_stored(tmp_path, db, "killed")
    time.sleep(0.4)  # somewhere inside the next run
    os.killpg(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    recovered = iowall("recover", env=env)
    assert recovered.returncode == 0 and "Traceback" not in recovered.stderr, recovered.stderr
    after = iowall("runs", "--format", "json", env=env, check=True)
    assert "Traceback" not in after.stderr
    uuids = [r.uuid for r in Store(str(db)).runs()]
    assert len(uuids) >= 1 and len(uuids) == len(set(uuids))
    assert not list((tmp_path / "data" / "iowall" / "spool").glob("*/*.json"))
