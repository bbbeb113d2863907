"""SIGINT/SIGTERM become an ``Interrupted`` exception, and teardown runs shielded from both."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from ..vocab.errors import Interrupted

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


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
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
