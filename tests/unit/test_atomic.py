"""The one atomic writer (iowall.machine.atomic): whole or nothing, and durable: the file and then its
directory are fsynced, for text (reports, bundles, journal entries) and bytes (figures)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from iowall.machine import atomic
from iowall.vocab.errors import UserError


def _text(p: Path) -> None:
    atomic.write_text(str(p), "hello\n")


def _bytes(p: Path) -> None:
    atomic.write_bytes(str(p), b"\x89PNG")


@pytest.mark.parametrize("write", [_text, _bytes])
def test_file_then_its_directory_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: Callable[[Path], None]
) -> None:
    synced: list[tuple[str, int]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.append(("dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "out"
    write(target)
    # the file's inode is the one renamed into place; then the directory holding it
    assert synced == [("file", target.stat().st_ino), ("dir", tmp_path.stat().st_ino)]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_failure_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic.open_atomic(str(target)) as f:
        f.write("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out"]


def test_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot write figure"):
        atomic.write_bytes(str(tmp_path / "no" / "x.png"), b"", what="figure")
