"""The plan of an import's reading: which bundle files are read where, in which parts. Each
file is read, checked and packed into the store's rows on a worker process, one a CPU
(reading and packing hold the GIL; zlib alone would not fill a second CPU); one large file
is parsed here and its runs shared among the workers by slices. The rows come back, a part
at a time in order, to the one process that writes them while the next parts are read
(``iowall import``: in one transaction, committed once every file was read and found valid).
A plain bundle's runs the store has already are not packed (``Present``): importing again
costs the reading only. The processes are ``bundle/workers.py``'s, started once."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..model import Run
from ..store.gcpause import gc_paused
from ..store.packing import Packed
from .files import opened
from .packed import Opened, Present, rows_of
from .workers import Parts, started

#: One file of at least this many bytes is parsed here (a packed one's runs then shared among
#: the workers by slices); a smaller one is read whole by one worker.
PARALLEL_MIN_BYTES = 8 << 20
#: The runs a worker checks at a time when one large packed file is shared among the CPUs.
SLICE = 500


def packed_parts(paths: Sequence[str], workers: int | None = None, url: str | None = None) -> Parts:
    """The runs of the bundle files ``paths``, in order, as rows to write (``rows_of``), a
    list a file (a slice of one, below), each with the bytes of file it stands for (what a
    progress bar counts). The plan is made first, and the reading started once
    (``workers.started``): with two CPUs or more the reading starts now, on ``workers``
    processes (by default one a CPU this process may run on, no more than there are parts),
    so that the caller can do its own start meanwhile (``iowall import`` imports its writer
    and opens the store). One large file is opened here first (``files.opened``: parsed,
    what its runs carry read): a packed one of 2 x SLICE runs or more is shared by slices of
    SLICE runs, any other read here in one pass (a plain file's parse is most of its cost:
    sharing its slices gained nothing). Stdin (``-``), or one CPU: read here as asked. A
    plain run the store at ``url`` has is ``Present``. A file that fails raises its
    UserError where its list would come (a run of the shared file: the first in order, as
    one process reading it names it); ``close`` cancels what is not read yet."""
    n = workers or len(os.sched_getaffinity(0))  # the CPUs this process may run on
    sizes = [file_bytes(p) for p in paths]
    here = n < 2 or "-" in paths
    one = opened(paths[0], url) if not here and len(paths) == 1 and sizes[0] >= PARALLEL_MIN_BYTES else None
    calls: list[tuple[str, int, int | None, str | None]] = [(path, 0, None, url) for path in paths]
    parts: list[float] = [*sizes]
    if one is not None and one.carried is not None and one.runs >= 2 * SLICE:  # by slices
        bounds = [(lo, min(lo + SLICE, one.runs)) for lo in range(0, one.runs, SLICE)]
        calls = [(paths[0], lo, hi, url) for lo, hi in bounds]
        parts = [sizes[0] * (hi - lo) / one.runs for lo, hi in bounds]
    elif one is not None:  # plain, or too few runs to share: read here, one pass anyway
        here = True
    return started(0 if here else min(n, len(calls)), _part, calls, parts, one)


def _part(
    shared: Opened | None, path: str, lo: int, hi: int | None, url: str | None
) -> list[Packed | Present]:
    """Runs ``lo``..``hi``-1 of bundle file ``path`` (all: ``hi`` None) as rows, on a worker or
    here: the file opened already (``shared``: the one large file of ``packed_parts``), or
    opened now."""
    with gc_paused():
        f = shared if shared is not None else opened(path, url)
        return rows_of(f, lo, hi)


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
