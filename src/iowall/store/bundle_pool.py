"""Bundle files read, checked and packed into the store's rows on every CPU: a file a worker
process (reading and packing hold the GIL; zlib alone would not fill a second CPU), the
rows sent back to the one process that writes. What ``iowall import`` does before it
writes anything, so that every file is valid before the first run is stored."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from .bundle import pack_item, read_models
from .gcpause import gc_paused
from .packing import Packed

#: Below this many bytes of bundles in all, the workers' start costs more than they gain.
PARALLEL_MIN_BYTES = 8 << 20


def packed_files(paths: Sequence[str], workers: int | None = None) -> list[Packed]:
    """The runs of the bundle files ``paths``, in order, as rows to write (``pack_item``),
    the files shared among ``workers`` processes (one a CPU by default) when there are
    several files and enough bytes; stdin (``-``) is read here. UserError as reading one
    file would raise it: the first file's in order that fails."""
    n = min(workers or os.cpu_count() or 1, len(paths))
    if n < 2 or "-" in paths or _size(paths) < PARALLEL_MIN_BYTES:
        return [p for path in paths for p in _packed(path)]
    ctx = multiprocessing.get_context("fork")  # the modules imported once, in this process
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        return [p for part in pool.map(_packed, paths) for p in part]


def _packed(path: str) -> list[Packed]:
    checked: set[tuple[str, ...]] = set()
    with gc_paused():
        return [pack_item(x, checked) for x in read_models(path)]


def _size(paths: Sequence[str]) -> int:
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass  # reading it says what is wrong
    return total
