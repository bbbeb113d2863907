"""Where the spool keeps the runs a store could not take (``bundle.spool``), one directory per
store, and who is told when a store with runs waiting opens: the CLI registers the import
(``actions.spool.replay``); the store, below it, only asks here. Light: ``iowall --help``
imports it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .dirs import data_dir

#: Called with each store (the Store itself) that opens while runs wait for it in the spool.
HOOKS: list[Callable[[Any], None]] = []


def root() -> Path:
    """``<data dir>/spool``: one directory per store."""
    return data_dir() / "spool"


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
