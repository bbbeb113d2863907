"""One measurement at a time per machine: two would disturb each other's numbers, and two
runs setting the same sysctl could restore each other's values."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import UserError
from .paths import state_dir


def lock_path() -> Path:
    """/run/iowall/measure.lock as root (machine-wide), else in the user's state dir."""
    if os.geteuid() == 0:
        d = Path("/run/iowall")
        d.mkdir(parents=True, exist_ok=True)
        return d / "measure.lock"
    return state_dir() / "measure.lock"


@contextlib.contextmanager
def exclusive(what: str) -> Iterator[None]:
    """Hold the machine's measurement lock (flock, released even on SIGKILL) or fail at once."""
    path = lock_path()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            raise UserError(f"another iowall measurement is running on this machine ({holder}): "
                            "wait for it to end; two at once would disturb each other") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, iowall {what}".encode(), 0)
        yield
    finally:
        os.close(fd)
