"""Write a file whole or not at all, the one way iowall does it: a temporary file in the same
directory, fsynced, renamed over the target, then the directory fsynced, so neither a crash,
Ctrl-C nor a power cut leaves half a report, bundle, figure or journal entry (nor, after a
power cut, a rename that never reached the disk)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, BinaryIO, TextIO, cast

from ..vocab.errors import UserError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike[str], text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (``-`` is stdout); a UserError naming ``what``
    when the directory is missing or not writable."""
    with open_atomic(path, what=what) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, what: str = "file") -> None:
    """``write_text`` for bytes (a figure, an archive)."""
    with open_atomic_bytes(path, what=what) as f:
        f.write(data)


@contextmanager
def open_atomic(path: str | os.PathLike[str], *, what: str = "file") -> Iterator[TextIO]:
    """A text file to write piece by piece (a stream of any length in bounded memory) that
    appears at ``path`` whole when the block ends, or not at all if it raises; ``-`` is
    stdout, and a path that is not a regular file (``/dev/null``, a FIFO) is written as it is,
    not renamed over. A UserError naming ``what`` when the directory is missing or not writable."""
    with _atomic(os.fspath(path), "w", what) as f:
        yield cast(TextIO, f)


@contextmanager
def open_atomic_bytes(path: str | os.PathLike[str], *, what: str = "file") -> Iterator[BinaryIO]:
    """``open_atomic`` in binary mode (``-`` is stdout's bytes)."""
    with _atomic(os.fspath(path), "wb", what) as f:
        yield cast(BinaryIO, f)


@contextmanager
def _atomic(path: str, mode: str, what: str) -> Iterator[IO[Any]]:
    enc = None if "b" in mode else "utf-8"
    if path == "-":
        out: IO[Any] = sys.stdout.buffer if "b" in mode else sys.stdout
        yield out
        out.flush()
        return
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/null, a FIFO: never replaced
        try:
            with open(path, mode, encoding=enc) as dev:
                yield dev
        except OSError as e:
            raise UserError(f"cannot write {what} {path}: {e.strerror or e}") from None
        return
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".iowall-", suffix=".tmp", dir=d)
    except OSError as e:
        raise UserError(f"cannot write {what} {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, mode, encoding=enc) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise UserError(f"cannot write {what} {path}: {e.strerror or e}") from None
        raise
    _fsync_dir(d)


def _fsync_dir(d: str) -> None:
    """Make the rename in ``d`` durable; a filesystem that cannot fsync a directory (some
    network ones refuse) still has the file whole, so that is not an error."""
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
