"""History and the gate on a real history: eight labelled "kernels" of a small buffered-write
plan, the fifth onward with a small vm.dirty_bytes (writers throttled), and an unchanged "aa"
interleaved with the first four; `history` puts the change at the fifth, `gate` on the fifth
against the first four exits 1 with a JUnit file and an explanation naming the throttling, and
the A/A gate of aa against the first four exits 0.

The module holds free page reporting off from its first run to its last, and the first run
touches the free memory (``--hold-memory``). On a fresh CI VM the host has backed little of
the guest's memory, and the unthrottled 1 GiB writes then moved at random between host-fault
speed and memory speed: 495/4303/1215, 1244/1258/4433, 1277/1269/4000 MiB/s in three labels of
three runs, measured on a VM up a few minutes, against 843-1140 MiB/s throttled; no change
point could be seen. The same plan on held, touched memory: 3282-4414 MiB/s against 843-1140."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.tuning.knob_session import KnobSession
from iowall.vocab.knob import Knob
from tests.conftest import iowall, needs_root, reporting_held_off

pytestmark = [needs_root, pytest.mark.slow]

#: 1 GiB a run, not 384 MiB: fio's runtime is whole milliseconds, and a 130 ms write moved its
#: bandwidth in 0.8% steps, noise an A/A gate at a 2% floor must not see.
PLAN = """\
label = "nightly"
repeat = 3
probes = ["cpu", "vmstat", "throttle", "tasks"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "1G"
ioengine = "psync"
end_fsync = 1
[bed]
kind = "ram"
size = "2G"
"""


@pytest.fixture(scope="module")
def reporting_held() -> Iterator[bool]:
    """Free page reporting held off for the whole module (restored after); whether this VM
    reports at all."""
    with reporting_held_off() as reports:
        yield reports


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, reporting_held: bool) -> tuple[dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("hist")
    env = {
        **os.environ,
        "IOWALL_DB": f"sqlite:///{tmp / 'db.sqlite'}",
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_DATA_HOME": str(tmp / "data"),
    }
    plan = tmp / "nightly.toml"
    plan.write_text(PLAN)
    #: "aa" is the plan unchanged, three invocations spread across k1-k4's time (the A/A)
    order = ["aa", "k1", "k2", "aa", "k3", "k4", "aa", "k5", "k6", "k7", "k8"]
    for i, name in enumerate(order):
        hold = ["--hold-memory"] if i == 0 else []  # reporting stays off: once is enough
        commit = ["--commit", f"c{int(name[1:]):03d}"] if name.startswith("k") else []
        with KnobSession() as ks:
            if name in ("k5", "k6", "k7", "k8"):  # the "kernel" that regressed: writers throttled
                ks.set(Knob("sysctl", "vm.dirty_bytes"), 16 << 20)
            cp = iowall("run", str(plan), "--label", name, *commit, *hold, env=env)
        assert cp.returncode == 0, cp.stderr
        if i == 0 and reporting_held:  # the memory was touched, and the report says so
            said = " ".join(cp.stdout.split())
            # touched first, or not again when a touch under the session's hold covers it
            assert "reporting already held off" in said, said
            assert "touched once first" in said or "not touched again" in said, said
    return env, tmp


def test_history_puts_the_change_at_the_fifth(history: tuple[dict[str, str], Path]) -> None:
    env, tmp = history
    cp = iowall(
        "history",
        "recipe=plan:nightly",
        "--by",
        "label",
        "--format",
        "json",
        "--plot",
        str(tmp / "h.png"),
        env=env,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (series,) = doc["series"]
    seen = json.dumps({k: v for k, v in series.items() if k != "changes"})[:4000]  # CI-49: k3 | k4
    assert len(series["changes"]) == 1, (series["changes"], seen)
    (change,) = series["changes"]
    assert change["last_good"]["label"] == "k4" and change["first_bad"]["label"] == "k5", (change, seen)
    assert change["first_bad"]["commit"] == "c005" and change["worse"]
    assert (tmp / "h.png").stat().st_size > 1000


def _skip_if_the_machine_was_busier(cp: subprocess.CompletedProcess[str]) -> None:
    """Where this VM's host took CPU time (steal) or another process ran during one side's
    runs only, the gate's answer is inconclusive, saying so (``regress.machine_busier``,
    unit-tested): during the new runs, the regression these tests plant cannot be told from
    the machine; during the base runs (a make test of 28f3659: the host stole 0-40% of the CPU
    time while k1-k4 ran, and the gate passed k5), a fall could hide. Skipped, visibly, with
    the gate's own reason; any other inconclusive still fails."""
    said = [ln for ln in cp.stdout.splitlines() if "nothing else runs" in ln]
    if cp.returncode == 3 and said:
        pytest.skip("the machine was busier during one side's runs: " + " ".join(said))


