"""The fleet's wheelhouse is reused only when it was built from the same sources; the cache
keeps the few used last."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from iowall.fleet.ansible import Event
from iowall.fleet.drive import _Progress
from iowall.fleet.wheelhouse import DIGEST, TAR, drop_per_run, prune, reusable, shared, source_digest


def _tree(root: Path) -> None:
    for rel, text in {
        "setup.py": "setup()",
        "pyproject.toml": "[project]",
        "src/iowall/a.py": "x = 1",
        "engine/src/e.c": "int main(void){return 0;}",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _house(dest: Path, digest: str) -> None:
    dest.mkdir(parents=True)
    (dest / "iowall-0.1.0-py3-none-linux_x86_64.whl").write_bytes(b"wheel")
    (dest / TAR).write_bytes(b"tar")
    (dest / DIGEST).write_text(digest + "\n")


def test_the_digest_moves_with_the_sources_not_with_what_a_build_leaves(tmp_path: Path) -> None:
    _tree(tmp_path)
    d0 = source_digest(tmp_path)
    (tmp_path / "src/iowall/__pycache__").mkdir()
    (tmp_path / "src/iowall/__pycache__/a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "src/iowall/_bin").mkdir()
    (tmp_path / "src/iowall/_bin/iowall-engine").write_bytes(b"\x7fELF")
    (tmp_path / "README.md").write_text("not in the wheel")
    assert source_digest(tmp_path) == d0
    (tmp_path / "engine/src/e.c").write_text("int main(void){return 1;}")
    assert source_digest(tmp_path) != d0
    (tmp_path / "engine/src/e.c").write_text("int main(void){return 0;}")
    (tmp_path / "src/iowall/b.py").write_text("")  # a new, empty module is a change too
    assert source_digest(tmp_path) != d0


def test_a_wheelhouse_is_reused_only_when_whole_and_from_the_same_sources(tmp_path: Path) -> None:
    root, dest = tmp_path / "src", tmp_path / "wheelhouse" / "0123456789abcdef"
    _tree(root)
    assert reusable(dest, source_digest(root)) is None  # nothing built yet
    _house(dest, source_digest(root))
    assert reusable(dest, source_digest(root)) == "iowall-0.1.0-py3-none-linux_x86_64.whl"
    (root / "src/iowall/a.py").write_text("x = 2")
    assert reusable(dest, source_digest(root)) is None  # edited since
    (dest / DIGEST).write_text(source_digest(root))
    (dest / TAR).unlink()
    assert reusable(dest, source_digest(root)) is None  # the archive the hosts copy is missing


def test_one_wheelhouse_per_source_digest_in_the_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert shared("ab" * 32) == tmp_path / "iowall" / "wheelhouse" / ("ab" * 8)


def test_the_cache_keeps_the_wheelhouses_used_last_and_no_stale_build(tmp_path: Path) -> None:
    now = time.time()
    for i in range(5):  # house 0 used last
        (tmp_path / f"h{i}").mkdir()
        os.utime(tmp_path / f"h{i}", (now - i * 60, now - i * 60))
    (tmp_path / "h9.building-old").mkdir()
    os.utime(tmp_path / "h9.building-old", (now - 2 * 86400, now - 2 * 86400))
    (tmp_path / "h8.building-now").mkdir()  # another fleet run's build under way
    removed = prune(tmp_path)
    assert sorted(p.name for p in removed) == ["h3", "h4", "h9.building-old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h0", "h1", "h2", "h8.building-now"]


def test_a_host_with_the_same_archive_is_said_installed_already() -> None:
    said: list[str] = []
    progress = _Progress(said.append)
    for host, copied in (("web1", "changed"), ("web2", "ok")):
        progress(Event(copied, host, "iowall: copy wheelhouse"))
        progress(Event("ok", host, "iowall: dependencies"))
    assert [ln.split("] ", 1)[1] for ln in said] == [
        "web1: wheelhouse copied",
        "web1: installed",
        "web2: wheelhouse there already (the same archive)",
        "web2: installed already",
    ]


def test_the_wheelhouses_kept_per_fleet_run_before_sharing_are_removed(tmp_path: Path) -> None:
    for key in ("a", "b"):
        (tmp_path / key / "hosts").mkdir(parents=True)
        (tmp_path / key / "hosts" / "h.json").write_text("{}")
    _house(tmp_path / "a" / "wheelhouse", "d" * 64)
    assert drop_per_run(tmp_path) == [tmp_path / "a" / "wheelhouse"]
    assert not (tmp_path / "a" / "wheelhouse").exists()
    assert (tmp_path / "a" / "hosts" / "h.json").is_file()  # the run's state stays
    assert drop_per_run(tmp_path) == []
