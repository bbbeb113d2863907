"""`iowall run bdev-rwmix --quick` (shorter) on four loop devices over the quarters of one
image: the seed 000 table (per instance read and write bandwidth per mix, numbers with units
in the JSON), nothing left behind."""

from __future__ import annotations

import json

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.beside]


def test_bdev_rwmix_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run",
        "bdev-rwmix",
        "--quick",
        "--set",
        "rwmixwrite=0,30",
        "--set",
        "runtime=2",
        "--set",
        "image_size=1G",
        "--format",
        "json",
        env=iowall_env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == ["", "Read", "Write"]
    rows = doc["table"]["rows"]
    assert [r[0] for r in rows] == ["read-only"] + [f"Instance {i}" for i in range(1, 5)] + [
        "rwmixwrite=30%"
    ] + [f"Instance {i}" for i in range(1, 5)]
    for r in rows[1:5]:  # read-only: no write bandwidth
        assert r[1]["unit"] == r[2]["unit"] == "B/s" and r[1]["value"] > 0 and r[2]["value"] is None, r
    for r in rows[6:]:
        assert r[1]["value"] > 0 and r[2]["value"] > 0 and r[2]["unit"] == "B/s", r
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    assert any("losetup --offset --sizelimit" in n for n in doc["notes"])
    for run in doc["runs"]:
        for i in range(1, 5):
            assert run["metrics"][f"inst{i}_read_bw_bytes_per_s"]["value"] > 0
