"""History and the gate on a real history: eight labelled "kernels" of a small buffered-write
plan, the fifth onward with a small vm.dirty_bytes (writers throttled); `history` puts the
change at the fifth, `gate` on the fifth against the first four exits 1 with a JUnit file and
an explanation naming the throttling, an A/A gate exits 0."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from iowall.knob import Knob
from iowall.knobs import KnobSession
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

PLAN = """\
label = "nightly"
repeat = 3
probes = ["cpu", "vmstat", "throttle", "tasks"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "384M"
ioengine = "psync"
end_fsync = 1
[bed]
kind = "ram"
size = "1G"
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("hist")
    env = {**os.environ, "IOWALL_DB": f"sqlite:///{tmp / 'db.sqlite'}",
           "XDG_STATE_HOME": str(tmp / "state"), "XDG_DATA_HOME": str(tmp / "data")}
    plan = tmp / "nightly.toml"
    plan.write_text(PLAN)
    for k in range(1, 9):
        with KnobSession() as ks:
            if k >= 5:  # the "kernel" that regressed: writers throttled from 16 MiB dirty
                ks.set(Knob("sysctl", "vm.dirty_bytes"), 16 << 20)
            cp = iowall("run", str(plan), "--label", f"k{k}", "--commit", f"c{k:03d}", env=env)
        assert cp.returncode == 0, cp.stderr
    return env, tmp


def test_history_puts_the_change_at_the_fifth(history: tuple[dict[str, str], Path]) -> None:
    env, tmp = history
    cp = iowall("history", "recipe=plan:nightly", "--by", "label", "--format", "json",
                "--plot", str(tmp / "h.png"), env=env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (series,) = doc["series"]
    (change,) = series["changes"]
    assert change["last_good"]["label"] == "k4" and change["first_bad"]["label"] == "k5"
    assert change["first_bad"]["commit"] == "c005" and change["worse"]
    assert (tmp / "h.png").stat().st_size > 1000


def test_gate_fails_on_the_fifth_and_explains(history: tuple[dict[str, str], Path]) -> None:
    env, tmp = history
    junit = tmp / "gate.xml"
    base = [x for k in range(1, 5) for x in ("--baseline", f"label=k{k}")]
    cp = iowall("gate", "label=k5", *base, "--junit", str(junit), env=env)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert cp.stdout.startswith("[iowall gate] ") and "regression" in cp.stdout.splitlines()[0]
    assert "throttl" in cp.stdout  # the Why of the new side names balance_dirty_pages
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) >= 1
    failed = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert "write_bw_bytes_per_s" in failed


def test_aa_gate_passes(history: tuple[dict[str, str], Path]) -> None:
    env, _ = history
    cp = iowall("gate", "label=k3", "--baseline", "label=k1", "--baseline", "label=k2",
                env=env)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.startswith("[iowall gate] pass")


def test_gate_runs_the_plan_and_confirms(history: tuple[dict[str, str], Path]) -> None:
    """TARGET a plan: the gate runs it, and re-runs it while the regression is suspected
    before it fails."""
    env, tmp = history
    base = [x for k in range(1, 5) for x in ("--baseline", f"label=k{k}")]
    with KnobSession() as ks:
        ks.set(Knob("sysctl", "vm.dirty_bytes"), 16 << 20)
        cp = iowall("gate", str(tmp / "nightly.toml"), *base, "--label", "k9", "--repeat", "2",
                    "--commit", "c009", "--format", "json", env=env)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["verdict"] == "regression" and doc["new"] == "label=k9"
    assert any("confirmation" in n for n in doc["notes"])
    regs = [r for r in doc["rows"] if r["status"] == "regression"]
    assert any(r["metric"] == "write_bw_bytes_per_s" for r in regs)
    assert all(r["n_new"] >= 4 for r in regs)  # 2 runs, then at least one confirmation round
