"""`iowall run buffered-wall --quick` on a real ram bed: the seed 002 table, and the fill
variant ending on ENOSPC with status filled and the bytes written counted."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]


def mib(cell: str) -> float:
    m = re.fullmatch(r"([\d.]+)(KiB|MiB|GiB)/s", cell)
    assert m, cell
    return float(m.group(1)) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(2)]


def test_buffered_wall_quick(iowall_env: dict[str, str], no_leftovers: None) -> None:
    cp = iowall(
        "run", "buffered-wall", "--quick", "--repeat", "1", "--format", "json", env=iowall_env, timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["table"]["headers"] == ["Variant", "Jobs", "Direct", "Buffered", "Buffered/Direct"]
    (row,) = doc["table"]["rows"]
    assert row[0] == "normal" and int(row[1]) >= 1
    assert mib(row[2]) > 0 and mib(row[3]) > 0 and float(row[4]) > 0
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
    assert "Direct written" in doc["table"]["headers"]
