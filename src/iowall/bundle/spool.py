"""The spool: every finished run is written to this machine, fsynced, before the store is
asked to keep it, and dropped once the store has committed it. A run the store could not
take (a full disk, a server gone, the process killed between measuring and storing) stays in
its batch's file, a packed bundle, until an iowall command that opens that store imports it
(``actions.spool``). Runs carry their uuid, so a run both stored and left in the spool (killed
between the commit and the drop) is imported once: the import skips uuids the store has."""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path

from ..machine.dirs import redact_url
from ..machine.spooldir import keeps_all, root, store_dir
from ..model import Run, run_uuid
from ..vocab.errors import UserError
from .files import write_bundle

#: The file that named the store in a spool directory before each spool file named it
#: itself (in its ``source``): an empty directory holding only it is removed.
STORE_FILE = "store"


@dataclass(frozen=True)
class Waiting:
    """A store's spool directory: the store as shown (redacted) and its files."""

    store: str
    files: tuple[Path, ...]


def every_spool() -> list[Waiting]:
    """Every store with runs waiting in the spool; a store's directory with none left is
    removed on the way."""
    out: list[Waiting] = []
    if not root().is_dir():
        return out
    for d in sorted(root().iterdir()):
        files = tuple(sorted(d.glob("*.json")))
        if files:
            out.append(Waiting(_store_of(d, files[0]), files))
        else:
            (d / STORE_FILE).unlink(missing_ok=True)
            _drop_if_empty(d)
    return out


def _store_of(d: Path, first: Path) -> str:
    """The store a spool directory's runs wait for, as shown (redacted): what its first file
    says in its ``source``, else the marker file an older iowall wrote."""
    try:
        source = json.loads(first.read_text()).get("source") or {}
        if isinstance(source, dict) and source.get("store"):
            return str(source["store"])
    except (OSError, ValueError, AttributeError):
        pass
    name = d / STORE_FILE
    return name.read_text().strip() if name.exists() else "(unknown store)"


def _drop_if_empty(d: Path) -> None:
    """Remove a store's spool directory once no file is left in it (``rmdir``: it stays when
    another process has just written one)."""
    try:
        d.rmdir()
    except OSError:
        pass


def _file_name(batch: str | None) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", batch or "runs")
    return f"{safe}-{os.getpid()}.json"


class Spool:
    """The spool file of one batch going to one store: ``keep`` a run before storing it,
    ``stored`` once the store committed it. The file holds exactly the runs not yet
    stored, rewritten whole (atomically, fsynced) at each change; it is gone when none is
    left."""

    def __init__(self, url: str, batch: str | None) -> None:
        self.url = url
        self.path = store_dir(url) / _file_name(batch)
        self.pending: list[Run] = []

    def keep(self, run: Run) -> Run:
        """Write ``run`` (given its uuid, if it has none) to the spool, fsynced; the run as
        it will be stored."""
        run = run if run.uuid else replace(run, uuid=run_uuid(run))
        self.pending.append(run)
        self._write()
        return run

    def stored(self, run: Run) -> None:
        """The store has committed ``run``: drop it from the spool (unless the spool keeps
        every run: ``spooldir.keeps_all``)."""
        if keeps_all():
            return
        self.pending = [r for r in self.pending if r.uuid != run.uuid]
        self._write()

    def _write(self) -> None:
        if not self.pending:
            self.path.unlink(missing_ok=True)
            _drop_if_empty(self.path.parent)
            return
        for attempt in (1, 2):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                write_bundle(
                    self.pending,
                    str(self.path),
                    source={"host": socket.gethostname(), "store": redact_url(self.url)},
                    packed=True,
                )
                return
            except UserError:
                # another process emptied its spool and removed the directory between our
                # mkdir and the write: once more
                if attempt == 2 or self.path.parent.is_dir():
                    raise
