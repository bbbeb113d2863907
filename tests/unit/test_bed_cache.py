"""The bed's cache drop walks the bed's tree, counts what it opened and gives up (for the
machine-wide drop) past its budget; without a mount point nothing is counted up front."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowall.beds import cache


def test_every_file_and_directory_is_counted(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    for p in (tmp_path / "x", tmp_path / "a" / "y", tmp_path / "a" / "b" / "z"):
        p.write_bytes(b"data")
    # three files and three directories (the root, a, a/b)
    assert cache.invalidate_tree(str(tmp_path)) == 6
    assert cache.invalidate_tree(str(tmp_path / "missing")) == 0


def test_past_the_budget_the_walk_gives_up(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_bytes(b"")
    with pytest.raises(cache.TooManyFiles):
        cache.invalidate_tree(str(tmp_path), budget=3)


def test_a_directory_bed_is_counted_by_its_walk(tmp_path: Path) -> None:
    assert cache._inodes_in_use(str(tmp_path)) == 0  # not a mount point
    assert cache._inodes_in_use("/") > 0


def test_a_bed_past_the_budget_drops_machine_wide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_bytes(b"")
    levels: list[int] = []
    monkeypatch.setattr(cache, "drop_caches", levels.append)
    monkeypatch.setattr(cache.os, "sync", lambda: None)
    monkeypatch.setattr(cache, "MAX_FILES", 3)
    cache.drop_bed_caches([str(tmp_path)], [])
    assert levels == [3]
    monkeypatch.setattr(cache, "MAX_FILES", 100)
    levels.clear()
    cache.drop_bed_caches([str(tmp_path)], ["/dev/null"])
    assert levels == [2]
