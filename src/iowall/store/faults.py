"""How the store's failures are read: one line from a database error (the driver's words,
not SQLAlchemy's statement), whether a PostgreSQL connection was lost and a new one may mend
it (retried, ``Store.add_runs``), and whether a filesystem can hold a store's runs at all
(``Store.check_room``, docs/safety.md)."""

from __future__ import annotations

import os
import sys

#: Waits before each new try of a PostgreSQL write whose connection was lost (about a
#: minute in all: a server restarting), then the error stands.
RETRY_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)

#: The free space a SQLite store's filesystem must have before a job measures.
ROOM_BYTES = 8 << 20


def say(text: str) -> None:
    """A line on stderr, as the CLI says things (``iowall: …``)."""
    print(f"iowall: {text}", file=sys.stderr)


def read_only_fs(path: str) -> bool:
    """Whether the filesystem that holds (or would hold) ``path`` is mounted read-only."""
    try:
        return bool(os.statvfs(os.path.dirname(path) or ".").f_flag & os.ST_RDONLY)
    except OSError:
        return False


def connection_lost(e: BaseException) -> bool:
    """Whether a database error says the connection went away (a server restarted, a
    network cut), which a new connection may mend; not a constraint, a full disk or a
    syntax error."""
    if getattr(e, "connection_invalidated", False):
        return True
    text = failure_text(e).lower()
    return any(
        w in text
        for w in (
            "server closed the connection",
            "connection failed",
            "connection to server",
            "no connection to the server",
            "could not receive data",
            "terminating connection",
            "connection refused",
            "could not connect",
            "connection is closed",
            "the database system is starting up",
            "the database system is shutting down",
            "consuming input failed",
            "ssl syscall error",
        )
    )


def failure_text(e: BaseException) -> str:
    """One line for a database error: the driver's own message (``database or disk is
    full``), without SQLAlchemy's statement and background link."""
    orig = getattr(e, "orig", None)
    text = str(orig if orig is not None else e).strip() or type(e).__name__
    return text.splitlines()[0]


def machine_fault(e: BaseException) -> bool:
    """Whether a store that cannot be opened is the machine's fault, not the user's input: a
    full disk, an I/O error, a read-only file (exit 4). A server that cannot be reached as a
    store opens is taken for a wrong --db (exit 2); one lost during a job is tried again."""
    text = failure_text(e).lower()
    return any(w in text for w in ("disk is full", "disk i/o error", "readonly database", "no space left"))


def room_problem(path: str) -> str | None:
    """What keeps the SQLite store at ``path`` from keeping a job's runs, as the end of a
    sentence (``has 1.8 MiB free on its filesystem; …``), or None: under ``ROOM_BYTES``
    free, or a file or directory this user cannot write."""
    d = os.path.dirname(path) or "."
    try:
        st = os.statvfs(d)
    except OSError:
        return None  # no such directory: the store's own open says so
    free = st.f_bavail * st.f_frsize
    if free < ROOM_BYTES:
        return (
            f"has {free / 2**20:.1f} MiB free on its filesystem; a job needs {ROOM_BYTES >> 20} MiB "
            "(a probed run takes up to about 0.4 MiB, its write-ahead log as much again)"
        )
    target = path if os.path.exists(path) else d
    if not os.access(target, os.W_OK):
        return f"cannot be written by this user ({target})"
    return None
