"""A fleet run's directory, one per label + target + commit: each host's fetched files and
its state, so that running the same command again completes only what is missing."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict
from pathlib import Path

from ..machine.atomic import write_text
from ..machine.dirs import data_dir
from ..results import HostState
from ..vocab.errors import UserError


def run_key(label: str, target: str, commit: str) -> str:
    """A directory name for one fleet run: readable, and unique per label, target, commit."""
    digest = hashlib.sha1(json.dumps([label, target, commit]).encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{label or 'nolabel'}-{Path(target).stem}")
    return f"{readable[:60]}-{digest}"


class FleetDir:
    """``$XDG_DATA_HOME/iowall/fleet/KEY``: ``hosts/HOST.json`` (states), ``fetched/HOST/``
    (bundle, report, fingerprint) and Ansible's log (the wheelhouse is shared by every run of
    the same sources: ``wheelhouse.shared``)."""

    def __init__(self, key: str, root: Path | None = None) -> None:
        self.path = (root or data_dir() / "fleet") / key
        (self.path / "hosts").mkdir(parents=True, exist_ok=True)
        self.fetched = self.path / "fetched"
        self.log = self.path / "ansible.log"

    def _state_file(self, host: str) -> Path:
        if not host or "/" in host or host.startswith("."):
            raise UserError(f"inventory host name {host!r} cannot name a file")
        return self.path / "hosts" / f"{host}.json"

    def bundle(self, host: str) -> Path:
        """Where the playbook puts ``host``'s bundle; present only once fully fetched."""
        return self.fetched / host / "bundle.json"

    def state(self, host: str) -> HostState | None:
        """The host's last state, or None before its first attempt."""
        f = self._state_file(host)
        if not f.is_file():
            return None
        doc = json.loads(f.read_text())
        return HostState(**{**doc, "hostnames": tuple(doc.get("hostnames", ()))})

    def save(self, state: HostState) -> None:
        write_text(
            str(self._state_file(state.host)),
            json.dumps(asdict(state), indent=1) + "\n",
            what="fleet host state",
        )
