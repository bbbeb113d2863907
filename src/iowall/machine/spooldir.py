"""Where the spool keeps the runs a store could not take (``bundle.spool``), one directory per
store, and who is told when a store with runs waiting opens: the CLI registers the import
(``actions.spool.replay``); the store, below it, only asks here. Light: ``iowall --help``
imports it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .dirs import data_dir

#: Called with each store (the Store itself) that opens while runs wait for it in the spool.
HOOKS: list[Callable[[Any], None]] = []


#: Where the spool lives instead of ``<data dir>/spool`` (ab's guests: in the boot's shared
#: directory, on the host's disk, so a guest killed mid-run leaves its runs there).
ROOT_ENV = "IOWALL_SPOOL_DIR"
#: Set to ``1``: the spool keeps every run, stored or not (ab's guests: their store is in
#: the guest's memory and dies with it; the host imports the spool, once by uuid).
KEEP_ENV = "IOWALL_SPOOL_KEEP"


def root() -> Path:
    """``<data dir>/spool`` (or ``$IOWALL_SPOOL_DIR``): one directory per store."""
    return Path(os.environ[ROOT_ENV]) if os.environ.get(ROOT_ENV) else data_dir() / "spool"


def keeps_all() -> bool:
    """Whether the spool keeps runs once stored (``$IOWALL_SPOOL_KEEP=1``)."""
    return os.environ.get(KEEP_ENV) == "1"


def store_dir(url: str) -> Path:
    """The spool directory of the store at ``url`` (a digest of the URL: a password in it is
    written in no path)."""
    return root() / hashlib.sha256(url.encode()).hexdigest()[:16]


def spooled_files(url: str) -> list[Path]:
    """The spool files waiting for the store at ``url``, oldest first."""
    d = store_dir(url)
    if not d.is_dir():
        return []
    return sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime)


def opened(url: str, store: Any) -> None:
    """A store has opened: when runs wait for it, tell the hooks."""
    if HOOKS and spooled_files(url):
        for hook in HOOKS:
            hook(store)
