"""smallfiles: counts, per-second series and the ENOSPC stop."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from enginetest import tree


def check_counts(rec: dict, threads: int) -> None:
    assert rec["mode"] == "smallfiles"
    assert rec["threads"] == threads
    assert rec["bytes"] == rec["files"] * rec["size"]
    assert sum(rec["per_second"]) == rec["files"]
    assert sum(t["files"] for t in rec["per_thread"]) == rec["files"]
    assert len(rec["per_thread"]) == threads
    assert rec["files_per_s"] == pytest.approx(rec["files"] / rec["wall_s"], rel=1e-6)
    assert rec["wall_s"] == pytest.approx(len(rec["per_second"]) - 1 + rec["last_interval_s"])
    assert 0 < rec["last_interval_s"] <= 2.0  # 1 s, plus the stop latency of a loaded box


def test_files(run, anyfs: Path) -> None:
    d = anyfs / "s"
    r = run("smallfiles", "--dir", str(d), "--threads", "2", "--files", "2501", "--files-per-dir", "500")
    assert r.rc == 0, r.stdout + r.stderr
    (rec,) = r.records
    check_counts(rec, 2)
    assert rec["status"] == "ok"
    assert rec["files"] == 2501 and rec["target_files"] == 2501 and rec["seconds"] is None
    assert rec["size"] == 4096 and rec["fsync"] == "none"
    assert [t["files"] for t in rec["per_thread"]] == [1251, 1250]
    files, dirs = tree(d)
    assert len(files) == 2501
    assert {p.stat().st_size for p in files} == {4096}
    # per thread: its root and ceil(files / 500) directories
    assert len(dirs) == 2 + 3 + 3 == 2 + rec["dirs"]
    assert max(len(list(x.iterdir())) for x in dirs if x.name.startswith("d")) == 500


def test_seconds(run, tmpfs: Path) -> None:
    r = run("smallfiles", "--dir", str(tmpfs / "s"), "--threads", "2", "--seconds", "2.5", "--size", "0")
    assert r.rc == 0, r.stdout + r.stderr
    (rec,) = r.records
    check_counts(rec, 2)
    assert rec["seconds"] == 2.5 and rec["target_files"] is None
    assert 2.5 <= rec["wall_s"] < 3.5
    assert len(rec["per_second"]) == math.ceil(2.5)
    assert all(c > 0 for c in rec["per_second"])
    assert len(tree(tmpfs / "s")[0]) == rec["files"]


def test_files_and_seconds_whichever_first(run, tmpfs: Path) -> None:
    """Both given: the count stops a long time early, the time stops a large count."""
    d = tmpfs / "s"
    r = run(
        "smallfiles", "--dir", str(d), "--threads", "2", "--seconds", "30", "--files", "300", "--size", "0"
    )
    assert r.rc == 0, r.stdout + r.stderr
    (rec,) = r.records
    check_counts(rec, 2)
    assert rec["files"] == 300 and rec["target_files"] == 300 and rec["seconds"] == 30
    assert rec["wall_s"] < 30
    e = tmpfs / "t"
    r = run(
        "smallfiles",
        "--dir",
        str(e),
        "--threads",
        "1",
        "--seconds",
        "1",
        "--files",
        str(10**12),
        "--size",
        "0",
    )
    assert r.rc == 0, r.stdout + r.stderr
    (rec,) = r.records
    assert 1 <= rec["wall_s"] < 2 and 0 < rec["files"] < 10**12
    assert len(tree(e)[0]) == rec["files"]


def test_fsync_close(run, scratch: Path) -> None:
    r = run("smallfiles", "--dir", str(scratch / "s"), "--threads", "1", "--files", "50", "--fsync", "close")
    assert r.rc == 0, r.stdout
    assert r.records[0]["fsync"] == "close" and r.records[0]["files"] == 50


def test_enospc_ends_cleanly_with_partial_counts(run, mount_tmpfs) -> None:
    mnt = mount_tmpfs("size=2m")
    r = run("smallfiles", "--dir", str(mnt / "s"), "--threads", "2", "--seconds", "30")
    assert r.rc == 1
    (rec,) = r.records
    assert rec["errno_name"] == "ENOSPC" and rec["status"] == "filled"
    assert rec["wall_s"] < 10
    check_counts(rec, 2)
    files, _ = tree(mnt / "s")
    complete = [p for p in files if p.stat().st_size == 4096]
    assert len(complete) == rec["files"]
    assert 0 < rec["files"] <= 512
