"""What the spool holds (``bundle.spool``) and its import: every command that opens a store
first imports the runs waiting for it there (``replay``, registered by the CLI), and
`iowall spool` lists them and imports them by hand."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ..bundle.files import read_bundle
from ..bundle.spool import every_spool
from ..machine.dirs import db_url, default_db_url
from ..machine.journal import alive
from ..machine.spooldir import spooled_files, store_dir
from ..report.spool import SpoolFile, SpoolList
from ..store import Store
from ..store.faults import failure_text
from ..vocab.errors import IowallError
from .bundle import import_bundles

#: stores whose spool is being imported by this process (the import opens the store again)
_BUSY: set[str] = set()


def _alive(path: Path) -> bool:
    """Whether the process that writes ``path`` (``BATCH-PID.json``) still runs: its file
    holds the run in flight, which that process is storing itself."""
    try:
        pid = int(path.stem.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    return pid == os.getpid() or alive(pid)


def waiting(url: str) -> list[Path]:
    """The spool files for the store at ``url`` that no running iowall is still writing."""
    return [p for p in spooled_files(url) if not _alive(p)]


def import_spool(url: str) -> tuple[int, list[Path]]:
    """Import the runs waiting for the store at ``url`` (runs it has already, by uuid,
    skipped) and remove their files; (runs added, files imported)."""
    files = waiting(url)
    if not files:
        return 0, []
    _BUSY.add(url)
    try:
        done = import_bundles([str(p) for p in files], url)
    finally:
        _BUSY.discard(url)
    for p in files:
        p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # the store's directory, once empty
        store_dir(url).rmdir()
    return done.added, files


def replay(store: Store) -> None:
    """Import what the spool holds for ``store`` as it opens, saying so on stderr in one
    line; a spool that cannot be imported now (the store still full) is left for later, said
    in one line, and never stops the command."""
    if store.url in _BUSY or not spooled_files(store.url):
        return
    try:
        added, files = import_spool(store.url)
    except Exception as e:  # the store may still be unable to take them: not this command's failure
        print(
            f"iowall: the spool's runs for {store.shown} could not be imported yet "
            f"({failure_text(e)}); they stay in {store_dir(store.url)}",
            file=sys.stderr,
        )
        return
    if files:
        print(
            f"iowall: imported {added} run{'s' if added != 1 else ''} the store could not take "
            f"before, from the spool ({', '.join(p.name for p in files)})",
            file=sys.stderr,
        )


def spool_status(import_into: str | None = None) -> SpoolList:
    """Every spool file of every store, with how many runs each holds; with ``import_into``
    (a store URL), first the import of what waits for that store."""
    if import_into is None:
        return SpoolList(_files())
    url = db_url(import_into) if import_into else default_db_url()
    _BUSY.add(url)  # this command imports and counts them itself: the opening hook stands aside
    try:
        store = Store(url)
    finally:
        _BUSY.discard(url)
    added, _ = import_spool(store.url)
    return SpoolList(_files(), added, store.shown)


def _files() -> tuple[SpoolFile, ...]:
    out = []
    for w in every_spool():
        for p in w.files:
            try:
                n = len(read_bundle(str(p)))
            except IowallError:
                n = 0
            out.append(SpoolFile(w.store, p, n, p.stat().st_size))
    return tuple(out)
