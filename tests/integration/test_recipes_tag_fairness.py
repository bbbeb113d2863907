"""`iowall run tag-fairness --quick` (fewer jobs, shorter) on a real raw loop device: the
seed 001 table, max_sectors_kb lowered during the runs and restored, nothing left behind."""

from __future__ import annotations

import json

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.beside]


def test_tag_fairness_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run",
        "tag-fairness",
        "--quick",
        "--set",
        "numjobs=1,2,4",
        "--set",
        "runtime=2",
        "--set",
        "ramp_time=0",
        "--set",
        "image_size=512M",
        "--format",
        "json",
        env=iowall_env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == ["numjobs", "Bandwidth"]
    rows = doc["table"]["rows"]
    assert [r[0] for r in rows] == ["1", "2", "4"]
    assert all(r[1]["unit"] == "B/s" and r[1]["value"] > 0 for r in rows), rows
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    assert any("max_sectors_kb" in n and "set to 128" in n for n in doc["notes"])
    # the knob was restored: the device is gone, and the journal is empty
    from pathlib import Path

    jdir = Path(iowall_env["XDG_STATE_HOME"], "iowall", "journal")
    assert not list(jdir.glob("*.json"))
