"""Bundle files read, checked and packed into the store's rows on every CPU: a file a worker
process (reading and packing hold the GIL; zlib alone would not fill a second CPU), the
rows sent back, a file at a time in order, to the one process that writes them while the
next files are read (``iowall import``: in one transaction, committed once every file
was read and found valid). A plain bundle's runs the store has already are not packed
(``Present``): importing again costs the reading only."""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Generator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..dirs import redact_url
from ..errors import UserError
from .bundle import pack_item, read_models
from .bundle_packed import Carried
from .gcpause import gc_paused
from .packing import Packed
from .reader import Reader, connect_pg, connect_sqlite, sqlite_file
from .rows import uuids_in

#: Below this many bytes of bundles in all, the workers' start costs more than they gain.
PARALLEL_MIN_BYTES = 8 << 20


@dataclass(frozen=True)
class Present:
    """A run of a plain bundle that the store had when its file was read: not packed (the
    store skips it by its uuid; runs are never removed from a store)."""

    uuid: str


def packed_parts(
    paths: Sequence[str], workers: int | None = None, url: str | None = None
) -> Generator[list[Packed | Present], None, None]:
    """The runs of each bundle file of ``paths``, in order, a list a file, as rows to write
    (``pack_item``): the files shared among ``workers`` processes (one a CPU by default)
    that read ahead of the caller when there are several files and enough bytes, read one
    at a time as asked otherwise; stdin (``-``) is read here. A plain run the store at
    ``url`` has is ``Present``. A file that fails raises its UserError where its list would
    come; closing the iterator cancels the files not yet read."""
    n = min(workers or os.cpu_count() or 1, len(paths))
    read = functools.partial(_packed, url=url)
    if n < 2 or "-" in paths or _size(paths) < PARALLEL_MIN_BYTES:
        yield from map(read, paths)
        return
    ctx = multiprocessing.get_context("fork")  # the modules imported once, in this process
    pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx)
    try:
        yield from pool.map(read, paths)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _packed(path: str, url: str | None = None) -> list[Packed | Present]:
    checked: set[tuple[str, ...]] = set()
    with gc_paused():
        items = read_models(path)
        plain = [x.uuid for x in items if not isinstance(x, Carried)]
        have = stored_uuids(url, plain) if url and plain else set()
        return [
            Present(x.uuid) if not isinstance(x, Carried) and x.uuid in have else pack_item(x, checked)
            for x in items
        ]


def stored_uuids(url: str, uuids: Sequence[str], *, strict: bool = False) -> set[str]:
    """Which of ``uuids`` the store at ``url`` holds, read on a connection of this process's
    own; none when there is no store there yet (this creates nothing). A store that cannot be
    read gives none too (a worker's shortcut: the import that follows says why), or with
    ``strict`` a UserError saying why."""
    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        return set()
    con: Any = None
    try:
        con = connect_sqlite(path) if path is not None else connect_pg(url)
        return uuids_in(Reader(con, "sqlite" if path is not None else "postgresql"), uuids)
    except Exception as e:  # noqa: BLE001 - the driver's errors, whichever the driver
        new = getattr(e, "sqlstate", None) == "42P01" or "no such table" in str(e)  # no tables yet
        if strict and not new:
            raise UserError(f"cannot read {redact_url(url)}: {str(e).strip().splitlines()[0]}") from None
        return set()
    finally:
        if con is not None:
            con.close()


def _size(paths: Sequence[str]) -> int:
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass  # reading it says what is wrong
    return total
