"""`iowall explain`, `iowall locks` and the machine lock, on runs made for real here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.machine.machine_lock import exclusive
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]


#: a buffered write point and a read point with the lock probe on, for `iowall locks`
LOCK_PLAN = """\
label = "locks"
repeat = 1
probes = ["default", "locks"]
[workload]
kind = "fio"
bs = "1M"
size = "512M"
direct = 0
[axes]
rw = ["write", "read"]
[bed]
kind = "ram"
fs = "xfs"
"""


@pytest.fixture
def probed(limits_quick: tuple[dict, dict[str, str]]) -> tuple[dict, dict[str, str]]:
    """The session's small limits run (tests/conftest.py)."""
    return limits_quick


@pytest.fixture
def locked_runs(iowall_env: dict[str, str], tmp_path: Path) -> tuple[int, int, dict[str, str]]:
    """A write and a read point run with the lock probe on: their run ids and the env."""
    plan = tmp_path / "locks.toml"
    plan.write_text(LOCK_PLAN)
    cp = iowall("run", str(plan), "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    runs = {r["point"]["rw"]: r["id"] for r in json.loads(cp.stdout)["runs"]}
    return runs["write"], runs["read"], iowall_env


def test_limits_json_carries_explain(probed: tuple[dict, dict[str, str]]) -> None:
    doc, _ = probed
    assert {w["direction"] for w in doc["explain"]} == {"write", "read"}
    for w in doc["explain"]:
        assert w["sentences"] and w["run"] in doc["run_ids"]


def test_explain_cli(probed: tuple[dict, dict[str, str]]) -> None:
    doc, env = probed
    rid = doc["explain"][0]["run"]
    cp = iowall("explain", str(rid), "--format", "json", env=env, check=True)
    out = json.loads(cp.stdout)
    assert out["run"] == rid and isinstance(out["verdicts"], list)
    assert isinstance(out["skipped_probes"], list)
    for v in out["verdicts"]:
        # a CPU-time rule carries its thresholds; a wall read off the budget, its share
        assert v["rule"] and v["sentence"]
        assert "thresholds" in v["evidence"] or "share" in v["evidence"], v
    assert out["budget"] is not None, out["sentences"]
    cp = iowall("explain", str(rid), env=env, check=True)
    assert cp.stdout.startswith(f"run {rid}: ")
    # the series the probes recorded show up in `show`
    cp = iowall("show", str(rid), env=env, check=True)
    assert "cpu." in cp.stdout and "diskstats." in cp.stdout


def test_locks_join_two_runs(locked_runs: tuple[int, int, dict[str, str]]) -> None:
    write_run, read_run, env = locked_runs
    cp = iowall("locks", str(write_run), str(read_run), "--format", "json", env=env, check=True)
    out = json.loads(cp.stdout)
    assert out["a"]["runs"] == [write_run] and out["b"]["runs"] == [read_run]
    assert out["rows"], "perf lock saw no contention at all during two fio points"
    r = out["rows"][0]
    assert r["delta_wait_s"] == pytest.approx(r["b"]["total_wait_s"] - r["a"]["total_wait_s"])
    cp = iowall("locks", str(write_run), str(read_run), env=env, check=True)
    assert "caller" in cp.stdout.splitlines()[1]


def test_one_measurement_at_a_time(iowall_env: dict[str, str]) -> None:
    with exclusive("test"):
        cp = iowall("limits", "--quick", env=iowall_env)
    assert cp.returncode == 2
    assert "another iowall measurement is running on this machine" in cp.stderr
