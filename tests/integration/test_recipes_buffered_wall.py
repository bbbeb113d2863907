"""`iowall run buffered-wall --quick` on a real ram bed: the seed 002 table, and the fill
variant ending on ENOSPC with status filled and the bytes written counted; the JSON's cells
numbers with units, the text's as before."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.beside]


RATE = r"[\d.]+(?:KiB|MiB|GiB)/s"


def test_buffered_wall_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run", "buffered-wall", "--quick", "--repeat", "1", "--format", "json", env=iowall_env, timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == ["Variant", "Jobs", "Direct", "Buffered", "Buffered/Direct"]
    (row,) = doc["table"]["rows"]
    assert row[0] == "normal" and int(row[1]) >= 1
    assert [c["unit"] for c in row[2:]] == ["B/s", "B/s", "ratio"]
    assert all(c["value"] > 0 for c in row[2:]), row
    assert sorted(r["point"]["direct"] for r in doc["runs"]) == [0, 1]
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    assert any("filesize" in n for n in doc["notes"])
    # a second label: one row per label in the text table, under a Label column
    cp = iowall(
        "run", "buffered-wall", "--quick", "--repeat", "1", "--label", "other", env=iowall_env, timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    table = cp.stdout.split("\n\n")[1].splitlines()
    assert table[0].split()[:3] == ["Label", "Variant", "Jobs"]
    assert [line.split()[0] for line in table[1:]] == ["buffered-wall", "other"]
    for line in table[1:]:
        assert re.fullmatch(rf"{RATE} {RATE} \d+\.\d\d", " ".join(line.split()[3:])), line


def test_buffered_wall_fill(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run",
        "buffered-wall",
        "--quick",
        "--repeat",
        "1",
        "--set",
        "variant=fill",
        "--set",
        "direct=1",
        "--set",
        "bed_size=512M",
        "--format",
        "json",
        env=iowall_env,
        timeout=300,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (run,) = doc["runs"]
    assert run["status"] == "filled"
    assert run["metrics"]["write_io_bytes"]["value"] > 256 << 20
    assert doc["table"]["headers"][-2:] == ["Direct written", "Buffered written"]
    (row,) = doc["table"]["rows"]
    assert row[-2] == {"value": run["metrics"]["write_io_bytes"]["value"], "unit": "B"}
    assert row[-1] == {"value": None, "unit": "B"}  # direct=1 alone: nothing buffered ran
