"""The spool (bundle/spool.py, actions/spool.py): a run is on disk before the store is asked
to keep it; a process killed between measuring and storing, or between the commit and the
drop, loses nothing and stores nothing twice; a store failure is one line naming the spool
file; the runner's outcome and exit codes (results.Outcome); a run too short to explain says
so instead of guessing (docs/safety.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from iowall.analysis.explain.run import explain
from iowall.bundle.spool import Spool
from iowall.cli.main import main
from iowall.machine.spooldir import spooled_files
from iowall.measure.runner import Outcome as TaskOutcome
from iowall.measure.runner import Schedule
from iowall.model import Artifact, Metric, Point, Run
from iowall.results import Outcome
from iowall.store import RunFilter, Store
from iowall.store.faults import connection_lost, failure_text
from iowall.vocab.errors import StoreFailed


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


def _run(i: int = 0) -> Run:
    return Run(
        point=Point("plan:s", {"rw": "write", "jobs": 1}),
        label="s",
        status="ok",
        started_at=1.0 + i,
        finished_at=2.0 + i,
        metrics=(Metric("write_bw_bytes_per_s", 1e9 + i, "B/s"),),
        batch="b1",
    )


def _dead(path: Path) -> Path:
    """The spool file as a process that has died left it (pid 2**22 + 1: never a live pid)."""
    dead = path.with_name(path.name.rsplit("-", 1)[0] + f"-{2**22 + 1}.json")
    path.rename(dead)
    return dead


def test_a_run_killed_before_storing_is_imported_by_the_next_command(tmp_path: Path, capsys: Any) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    Store(url).close()
    spool = Spool(url, "b1")
    spool.keep(_run())  # measured; the process dies before the store is asked
    left = _dead(spool.path)
    assert spooled_files(url) == [left]
    assert main(["runs", "--db", url, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "imported 1 run" in out.err and len(json.loads(out.out)["runs"]) == 1
    assert spooled_files(url) == []
    assert main(["runs", "--db", url, "--format", "json"]) == 0  # nothing more, nothing twice
    out = capsys.readouterr()
    assert "imported" not in out.err and len(json.loads(out.out)["runs"]) == 1


def test_spool_import_counts_the_runs_it_imported_once(tmp_path: Path, capsys: Any) -> None:
    """`iowall spool --import` imports and counts the waiting runs itself: the opening hook
    does not import them first and leave it saying 'imported 0 runs'."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    Store(url).close()
    spool = Spool(url, "b1")
    spool.keep(_run())
    _dead(spool.path)
    assert main(["spool", "--import", "--db", url, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["imported"] == 1, out.out
    assert "imported" not in out.err and spooled_files(url) == []


def test_a_run_killed_after_its_commit_is_not_stored_twice(tmp_path: Path, capsys: Any) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    spool = Spool(url, "b1")
    run = spool.keep(_run())
    store.add_run(run)  # committed; the process dies before the spool drops it
    _dead(spool.path)
    assert main(["runs", "--db", url, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "imported 0 runs" in out.err and len(json.loads(out.out)["runs"]) == 1
    assert spooled_files(url) == []


def test_a_live_jobs_spool_file_is_left_to_it(tmp_path: Path, capsys: Any) -> None:
    """The file of a job still running holds its run in flight: another command leaves it."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    Store(url).close()
    spool = Spool(url, "b1")
    spool.keep(_run())
    assert str(os.getpid()) in spool.path.name
    assert main(["runs", "--db", url]) == 0
    assert "imported" not in capsys.readouterr().err and spool.path.exists()
    spool.stored(spool.pending[0])
    assert not spool.path.exists()


class _FullStore:
    """A store whose every write fails as SQLite does on a full disk."""

    url = "sqlite:////nowhere/s.db"
    shown = url

    def add_run(self, run: Run, waiting: Any = None) -> int:
        import sqlite3

        import sqlalchemy.exc

        raise sqlalchemy.exc.OperationalError(
            "COMMIT", {}, sqlite3.OperationalError("database or disk is full")
        )


def test_a_store_failure_keeps_the_run_and_names_the_file() -> None:
    sched = Schedule(_FullStore(), "s", dict, dict, batch="b1")  # type: ignore[arg-type]
    with pytest.raises(StoreFailed) as e:
        sched._store(Point("plan:s", {"jobs": 1}), 0, 1.0, TaskOutcome("ok", (Metric("x", 1.0, "s"),)))
    said = str(e.value)
    assert "(database or disk is full)" in said and said.endswith(".json") and "\n" not in said
    assert sched.spool is not None and sched.spool.path.exists()
    assert [r.status for r in sched.spool.pending] == ["ok"] and sched.spool.pending[0].uuid


def test_store_errors_read_as_one_line_and_lost_connections_are_told_apart() -> None:
    import sqlite3

    import sqlalchemy.exc

    full = sqlalchemy.exc.OperationalError("COMMIT", {}, sqlite3.OperationalError("database or disk is full"))
    assert failure_text(full) == "database or disk is full" and not connection_lost(full)
    gone = sqlalchemy.exc.OperationalError(
        "INSERT", {}, Exception("server closed the connection unexpectedly\n\tThis probably means …")
    )
    assert failure_text(gone) == "server closed the connection unexpectedly" and connection_lost(gone)
    assert connection_lost(
        sqlalchemy.exc.OperationalError(
            "x", {}, Exception("terminating connection due to administrator command")
        )
    )


def test_the_outcome_says_what_did_not_measure() -> None:
    assert Outcome(3, 0, 0).exit_code == 0 and Outcome(3, 0, 0).sentence() is None
    o = Outcome(4, 1, 1)
    assert (
        o.exit_code == 1
        and o.sentence() == "2 of 6 runs did not measure (1 failed, 1 interrupted): exit code 1"
    )
    assert Outcome(0, 1, 0).to_json() == {"measured": 0, "failed": 1, "interrupted": 0, "exit_code": 1}


def _fio_run(threadstate: str | None, notes: tuple[str, ...] = ()) -> Run:
    arts = (Artifact("threadstate.json", "application/json", threadstate),) if threadstate is not None else ()
    return Run(
        point=Point("plan:s", {"rw": "write", "jobs": 1, "direct": 0}),
        label="s",
        status="ok",
        started_at=1.0,
        finished_at=2.0,
        metrics=(
            Metric("write_bw_bytes_per_s", 4e9, "B/s"),
            Metric("write_runtime_s", 0.03, "s"),
            Metric("cpu_user_share", 0.45, "share"),
            Metric("cpu_idle_share", 0.5, "share"),
        ),
        artifacts=arts,
        notes=notes,
        id=1,
    )


def test_too_short_to_explain_is_said_not_guessed() -> None:
    """128 MiB in 0.03 s: the threadstate probe ran but timed none of it; the machine-wide
    rules (another process's CPU) are not offered instead."""
    doc = (Path(__file__).parents[1] / "fixtures" / "threadstate_too_short.json").read_text()
    e = explain(_fio_run(doc), [])  # the probe's document of a real 128 MiB write in 0.03 s
    assert e.sentences[0].startswith("Too short to explain: the I/O lasted 0.03 s")
    assert len(e.sentences) == 1 and not e.verdicts and not e.fired


def test_no_budget_says_why_before_the_machine_wide_rules() -> None:
    e = explain(_fio_run(None, ("probe threadstate skipped: no /proc/PID/task access",)), [])
    assert e.sentences[0] == (
        "No wall-clock budget: the threadstate probe was skipped (no /proc/PID/task access). "
        "What follows are the CPU-time rules over the whole machine, not the workload's own time."
    )


def test_a_stored_run_can_still_be_read_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    spool = Spool(url, "b1")
    run = spool.keep(_run())
    rid = store.add_run(run)
    spool.stored(run)
    assert [r.id for r in store.runs(RunFilter(batch="b1"))] == [rid] and not spool.path.exists()


def test_a_spool_directory_is_removed_once_empty(tmp_path: Path) -> None:
    """Storing every run leaves nothing on disk: the store's spool directory goes with its
    last file, and a directory an older iowall left with only its marker is removed when the
    spool is listed."""
    from iowall.bundle.spool import STORE_FILE, every_spool
    from iowall.machine.spooldir import store_dir

    url = f"sqlite:///{tmp_path / 's.db'}"
    spool = Spool(url, "b1")
    run = spool.keep(_run())
    assert store_dir(url).is_dir() and [w.store for w in every_spool()] == [url]
    spool.stored(run)
    assert not store_dir(url).exists()
    old = store_dir(url + "x")
    old.mkdir(parents=True)
    (old / STORE_FILE).write_text(url + "x\n")
    assert every_spool() == [] and not old.exists()
