"""`iowall run small-file-writeback --quick` (shortened) on a real ram bed: the seed 004 table
with files/s, device write IOPS, the direct-I/O ceiling, flusher busy % and throttled time."""

from __future__ import annotations

import json

import pytest

from iowall.recipes import small_file_writeback as sfw
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.beside]


def test_small_file_writeback_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run",
        "small-file-writeback",
        "--quick",
        "--set",
        "seconds=3",
        "--set",
        "bed_size=2G",
        "--format",
        "json",
        env=iowall_env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == [
        "Variant",
        "Threads",
        "Files/s",
        "Write IOPS",
        "DIO IOPS",
        "Share",
        "Flusher",
        "Pages/CPU-s",
        "Throttled",
    ]
    rows = doc["table"]["rows"]
    assert [r[0] for r in rows] == ["default", "extsize"]
    for r in rows:
        assert int(r[1]) >= 1
        units = ["files/s", "ops_per_s", "IO/s", "share", "percent", "pages/CPU-s", "s"]
        assert [c["unit"] for c in r[2:]] == units
        assert all(c["value"] > 0 for c in r[2:6]), r
        assert r[6]["value"] >= 0 and r[8]["value"] >= 0, r
        # pages per flusher CPU-second: only when the flusher was busy enough to divide by
        flusher = r[6]["value"]
        assert (r[7]["value"] is None) == (flusher < sfw.FLUSHER_FLOOR), r
        assert r[7]["value"] is None or r[7]["value"] > 0, r
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    kinds = sorted(r["point"]["kind"] for r in doc["runs"])
    assert kinds == ["dio-ceiling", "smallfiles", "smallfiles"]
    stream = [r for r in doc["runs"] if r["point"]["kind"] == "smallfiles"]
    for r in stream:  # probes ran: the table's numbers come from stored metrics
        assert "disk_write_iops" in r["metrics"] and "flusher_cpu_share" in r["metrics"]
        assert "throttle_pause_s" in r["metrics"] and "vm_nr_written_per_s" in r["metrics"]
