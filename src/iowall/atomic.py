"""Write a text file whole or not at all: a temporary file in the same directory, fsynced,
then renamed over the target, so a crash or Ctrl-C never leaves half a report or bundle."""

from __future__ import annotations

import os
import sys
import tempfile

from .errors import UserError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: str, text: str, *, what: str = "file") -> None:
    """Write ``text`` to ``path`` atomically (``-`` is stdout); a UserError naming ``what``
    when the directory is missing or not writable."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".iowall-", suffix=".tmp", dir=d)
    except OSError as e:
        raise UserError(f"cannot write {what} {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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
