"""SIGINT/SIGTERM become an ``Interrupted`` exception, and teardown runs shielded from both."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from ..vocab.errors import Interrupted

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: How many ``shielded`` blocks the main thread is in, and a signal that arrived in one.
_depth = 0
_pending: str | None = None


def _raise(signum: int, _frame: FrameType | None) -> None:
    """The handler: ``Interrupted``, or, inside a shielded block, the signal kept for its end.
    The mask blocks the signal for the main thread only: with another thread alive (a
    probe's) the kernel delivers it there, and Python still runs this handler in the main
    thread, inside the teardown, where an ``except Exception`` would swallow it."""
    global _pending
    name = signal.Signals(signum).name
    if _depth > 0:
        _pending = _pending or name
        return
    raise Interrupted(name)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within this block SIGINT and SIGTERM raise ``Interrupted`` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Block SIGINT and SIGTERM while cleaning up, so a second Ctrl-C cannot leave a mount behind.

    Signals that arrive meanwhile stay pending and are delivered when the block ends.
    """
    global _depth, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if _depth == 0 and _pending is not None:
            name, _pending = _pending, None
            if sys.exc_info()[0] is None:  # an exception already on its way out wins
                raise Interrupted(name)
