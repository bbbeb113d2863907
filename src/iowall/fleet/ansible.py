"""ansible-core as the fleet drives it: the hosts of an inventory, and ansible-playbook run
with iowall's event callback, each event handed over as it happens."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..vocab.errors import IowallError, UserError


@dataclass(frozen=True)
class Event:
    """One line of the ``iowall_events`` callback: a task started, or its outcome on a host."""

    event: str
    host: str = ""
    task: str = ""
    msg: str = ""
    stdout: str = ""


def tool(name: str) -> str:
    """An ansible-core program: beside this Python's executable (the venv), else on PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.is_file() else shutil.which(name)
    if not found:
        raise UserError(
            f"{name} not found: install ansible-core (pip install 'iowall[fleet]', or make setup)"
        )
    return found


def inventory_hosts(inventory: str) -> list[str]:
    """Every host the inventory names, in its order (``ansible-inventory --list``)."""
    if not os.path.exists(inventory):
        raise UserError(f"no inventory at {inventory}")
    cp = subprocess.run(
        [tool("ansible-inventory"), "-i", inventory, "--list"], capture_output=True, text=True
    )
    if cp.returncode != 0:
        last = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"inventory {inventory}: {last}")
    doc: dict[str, Any] = json.loads(cp.stdout)
    hosts: list[str] = []

    def walk(group: str) -> None:
        g = doc.get(group, {})
        for h in g.get("hosts", []):
            if h not in hosts:
                hosts.append(h)
        for child in g.get("children", []):
            walk(child)

    walk("all")
    if not hosts:
        raise UserError(f"inventory {inventory} names no host")
    return hosts


def _event(line: str) -> Event | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    if not isinstance(doc, dict) or "event" not in doc:
        return None
    return Event(
        str(doc["event"]),
        str(doc.get("host", "")),
        str(doc.get("task", "")),
        str(doc.get("msg", "")),
        str(doc.get("stdout", "")),
    )


def play(
    playbook: Path,
    inventory: str,
    limit: Sequence[str],
    extra_vars: Mapping[str, Any],
    log: Path,
    on_event: Callable[[Event], None],
) -> int:
    """Run ``playbook`` on the ``limit`` hosts of ``inventory``; every event goes to
    ``on_event`` as it arrives; everything Ansible prints goes to ``log``. Returns the exit code
    (2 and 4: some host failed or was unreachable, which the events tell)."""
    extra = log.with_name("extra-vars.json")
    extra.write_text(json.dumps(dict(extra_vars)))
    # pipelining: each task is one ssh session, not four (mkdir, put, exec, rm); the
    # playbook never uses become, so sudo's requiretty cannot refuse it. A user's own
    # setting wins.
    env = {
        "ANSIBLE_PIPELINING": "True",
        **os.environ,
        "ANSIBLE_STDOUT_CALLBACK": "iowall_events",
        "ANSIBLE_CALLBACK_PLUGINS": str(playbook.parent / "callback_plugins"),
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_NOCOLOR": "1",
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [
        tool("ansible-playbook"),
        "-i",
        inventory,
        "--limit",
        ",".join(limit),
        "-e",
        f"@{extra}",
        str(playbook),
    ]
    with open(log, "a") as lf:
        lf.write(f"$ {' '.join(cmd)}\n")
        lf.flush()
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=lf, text=True, env=env) as p:
            assert p.stdout is not None
            t0 = time.monotonic()
            try:
                for line in p.stdout:  # events too, timed: where a slow host spent its time
                    lf.write(f"[{time.monotonic() - t0:6.1f}s] {line}")
                    lf.flush()
                    ev = _event(line)
                    if ev is not None:
                        on_event(ev)
            except BaseException:  # interrupted: no playbook goes on without its driver
                p.terminate()
                raise
    if p.returncode not in (0, 2, 4):
        raise IowallError(f"ansible-playbook exit {p.returncode}: see {log}")
    return p.returncode
