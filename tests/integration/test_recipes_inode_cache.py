"""`iowall run inode-cache --quick` (fewer files and threads) on real ram beds: the seed 003
table for xfs, ext4, btrfs and btrfs with a subvolume per thread."""

from __future__ import annotations

import json

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.beside]


def test_inode_cache_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run",
        "inode-cache",
        "--quick",
        "--set",
        "threads=1,2",
        "--set",
        "files=2000",
        "--format",
        "json",
        env=iowall_env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == ["Filesystem", "Files", "Threads", "Create", "Walk", "chmod", "Unlink"]
    rows = doc["table"]["rows"]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (fs, str(2000 * t), str(t)) for fs in ("xfs", "ext4", "btrfs", "btrfs-svol") for t in (1, 2)
    ]
    for r in rows:
        for cell in r[3:]:
            assert cell["unit"] == "s" and cell["value"] > 0, r
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    assert all(r["metrics"]["unlink_files_per_s"]["value"] > 0 for r in doc["runs"])
