"""tracefs for probes: mounted on demand (and unmounted after, when iowall mounted it), and
private instances (``instances/iowall-PID-N``) so iowall never touches the global buffer that
someone else may be using. Both are journaled, so a crash is undone by the next start.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from pathlib import Path

from ..machine import journal
from ..vocab.errors import IowallError

TRACEFS = "/sys/kernel/tracing"

_lock = threading.Lock()
_users = 0
_mounted_by_us: Path | None = None  # journal token of our mount
_counter = itertools.count()


def supported() -> bool:
    """The kernel knows tracefs."""
    try:
        with open("/proc/filesystems") as f:
            return any(line.split()[-1] == "tracefs" for line in f if line.strip())
    except OSError:
        return False


def mounted() -> bool:
    """tracefs is mounted at /sys/kernel/tracing."""
    try:
        with open("/proc/self/mounts") as f:
            return any(
                p[1] == TRACEFS and p[2] == "tracefs" for p in (line.split() for line in f) if len(p) > 2
            )
    except OSError:
        return False


def _libc() -> ctypes.CDLL:
    """mount(2)/umount2(2) straight from libc: no fork of a big Python process per run."""
    return ctypes.CDLL(None, use_errno=True)


def acquire() -> str:
    """Make sure tracefs is mounted; reference counted, pair with ``release``."""
    global _users, _mounted_by_us
    with _lock:
        if not mounted():
            token = journal.add({"undo": "umount", "path": TRACEFS})
            err = _libc().mount(b"nodev", TRACEFS.encode(), b"tracefs", 0, None)
            if err != 0:
                e = ctypes.get_errno()
                journal.done(token)
                raise IowallError(f"cannot mount tracefs at {TRACEFS}: {os.strerror(e)}")
            _mounted_by_us = token
        _users += 1
        return TRACEFS


def release() -> bool:
    """Drop a reference; the last one unmounts tracefs if iowall mounted it. False when that
    umount failed: tracefs is busy, someone else (perf, another tool) now uses it, so it is
    left mounted and crossed out of the journal (a later recovery must not pull it away)."""
    global _users, _mounted_by_us
    with _lock:
        _users = max(0, _users - 1)
        if _users or _mounted_by_us is None:
            return True
        err = _libc().umount2(TRACEFS.encode(), 0)
        journal.done(_mounted_by_us)
        _mounted_by_us = None
        return err == 0 or not mounted()


class Instance:
    """A private ftrace instance: its own ring buffer, events and filters."""

    def __init__(self, root: str = TRACEFS) -> None:
        self.path = Path(root) / "instances" / f"iowall-{os.getpid()}-{next(_counter)}"
        self._token: Path | None = None

    def create(self) -> Instance:
        """mkdir the instance (journaled for removal)."""
        self._token = journal.add({"undo": "rmdir", "path": str(self.path)})
        try:
            self.path.mkdir()
        except OSError as e:
            journal.done(self._token)
            self._token = None
            raise IowallError(f"cannot create ftrace instance {self.path}: {e}") from e
        return self

    def write(self, rel: str, value: str) -> None:
        """Write a control file of the instance (``buffer_size_kb``, ``events/…/enable``)."""
        with open(self.path / rel, "w") as f:
            f.write(value)

    def read(self, rel: str) -> str:
        """Read a file of the instance ('' when it cannot be read)."""
        try:
            return (self.path / rel).read_text()
        except OSError:
            return ""

    def lost_events(self) -> int:
        """Events the ring buffer lost: overruns (overwritten) plus dropped (buffer full)."""
        lost = 0
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            for line in self.read(str(stats.relative_to(self.path))).splitlines():
                k, _, v = line.partition(":")
                if k.strip() in ("overrun", "dropped events"):
                    try:
                        lost += int(v.split()[0])
                    except (ValueError, IndexError):
                        pass
        return lost

    def remove(self) -> None:
        """Disable tracing and rmdir the instance (removing it frees its buffer)."""
        if self._token is None:
            return
        try:
            self.write("tracing_on", "0")
        except OSError:
            pass
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        journal.done(self._token)
        self._token = None
