"""`iowall fleet run` for real: ansible-core over SSH into two hosts on this machine, each a
network namespace (a veth pair with private /30 addresses, nothing routed out) with its own
sshd, host name (a UTS namespace) and install, state and data directories. One host's sshd is
down on the first run: it fails with its error while the other lands; the rerun completes
only the missing one. The namespaces share the machine lock, so ``--wait`` serialises them."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root

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

PLAN = """\
label = "fleet-tiny"
repeat = 1
probes = ["cpu"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "32M"
direct = 1
[bed]
kind = "ram"
fs = "xfs"
size = "512M"
[axes]
jobs = [1]
"""


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@dataclass
class Host:
    """One fleet host: a namespace, its veth pair and address, its sshd and directories."""

    name: str
    netns: str
    veth: str
    addr: str
    cpus: str  # taskset list for its sshd (and so for iowall there): a differing CPU count
    home: Path
    sshd: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """sshd in the namespace and a UTS namespace of its own named after the host."""
        cmd = (
            f"hostname {self.name} && exec taskset -c {self.cpus} /usr/sbin/sshd -D -e "
            f"-f {self.home}/sshd_config"
        )
        self.sshd = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.netns}", "unshare", "--uts", "sh", "-c", cmd],
            stdout=subprocess.DEVNULL,
            stderr=open(self.home / "sshd.log", "ab"),
        )
        for _ in range(100):
            try:
                socket.create_connection((self.addr, 22), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"sshd of {self.name} did not come up: {(self.home / 'sshd.log').read_text()}")

    def stop(self) -> None:
        """sshd and whatever still runs in the namespace (its per-connection children
        outlive a terminated listener)."""
        if self.sshd is not None:
            self.sshd.terminate()
            self.sshd.wait(timeout=30)
            self.sshd = None
        pids = subprocess.run(
            ["ip", "netns", "pids", self.netns], capture_output=True, text=True
        ).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def make_host(i: int, name: str, cpus: str, tmp: Path, pubkey: str) -> Host:
    tag = f"{os.getpid() % 100000}"
    prefix = f"10.231.{os.getpid() % 250}"  # a private /30 per host, on a veth pair only
    outer, inner = f"{prefix}.{4 * i + 1}", f"{prefix}.{4 * i + 2}"
    host = Host(name, f"iowall-fleet-{tag}-{i}", f"iwf{tag}h{i}", inner, cpus, tmp / name)
    host.home.mkdir()
    ns_side = f"iwf{tag}n{i}"
    sh("ip", "netns", "add", host.netns)
    sh("ip", "link", "add", host.veth, "type", "veth", "peer", "name", ns_side)
    sh("ip", "link", "set", ns_side, "netns", host.netns)
    sh("ip", "addr", "add", f"{outer}/30", "dev", host.veth)
    sh("ip", "link", "set", host.veth, "up")
    for cmd in (
        ["ip", "addr", "add", f"{inner}/30", "dev", ns_side],
        ["ip", "link", "set", ns_side, "up"],
        ["ip", "link", "set", "lo", "up"],
    ):
        sh("ip", "netns", "exec", host.netns, *cmd)
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host.home / "host_key"))
    (host.home / "authorized_keys").write_text(pubkey)
    (host.home / "sshd_config").write_text(
        f"ListenAddress {inner}\nPort 22\nHostKey {host.home}/host_key\n"
        f"PidFile {host.home}/sshd.pid\nAuthorizedKeysFile {host.home}/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "Subsystem sftp /usr/lib/openssh/sftp-server\n"
    )
    return host


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[list[Host], Path]]:
    """Two hosts (fleet-a pinned to CPU 0, fleet-b on both CPUs) and the client key; every
    namespace, sshd, key and directory is removed afterwards."""
    made_run_sshd = not os.path.isdir("/run/sshd")
    os.makedirs("/run/sshd", exist_ok=True)
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id_fleet"))
    pub = (tmp_path / "id_fleet.pub").read_text()
    hosts: list[Host] = []
    try:
        for i, (name, cpus) in enumerate((("fleet-a", "0"), ("fleet-b", "0,1"))):
            hosts.append(make_host(i, name, cpus, tmp_path, pub))
        yield hosts, tmp_path / "id_fleet"
    finally:
        for h in hosts:
            h.stop()
            subprocess.run(["ip", "link", "del", h.veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
        if made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
        for h in hosts:  # the hosts' venvs are ~400 MB each
            shutil.rmtree(h.home, ignore_errors=True)


def inventory(hosts: list[Host], key: Path, path: Path) -> Path:
    """A YAML inventory (written as JSON, which YAML reads): per-host install and XDG dirs."""
    doc = {
        "all": {
            "hosts": {
                h.name: {
                    "ansible_host": h.addr,
                    "iowall_home": str(h.home / "iowall"),
                    "ansible_remote_tmp": str(h.home / "ansible-tmp"),
                    "iowall_environment": {
                        "XDG_DATA_HOME": str(h.home / "data"),
                        "XDG_STATE_HOME": str(h.home / "state"),
                    },
                }
                for h in hosts
            },
            "vars": {
                "ansible_user": "root",
                "ansible_ssh_private_key_file": str(key),
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
            },
        }
    }
    path.write_text(json.dumps(doc, indent=1))
    return path


def host_lines(err: str, host: str) -> list[str]:
    return [ln for ln in err.splitlines() if f"] {host}: " in ln]


def test_fleet_two_hosts_one_down_then_rerun(
    fleet: tuple[list[Host], Path],
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
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_SSH_ARGS="-o ControlMaster=no",
    )  # no ssh master outlives the test
    args = ("fleet", "run", str(inv), str(plan), "--label", "fleet-t", "--commit", "abc123", "--db", db_url)

    a.start()  # b's sshd is down: unreachable
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

    b.start()
    second = iowall(*args, env=env)
    print(second.stderr, second.stdout)
    assert second.returncode == 0, second.stderr
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


def _attempt_uuids(h: Host) -> set[str]:
    """The uuids of the runs in the host's attempt store(s), read as a file (no iowall)."""
    import sqlite3

    out: set[str] = set()
    for db in (h.home / "iowall" / "runs").glob("*/runs.db"):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            out |= {u for (u,) in con.execute("select uuid from runs")}
        except sqlite3.Error:
            pass
        finally:
            con.close()
    return out


def _kill_iowall_run(h: Host) -> bool:
    """SIGKILL the `iowall run` of the host (in its namespace): a host lost mid-run."""
    pids = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True).stdout.split()
    killed = False
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(c.endswith(b"/iowall") for c in cmd) and b"run" in cmd:
            os.kill(int(pid), signal.SIGKILL)
            killed = True
    return killed


