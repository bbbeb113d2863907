"""The processes an import reads its bundle files on: calls of one function, run on worker
processes forked once (or here, one at a time as their results are asked for), their results
given back in order (``Parts``). It knows nothing of bundles: ``bundle/pool.py`` plans the
calls and calls ``started`` once; what all the calls share (one large file parsed here) is
in the workers' memory as they are forked, not sent with each call."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

#: What ``Parts`` gives: a call's result with the bytes of file it stands for (what a
#: progress bar counts).
Part = tuple[float, Any]

#: What every call shares, set while the workers are forked: they find it here, copied
#: with the process.
_SHARED: Any = None


@dataclass
class Parts:
    """The results being made (``started``): an iterator whose ``close`` stops the workers
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


def started(
    workers: int,
    fn: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    sizes: Sequence[float],
    shared: Any = None,
) -> Parts:
    """``fn(shared, *call)`` of each of ``calls``, their results the parts in order, each with
    its bytes of ``sizes``. ``workers`` 0: here, each when its part is asked for. Otherwise on
    that many forked processes, started now (the modules imported once, in this process), so
    that the caller can do its own start meanwhile; ``shared`` is copied into them as they
    are forked. A call that fails raises where its part would come. Ctrl-C is held while they
    are forked (at the first submit; the pool's threads, started then, keep it held, so it
    comes to this thread) and raised after: arriving during a fork, it was lost in the
    at-fork hooks ("Exception ignored in: _releaseLock") and the import went on to the end."""
    global _SHARED
    if workers < 1:
        return Parts((size, fn(shared, *c)) for size, c in zip(sizes, calls, strict=True))
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_sigint
    )
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    _SHARED = shared
    try:
        futures = [pool.submit(_interruptible, fn, *c) for c in calls]
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a Ctrl-C held meanwhile is raised here
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        _SHARED = None  # the workers have it: forked when the first call was submitted
    return Parts(((size, f.result()) for size, f in zip(sizes, futures, strict=True)), pool)


def _ignore_sigint() -> None:
    """A worker leaves Ctrl-C (SIGINT, which a terminal sends to every process of the
    command) to the process that reads its results, but for while it reads a file: an idle
    worker interrupted printed a traceback before ``iowall: interrupted``, and one interrupted
    while it sent a result could leave the rest of it unsent, the reader waiting for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held while it was forked


def _interruptible(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(shared, *args)`` on a worker, Ctrl-C ending it (its future's KeyboardInterrupt,
    sent back quietly) as it would end this process: a worker blocked on a pipe that is not
    written is let go too."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn(_SHARED, *args)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
