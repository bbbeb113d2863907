"""`iowall fleet run` for real: ansible-core over SSH into two hosts on this machine, each a
network namespace (a veth pair with private /30 addresses, nothing routed out) with its own
sshd, host name (a UTS namespace) and install, state and data directories. One host's sshd is
down on the first run: it fails with its error while the other lands; the rerun completes
only the missing one. The namespaces share the machine lock, so ``--wait`` serialises them."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root
from tests.fleet_hosts import PLAN, Host, attempt_uuids, hosts, inventory, kill_iowall_run

pytestmark = [
    needs_root,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.exists("/usr/sbin/sshd"), reason="openssh-server missing (make setup installs it)"
    ),
    pytest.mark.skipif(
        not (Path(sys.executable).parent / "ansible-playbook").exists(),
        reason="ansible-core missing (make setup installs it)",
    ),
]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[Host], Path]]:
    """Two hosts (fleet-a pinned to CPU 0, fleet-b on both CPUs) and the client key, shared
    by the tests here as a fleet's hosts are by its runs: a host that has iowall installed
    from the same wheelhouse installs nothing again (15-20 s a host)."""
    with hosts(tmp_path_factory.mktemp("fleet"), (("fleet-a", "0"), ("fleet-b", "0,1"))) as made:
        yield made


@pytest.fixture(scope="module")
def wheel_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The controller's cache of wheelhouses (XDG_CACHE_HOME), shared by the tests here."""
    return tmp_path_factory.mktemp("cache")


def up(h: Host) -> None:
    if h.sshd is None:
        h.start()


def host_lines(err: str, host: str) -> list[str]:
    return [ln for ln in err.splitlines() if f"] {host}: " in ln]


def test_fleet_two_hosts_one_down_then_rerun(
    fleet: tuple[list[Host], Path],
    wheel_cache: Path,
    tmp_path: Path,
    iowall_env: dict[str, str],
    db_url: str,
    no_leftovers: None,
) -> None:
    hosts, key = fleet
    a, b = hosts
    inv = inventory(hosts, key, tmp_path / "inventory.yml")
    plan = tmp_path / "tiny.toml"
    plan.write_text(PLAN)
    env = dict(
        iowall_env,
        XDG_CACHE_HOME=str(wheel_cache),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_SSH_ARGS="-o ControlMaster=no",
    )  # no ssh master outlives the test
    args = ("fleet", "run", str(inv), str(plan), "--label", "fleet-t", "--commit", "abc123", "--db", db_url)

    up(a)
    b.stop()  # b's sshd is down: unreachable
    first = iowall(*args, env=env)
    print(first.stderr, first.stdout)
    assert first.returncode == 1, first.stderr
    assert any("unreachable" in ln for ln in host_lines(first.stderr, "fleet-b")), first.stderr
    assert any("imported 1 run (host fleet-a)" in ln for ln in host_lines(first.stderr, "fleet-a"))
    assert "1 of 2 hosts failed (fleet-b)" in first.stderr
    # the wheel carries the engine binary: tagged for this platform, not py3-none-any
    assert f"-py3-none-linux_{platform.machine()}.whl and its dependencies" in first.stderr
    store = Store(db_url)
    runs = store.runs(RunFilter())
    assert [r.env["host"]["hostname"] for r in runs] == ["fleet-a"]

    up(b)
    second = iowall(*args, env=env)
    print(second.stderr, second.stdout)
    assert second.returncode == 0, second.stderr
    # the wheelhouse the first attempt built is the same sources': reused, not built again
    assert "reusing iowall-" in second.stderr and "built " not in second.stderr, second.stderr
    a_lines = host_lines(second.stderr, "fleet-a")
    assert len(a_lines) == 1 and "already imported (1 run from fleet-a): skipped" in a_lines[0]
    assert any("measured" in ln for ln in host_lines(second.stderr, "fleet-b"))
    runs = store.runs(RunFilter())
    by_host = {r.env["host"]["hostname"]: r for r in runs}
    assert len(runs) == 2 and set(by_host) == {"fleet-a", "fleet-b"}
    ra, rb = by_host["fleet-a"], by_host["fleet-b"]
    # Host attribution and shape: a's iowall ran on one CPU, b's on two, so they differ.
    assert ra.env["host"]["cpu_count"] == 1 and rb.env["host"]["cpu_count"] == 2
    assert ra.fingerprint() != rb.fingerprint()
    for r in (ra, rb):
        assert r.label == "fleet-t" and r.env.get("commit") == "abc123" and r.status == "ok"
    # Every imported figure is the one measured on the host (its own attempt store).
    for h, r in ((a, ra), (b, rb)):
        dbs = list((h.home / "iowall" / "runs").glob("*/runs.db"))
        assert len(dbs) == 1
        (measured,) = Store(f"sqlite:///{dbs[0]}").runs(RunFilter())
        assert measured.uuid == r.uuid
        assert {m.name: m.value for m in measured.metrics} == {m.name: m.value for m in r.metrics}
        assert (r.metric("write_bw_bytes_per_s") or 0) > 0

    third = iowall(*args, env=env)  # nothing missing: no build, no playbook
    assert third.returncode == 0, third.stderr
    assert "built " not in third.stderr
    assert all("skipped" in ln for h in hosts for ln in host_lines(third.stderr, h.name))
    assert len(store.runs(RunFilter())) == 2

    # A second label across the fleet would measure both hosts again (about 50 s): that
    # compare pairs each host's runs with its own is compare's, on runs of two host shapes
    # (tests/unit/test_compare.py); here, that the hosts' runs carry their own shapes (above).