def test_a_host_killed_mid_run_loses_nothing(
    fleet: tuple[list[Host], Path],
    tmp_path: Path,
    iowall_env: dict[str, str],
    db_url: str,
    no_leftovers: None,
) -> None:
    """The host's `iowall run` killed once it had stored a run: the fleet fails the host; the
    rerun carries the killed attempt's runs into the new attempt's store (they used to be
    deleted with its directory) and the controller gets every run measured, once."""
    hosts, key = fleet
    a = hosts[0]
    inv = inventory([a], key, tmp_path / "inventory.yml")
    plan = tmp_path / "six.toml"
    plan.write_text(PLAN.replace("repeat = 1", "repeat = 6"))
    env = dict(
        iowall_env,
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_SSH_ARGS="-o ControlMaster=no",
    )
    args = ("fleet", "run", str(inv), str(plan), "--label", "fleet-k", "--db", db_url)
    a.start()
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    first = subprocess.Popen([exe, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, deadline = False, time.monotonic() + 600
    while first.poll() is None and time.monotonic() < deadline and not killed:
        if _attempt_uuids(a):
            killed = _kill_iowall_run(a)
        time.sleep(0.2)
    _, err = first.communicate(timeout=600)
    print(err)
    assert killed, "the host's run ended before it could be killed"
    assert first.returncode == 1, err
    before = _attempt_uuids(a)
    assert 1 <= len(before) < 6
    second = iowall(*args, env=env)
    print(second.stderr)
    assert second.returncode == 0, second.stderr
    runs = Store(db_url).runs(RunFilter())
    uuids = [r.uuid for r in runs]
    assert before <= set(uuids), "a run measured before the kill was lost"
    assert len(uuids) == len(set(uuids)) == len(before) + 6