def test_gate_fails_on_the_fifth_and_explains(history: tuple[dict[str, str], Path]) -> None:
    env, tmp = history
    junit = tmp / "gate.xml"
    base = [x for k in range(1, 5) for x in ("--baseline", f"label=k{k}")]
    cp = iowall("gate", "label=k5", *base, "--junit", str(junit), env=env)
    _skip_if_the_machine_was_busier(cp)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert cp.stdout.startswith("[iowall gate] ") and "regression" in cp.stdout.splitlines()[0]
    assert "throttl" in cp.stdout  # the Why of the new side names balance_dirty_pages
    suite = ET.parse(junit).getroot().find("testsuite")
    assert "p-values from the means of invocations, 4 base and 1 new (t pred" in cp.stdout
    assert suite is not None and int(suite.get("failures", "0")) >= 1
    failed = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert "write_bw_bytes_per_s" in failed


def test_aa_gate_passes(history: tuple[dict[str, str], Path]) -> None:
    """The plan unchanged (label aa: three invocations interleaved with k1-k4) against k1-k4:
    the gate passes, its p-values from invocation means. Whole invocations move here:
    a CI run of an earlier form of this test, the plan re-run by the gate after k8, measured
    4032 MiB/s over k1-k4 and 3368 MiB/s in all three of its own invocations (-13.8%, the
    same work taking 12% more CPU time), and stored labels moved by several percent between
    invocations (k1-k4 2745-2860, 2660-2768, 2599-2695, 2450-2592 MiB/s in another); only an
    A/A measured across the same minutes as its baseline is an A/A.

    At ``--fdr 0.001``: at the default 0.05 an A/A fails about one run in twenty by design
    (a make test here, 2026-11-29: bandwidth -5.9%, q 0.01 from the means of 4 base and 3
    new invocations), so a failure at 0.05 is the gate's stated false alarm rate, not a
    fault. At 0.001 it is one in a thousand; the unit (invocation means, not runs) is
    asserted from the gate's own method line. The order of invocations is held to the same
    level (a CI run, 2026-11-30, was inconclusive on p99 latency alone, every new invocation
    above every base one: 1 in 35, now q 3/35 over three gating rows; docs/gate.md)."""
    env, _ = history
    base = [x for k in range(1, 5) for x in ("--baseline", f"label=k{k}")]
    cp = iowall("gate", "label=aa", *base, "--fdr", "0.001", env=env)
    _skip_if_the_machine_was_busier(cp)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.startswith("[iowall gate] pass")
    assert "p-values from the means of invocations, 4 base and 3 new (Welch" in cp.stdout


def test_gate_runs_the_plan_and_confirms(history: tuple[dict[str, str], Path]) -> None:
    """TARGET a plan: the gate runs it, and re-runs it while the regression is suspected
    before it fails. Up to three confirmations, not the default two: this test failed in CI
    (2026-11-29), and run here it measured the first of three invocations at host-fault speed
    (285 and 625 MiB/s, then 822-1130, against 1988-2670 over k1-k4): Welch's t on three
    invocation means could not show the fall (p 0.057) and the row passed as "same". It is
    inconclusive now (every new invocation worse than every base one), until a fourth shows it."""
    env, tmp = history
    base = [x for k in range(1, 5) for x in ("--baseline", f"label=k{k}")]
    with KnobSession() as ks:
        ks.set(Knob("sysctl", "vm.dirty_bytes"), 16 << 20)
        cp = iowall(
            "gate",
            str(tmp / "nightly.toml"),
            *base,
            "--label",
            "k9",
            "--repeat",
            "2",
            "--confirm",
            "3",
            "--commit",
            "c009",
            "--format",
            "json",
            env=env,
        )
    _skip_if_the_machine_was_busier(cp)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["verdict"] == "regression" and doc["new"] == "label=k9"
    assert any("confirmation" in n for n in doc["notes"])
    regs = [r for r in doc["rows"] if r["status"] == "regression"]
    rows = json.dumps([r for r in doc["rows"] if r["metric"] == "write_bw_bytes_per_s"])
    assert any(r["metric"] == "write_bw_bytes_per_s" for r in regs), (rows, regs)
    assert all(r["n_new"] >= 4 for r in regs)  # 2 runs, then at least one confirmation round
