"""Write a text file whole or not at all: a temporary file in the same directory, fsynced,
then renamed over the target, so a crash or Ctrl-C never leaves half a report or bundle."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from .errors import UserError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str, text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (``-`` is stdout); a UserError naming ``what``
    when the directory is missing or not writable."""
    with open_atomic(path, what=what) as f:
        f.write(text)


@contextmanager
def open_atomic(path: str, *, what: str = "file") -> Iterator[TextIO]:
    """A text file to write piece by piece (a stream of any length in bounded memory) that
    appears at ``path`` whole when the block ends, or not at all if it raises; ``-`` is
    stdout, and a path that is not a regular file (``/dev/null``, a FIFO) is written as it is,
    not renamed over. A UserError naming ``what`` when the directory is missing or not writable."""
    if path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/null, a FIFO: never replaced
        try:
            with open(path, "w", encoding="utf-8") as dev:
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
        with os.fdopen(fd, "w", encoding="utf-8") as f:
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