def test_a_host_killed_mid_run_loses_nothing(
    fleet: tuple[list[Host], Path],
    wheel_cache: Path,
    tmp_path: Path,
    iowall_env: dict[str, str],
    db_url: str,
    no_leftovers: None,
) -> None:
    """The host's `iowall run` killed once it had stored a run: the fleet fails the host; the
    rerun carries the killed attempt's runs into the new attempt's store (they used to be
    deleted with its directory) and the controller gets every run measured, once. Another
    label on the hosts of the test above: the same wheelhouse, nothing installed again."""
    hosts, key = fleet
    a = hosts[0]
    earlier = attempt_uuids(a)  # the runs of the test above, when it ran first
    inv = inventory([a], key, tmp_path / "inventory.yml")
    plan = tmp_path / "twenty.toml"  # about 10 s of runs: the kill lands among them
    plan.write_text(PLAN.replace("repeat = 1", "repeat = 20"))
    env = dict(
        iowall_env,
        XDG_CACHE_HOME=str(wheel_cache),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_SSH_ARGS="-o ControlMaster=no",
    )
    # the kill, not the memory hold (the test above runs the default): each attempt's touch of
    # the free memory would add 10-30 s
    args = ("fleet", "run", str(inv), str(plan), "--label", "fleet-k", "--no-hold-memory", "--db", db_url)
    up(a)
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    first = subprocess.Popen([exe, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, deadline = False, time.monotonic() + 600
    while first.poll() is None and time.monotonic() < deadline and not killed:
        if attempt_uuids(a) - earlier:
            killed = kill_iowall_run(a)
        time.sleep(0.2)
    _, err = first.communicate(timeout=600)
    print(err)
    assert killed, "the host's run ended before it could be killed"
    assert first.returncode == 1, err
    # said as what happened, not as the killed run's last progress line
    assert any("killed by SIGKILL" in ln for ln in host_lines(err, "fleet-a")), err
    if earlier:  # the test above ran on these hosts first: its wheelhouse, its install
        assert "reusing iowall-" in err and "built " not in err, err
        assert any(ln.endswith("fleet-a: installed already") for ln in host_lines(err, "fleet-a")), err
    before = attempt_uuids(a) - earlier
    assert 1 <= len(before) < 20, (len(before), err)
    second = iowall(*args, env=env)
    print(second.stderr)
    assert second.returncode == 0, second.stderr
    # whatever ran first on these hosts, the killed attempt built or reused the wheelhouse and
    # installed it before its run began: the rerun reuses both
    assert "reusing iowall-" in second.stderr and "built " not in second.stderr, second.stderr
    assert any(ln.endswith("fleet-a: installed already") for ln in host_lines(second.stderr, "fleet-a"))
    runs = Store(db_url).runs(RunFilter())
    uuids = [r.uuid for r in runs]
    assert before <= set(uuids), "a run measured before the kill was lost"
    assert len(uuids) == len(set(uuids)) == len(before) + 20
