"""One measurement at a time per machine: two would disturb each other's numbers, and two
runs setting the same sysctl could restore each other's values. ``--wait`` queues behind the
holder instead of refusing (CI jobs and fleets sharing a box)."""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..vocab.errors import UserError
from .dirs import state_dir

#: How often a waiting process tries the lock, and how often it says it is still waiting.
POLL_S = 0.2
REMIND_S = 30.0


def lock_path() -> Path:
    """/run/iowall/measure.lock as root (machine-wide), else in the user's state dir."""
    if os.geteuid() == 0:
        d = Path("/run/iowall")
        d.mkdir(parents=True, exist_ok=True)
        return d / "measure.lock"
    return state_dir() / "measure.lock"


def parse_wait(text: str | None) -> float | None:
    """``--wait`` as seconds: None (do not wait), ``forever`` (inf) or a number of seconds
    (``90``, ``90s``, ``5m``, ``1h``); a UserError for anything else."""
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("forever", "inf", ""):
        return math.inf
    scale = {"s": 1, "m": 60, "h": 3600}.get(t[-1:], 0)
    try:
        v = float(t[:-1] if scale else t) * (scale or 1)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or v < 0:
        raise UserError(f"--wait={text}: give seconds (90, 5m, 1h) or nothing to wait as long as it takes")
    return v


def _say(line: str) -> None:
    print(f"iowall: {line}", file=sys.stderr, flush=True)


def holder(fd: int) -> str:
    """Who holds the lock, as the holder wrote it (pid, command, since when)."""
    return os.pread(fd, 300, 0).decode(errors="replace").strip() or "unknown"


@contextlib.contextmanager
def exclusive(what: str, wait: float | None = None, say: Callable[[str], None] = _say) -> Iterator[None]:
    """Hold the machine's measurement lock (flock, released even on SIGKILL). Without
    ``wait`` fail at once naming the holder; with it, wait up to ``wait`` seconds (inf:
    forever), saying who holds the lock when the wait starts and every REMIND_S."""
    path = lock_path()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, wait, say)
        os.ftruncate(fd, 0)
        since = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        os.pwrite(fd, f"pid {os.getpid()}, iowall {what}, since {since}".encode(), 0)
        yield
    finally:
        os.close(fd)


def _acquire(fd: int, wait: float | None, say: Callable[[str], None]) -> None:
    t0 = time.monotonic()
    told, last = 0.0, ""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if told:
                say(f"got the machine lock after {time.monotonic() - t0:.0f} s")
            return
        except BlockingIOError:
            pass
        who = holder(fd)
        waited = time.monotonic() - t0
        if wait is None:
            raise UserError(
                f"another iowall measurement is running on this machine ({who}): "
                "two at once would disturb each other; pass --wait to queue "
                "behind it"
            )
        if waited >= wait:
            raise UserError(f"gave up waiting for the machine lock after {waited:.0f} s: still held by {who}")
        if not told or who != last or waited - told >= REMIND_S:
            limit = "" if math.isinf(wait) else f" (at most {wait:.0f} s)"
            say(
                f"waiting for the machine lock{limit}: held by {who}"
                + (f"; waited {waited:.0f} s" if told else "")
            )
            told, last = max(waited, 1e-9), who
        time.sleep(min(POLL_S, max(0.0, wait - waited)))
