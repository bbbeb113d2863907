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
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..machine.dirs import redact_url
from ..model import Run
from ..store.gcpause import gc_paused
from ..store.packing import Packed
from ..store.reader import Reader, connect_pg, connect_sqlite, sqlite_file
from ..store.rows import uuids_in
from ..vocab.errors import UserError
from .files import Item, items_of, pack_item, read_model, read_models
from .models import BundleV3
from .packed import Carried, carried_runs, carried_slice, read_refs

#: One file of at least this many bytes is parsed here and shared among the workers by slices
#: (``_one_file_shared``); a smaller one is read whole by one worker.
PARALLEL_MIN_BYTES = 8 << 20

#: What ``packed_parts`` gives: each file's (or slice's) bytes and its runs as rows.
Part = tuple[float, list["Packed | Present"]]


@dataclass(frozen=True)
class Present:
    """A run of a plain bundle that the store had when its file was read: not packed (the
    store skips it by its uuid; runs are never removed from a store)."""

    uuid: str


@dataclass
class Parts:
    """The parts being read (``packed_parts``): an iterator whose ``close`` stops the workers
    (``pool``) and drops what is not read yet, also when no part was asked for. Plain data
    with its fields (no ``__init__`` of its own): made where the parts are, it calls nothing."""

    _parts: Iterator[Part]
    _pool: ProcessPoolExecutor | None = None

    def __iter__(self) -> Parts:
        return self

    def __next__(self) -> Part:
        return next(self._parts)

    def close(self) -> None:
        try:
            close = getattr(self._parts, "close", None)
            if close is not None:
                close()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)


def packed_parts(paths: Sequence[str], workers: int | None = None, url: str | None = None) -> Parts:
    """The runs of the bundle files ``paths``, in order, as rows to write (``pack_item``), a
    list a file (a slice of one, below), each with the bytes of file it stands for (what a
    progress bar counts). With two CPUs or more the reading starts now, on ``workers``
    processes (by default one a CPU this process may run on, no more than there are files),
    so that the caller can do its own start meanwhile (``iowall import`` imports its writer
    and opens the store): one large file is parsed here and its slices shared
    (``_one_file_shared``). Stdin (``-``), or one CPU: read here as asked. A plain run the
    store at ``url`` has is ``Present``. A file that fails raises its UserError where its
    list would come; ``close`` cancels what is not read yet."""
    n = workers or len(os.sched_getaffinity(0))  # the CPUs this process may run on
    sizes = [file_bytes(p) for p in paths]
    read = functools.partial(_packed, url=url)
    if n < 2 or "-" in paths:
        return Parts((size, read(path)) for size, path in zip(sizes, paths, strict=True))
    if len(paths) == 1 and sizes[0] >= PARALLEL_MIN_BYTES:
        return _one_file_shared(paths[0], sizes[0], n, url)
    return _started(min(n, len(paths)), read, [(path,) for path in paths], sizes)


def _started(
    workers: int,
    fn: Callable[..., list[Packed | Present]],
    calls: Sequence[tuple[Any, ...]],
    sizes: Sequence[float],
) -> Parts:
    """``fn`` of each of ``calls`` submitted to ``workers`` forked processes (the modules
    imported once, in this process), their results the parts, each with its bytes of
    ``sizes``. Ctrl-C is held while they are forked (at the first submit; the pool's threads,
    started then, keep it held, so it comes to this thread) and raised after: arriving during
    a fork, it was lost in the at-fork hooks ("Exception ignored in: _releaseLock") and the
    import went on to the end."""
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_sigint
    )
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        futures = [pool.submit(_interruptible, fn, *c) for c in calls]
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a Ctrl-C held meanwhile is raised here
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    return Parts(((size, f.result()) for size, f in zip(sizes, futures, strict=True)), pool)


def _ignore_sigint() -> None:
    """A worker leaves Ctrl-C (SIGINT, which a terminal sends to every process of the
    command) to the process that reads its results, but for while it reads a file: an idle
    worker interrupted printed a traceback before ``iowall: interrupted``, and one interrupted
    while it sent a result could leave the rest of it unsent, the reader waiting for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held while it was forked


def _interruptible(fn: Callable[..., list[Packed | Present]], *args: Any) -> list[Packed | Present]:
    """``fn(*args)`` on a worker, Ctrl-C ending it (its future's KeyboardInterrupt, sent back
    quietly) as it would end this process: a worker blocked on a pipe that is not written
    is let go too."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn(*args)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _packed(path: str, url: str | None = None) -> list[Packed | Present]:
    with gc_paused():
        return _rows(read_models(path), url)


def _rows(items: list[Item], url: str | None) -> list[Packed | Present]:
    checked: set[tuple[str, ...]] = set()
    plain = [x.uuid for x in items if not isinstance(x, Carried)]
    have = stored_uuids(url, plain) if url and plain else set()
    return [
        Present(x.uuid) if not isinstance(x, Carried) and x.uuid in have else pack_item(x, checked)
        for x in items
    ]


#: The runs a worker checks at a time when one large packed file is shared among the CPUs.
SLICE = 500
#: The file being shared (its model, name and what its runs carry), set before the workers
#: are forked: they find it here, copied with the process, not sent to each of them.
_SHARED: tuple[BundleV3, str, Any] | None = None


def _one_file_shared(path: str, size: int, workers: int, url: str | None) -> Parts:
    """One large bundle file: parsed here, and what its runs carry for later ones read in
    order (``read_refs``); then its runs checked in slices on ``workers`` processes. A
    failing run is named as one process reading the file would name it: the first in order."""
    global _SHARED
    model, name = read_model(path)
    if not isinstance(model, BundleV3) or len(model.runs) < 2 * SLICE:
        items = items_of(model, name)  # a plain file: one pass anyway
        return Parts(iter([(size, _rows(items, url))]))
    try:
        carried = read_refs(model, name)
    except UserError:
        carried_runs(model, name)  # a run before the one that failed may fail first
        raise
    runs = len(model.runs)
    slices = [(lo, min(lo + SLICE, runs)) for lo in range(0, runs, SLICE)]
    _SHARED = (model, name, carried)
    try:
        return _started(
            min(workers, len(slices)), _slice, slices, [size * (hi - lo) / runs for lo, hi in slices]
        )
    finally:
        _SHARED = None  # the workers have it: forked when the first slice was submitted


def _slice(lo: int, hi: int) -> list[Packed | Present]:
    assert _SHARED is not None, "a worker forked before the file was shared"
    with gc_paused():
        return [c.packed for c in carried_slice(*_SHARED, lo, hi)]


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


def plan_import(stored: set[str], runs: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """Split ``runs`` into those to add and those already present (their uuid in ``stored``,
    the store's, or earlier in ``runs``)."""
    seen = set(stored)
    new: list[Run] = []
    present: list[Run] = []
    for r in runs:
        if r.uuid and r.uuid in seen:
            present.append(r)
            continue
        if r.uuid:
            seen.add(r.uuid)
        new.append(r)
    return new, present


def file_bytes(path: str) -> int:
    """A bundle file's size; 0 for stdin and for one that cannot be read (reading says why)."""
    try:
        return 0 if path == "-" else os.path.getsize(path)
    except OSError:
        return 0
