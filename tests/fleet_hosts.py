"""Fleet hosts on this machine, for the suite and benchmarks/faults.py: each a network
namespace (a veth pair with private /30 addresses, nothing routed out) with its own sshd,
host name (a UTS namespace) and install, state and data directories; the inventory that
reaches them, and what a host's attempt stores hold."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: What a host measures in the suite: one 32 MiB direct write on a ram bed.
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


@contextmanager
def hosts(tmp: Path, shapes: tuple[tuple[str, str], ...]) -> Iterator[tuple[list[Host], Path]]:
    """Hosts of the given (name, CPU list) shapes and the client key; every namespace, sshd,
    key and directory is removed afterwards."""
    made_run_sshd = not os.path.isdir("/run/sshd")
    os.makedirs("/run/sshd", exist_ok=True)
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "id_fleet"))
    pub = (tmp / "id_fleet.pub").read_text()
    made: list[Host] = []
    try:
        for i, (name, cpus) in enumerate(shapes):
            made.append(make_host(i, name, cpus, tmp, pub))
        yield made, tmp / "id_fleet"
    finally:
        for h in made:
            h.stop()
            subprocess.run(["ip", "link", "del", h.veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
        if made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
        for h in made:  # the hosts' venvs are ~400 MB each
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


def attempt_uuids(h: Host) -> set[str]:
    """The uuids of the runs in the host's attempt store(s), read as a file (no iowall)."""
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


def kill_iowall_run(h: Host) -> bool:
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
