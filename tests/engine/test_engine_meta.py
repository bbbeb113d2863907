"""meta: what create makes is what was asked; walk, chmod and unlink see and change every file."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from enginetest import Result, tree


def meta(run: Callable[..., Result], d: Path, *args: str) -> Result:
    return run("meta", "--dir", str(d), *args)


def check_phase(rec: dict, phase: str, threads: int, files: int, dirs: int) -> None:
    assert rec["mode"] == "meta"
    assert rec["phase"] == phase
    assert rec["threads"] == threads
    assert rec["files"] == files
    assert rec["expected_files"] == files
    assert rec["dirs"] == dirs
    assert rec["wall_s"] > 0
    assert rec["files_per_s"] == pytest.approx(files / rec["wall_s"], rel=1e-6)
    assert rec["user_s"] >= 0 and rec["sys_s"] >= 0
    assert 0 < rec["peak_rss_kib"] < 64 * 1024
    pt = rec["per_thread"]
    assert len(pt) == threads
    assert sum(t["files"] for t in pt) == files
    assert sum(t["dirs"] for t in pt) == dirs
    # the phase ends with its last thread
    assert max(t["wall_s"] for t in pt) == pytest.approx(rec["wall_s"])


def test_all_phases_in_one_run(run, anyfs: Path) -> None:
    d = anyfs / "m"
    r = meta(
        run,
        d,
        "--threads",
        "3",
        "--files-per-thread",
        "1000",
        "--dirs-per-thread",
        "4",
        "--phases",
        "create,walk,chmod,unlink",
    )
    assert r.rc == 0, r.stdout + r.stderr
    assert [x["phase"] for x in r.records] == ["create", "walk", "chmod", "unlink"]
    for rec in r.records:
        check_phase(rec, rec["phase"], 3, 3000, 12)
        assert all(t["files"] == 1000 and t["dirs"] == 4 for t in rec["per_thread"])
    assert r.records[2]["chmod_mode"] == "0600"
    assert list(d.iterdir()) == []  # unlink leaves D itself, empty


def test_phases_in_separate_invocations(run, anyfs: Path) -> None:
    d = anyfs / "m"
    common = ["--threads", "2", "--files-per-thread", "2500", "--dirs-per-thread", "3", "--size", "4096"]
    r = meta(run, d, *common, "--phases", "create")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "create", 2, 5000, 6)

    files, dirs = tree(d)
    assert len(files) == 5000
    assert sorted(p.relative_to(d).as_posix() for p in dirs) == [
        f"t{t:03d}" + (f"/d{k:03d}" if k >= 0 else "") for t in range(2) for k in range(-1, 3)
    ]
    # 2500 files spread evenly over 3 directories: 834, 833, 833
    assert sorted(len(os.listdir(d / "t000" / f"d{k:03d}")) for k in range(3)) == [833, 833, 834]
    sizes = {p.stat().st_size for p in files}
    modes = {stat.S_IMODE(p.stat().st_mode) for p in files}
    assert sizes == {4096}
    assert modes == {0o644 & ~current_umask()}

    r = meta(run, d, *common, "--phases", "walk")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "walk", 2, 5000, 6)
    assert r.records[0]["bytes"] == 5000 * 4096

    r = meta(run, d, *common, "--chmod-mode", "0640", "--phases", "chmod")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "chmod", 2, 5000, 6)
    assert {stat.S_IMODE(p.stat().st_mode) for p in tree(d)[0]} == {0o640}
    assert {stat.S_IMODE(p.stat().st_mode) for p in tree(d)[1]} == {0o755 & ~current_umask()}

    r = meta(run, d, *common, "--phases", "unlink")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "unlink", 2, 5000, 6)
    assert list(d.iterdir()) == []


def current_umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_walk_finds_names_it_did_not_make(run, scratch: Path) -> None:
    """walk, chmod and unlink read names with getdents64, not from the naming scheme."""
    d = scratch / "m"
    common = ["--threads", "2", "--files-per-thread", "10", "--dirs-per-thread", "1"]
    assert meta(run, d, *common, "--phases", "create").rc == 0
    (d / "t000" / "d000" / "f0000003").rename(d / "t000" / "d000" / "renamed")
    (d / "t001" / "d000").rename(d / "t001" / "other")
    r = meta(run, d, *common, "--phases", "walk,chmod,unlink")
    assert r.rc == 0, r.stdout
    assert [x["files"] for x in r.records] == [20, 20, 20]
    assert list(d.iterdir()) == []


def test_walk_checks_the_tree_matches_the_request(run, scratch: Path) -> None:
    d = scratch / "m"
    assert meta(run, d, "--threads", "2", "--files-per-thread", "10", "--phases", "create").rc == 0
    (d / "t001" / "d000" / "f0000004").unlink()
    r = meta(run, d, "--threads", "2", "--files-per-thread", "10", "--phases", "walk")
    assert r.rc == 1
    (rec,) = r.records
    assert "found 19 files" in rec["error"] and "expected 20" in rec["error"]
    assert rec["errno"] == 0 and rec["errno_name"] is None
    assert rec["files"] == 19


def test_walk_without_a_tree_is_enoent(run, scratch: Path) -> None:
    r = meta(run, scratch, "--threads", "1", "--files-per-thread", "10", "--phases", "walk")
    assert r.rc == 1
    (rec,) = r.records
    assert rec["errno_name"] == "ENOENT"
    assert rec["path"] == str(scratch / "t000")


def test_default_dirs_per_thread_is_10k_files_per_dir(run, tmpfs: Path) -> None:
    r = meta(run, tmpfs, "--threads", "1", "--files-per-thread", "25000", "--phases", "create")
    assert r.rc == 0
    assert r.records[0]["dirs_per_thread"] == 3
    assert sorted(os.listdir(tmpfs / "t000")) == ["d000", "d001", "d002"]


def test_shared_dir(run, anyfs: Path) -> None:
    d = anyfs / "m"
    common = ["--threads", "3", "--files-per-thread", "2000", "--shared-dir"]
    r = meta(run, d, *common, "--phases", "create,walk")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "create", 3, 6000, 0)
    check_phase(r.records[1], "walk", 3, 6000, 0)
    assert r.records[0]["shared_dir"] is True and r.records[0]["dirs_per_thread"] is None
    assert os.listdir(d) == ["shared"]
    names = os.listdir(d / "shared")
    assert len(names) == 6000
    assert {n[:5] for n in names} == {"t000-", "t001-", "t002-"}
    r = meta(run, d, *common, "--phases", "chmod,unlink")
    assert r.rc == 0, r.stdout
    check_phase(r.records[0], "chmod", 3, 6000, 0)
    check_phase(r.records[1], "unlink", 3, 6000, 0)
    assert list(d.iterdir()) == []


def test_existing_empty_thread_root_is_accepted(run, scratch: Path) -> None:
    """The caller may pre-create D/tNNN (e.g. a btrfs subvolume per thread)."""
    d = scratch / "m"
    for t in range(2):
        (d / f"t{t:03d}").mkdir(parents=True)
    r = meta(run, d, "--threads", "2", "--files-per-thread", "100", "--phases", "create,unlink")
    assert r.rc == 0, r.stdout
    assert r.records[0]["files"] == 200


def test_create_over_an_existing_tree_is_eexist(run, scratch: Path) -> None:
    d = scratch / "m"
    common = ["--threads", "2", "--files-per-thread", "100", "--phases", "create"]
    assert meta(run, d, *common).rc == 0
    r = meta(run, d, *common)
    assert r.rc == 1
    (rec,) = r.records
    assert rec["errno_name"] == "EEXIST" and rec["errno"] == 17
    assert rec["phase"] == "create"
    assert rec["path"].startswith(str(d / "t00"))


def test_full_tmpfs_is_enospc(run, mount_tmpfs) -> None:
    mnt = mount_tmpfs("size=1m")
    r = run(
        "meta",
        "--dir",
        str(mnt / "m"),
        "--threads",
        "2",
        "--files-per-thread",
        "1000",
        "--size",
        "4096",
        "--phases",
        "create,walk",
    )
    assert r.rc == 1
    (rec,) = r.records  # the phase ends, walk never runs
    assert rec["errno_name"] == "ENOSPC" and rec["errno"] == 28
    assert rec["phase"] == "create"
    assert rec["path"].startswith(str(mnt / "m" / "t00"))
    assert "No space left" in rec["error"]
    files, _ = tree(mnt / "m")
    # every file counted was complete; the one that failed may exist partly written
    assert rec["files"] <= len(files) <= rec["files"] + 2


def test_out_of_inodes_is_enospc_at_openat(run, mount_tmpfs) -> None:
    mnt = mount_tmpfs("size=64m,nr_inodes=200")
    r = run("meta", "--dir", str(mnt), "--threads", "2", "--files-per-thread", "1000", "--phases", "create")
    assert r.rc == 1
    assert r.records[0]["errno_name"] == "ENOSPC"
    assert r.records[0]["error"].startswith(("openat", "mkdirat"))


def test_read_only_mount_is_erofs(run, mount_tmpfs) -> None:
    mnt = mount_tmpfs("size=1m,ro")
    r = run("meta", "--dir", str(mnt), "--threads", "1", "--files-per-thread", "10", "--phases", "create")
    assert r.rc == 1
    assert r.records[0]["errno_name"] == "EROFS"
    assert r.records[0]["path"] == str(mnt / "t000")


def test_memory_does_not_grow_with_files(run, tmpfs: Path) -> None:
    small = meta(
        run,
        tmpfs / "a",
        "--threads",
        "2",
        "--files-per-thread",
        "1000",
        "--phases",
        "create,walk,chmod,unlink",
    )
    big = meta(
        run,
        tmpfs / "b",
        "--threads",
        "2",
        "--files-per-thread",
        "100000",
        "--phases",
        "create,walk,chmod,unlink",
    )
    assert small.rc == 0 and big.rc == 0
    rss_small = max(x["peak_rss_kib"] for x in small.records)
    rss_big = max(x["peak_rss_kib"] for x in big.records)
    assert rss_big < rss_small + 1024, (rss_small, rss_big)
