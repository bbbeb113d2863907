"""The engine built with AddressSanitizer + UBSan runs every mode clean (leaks included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from enginetest import ENGINE_SRC, Result, run_engine, tree

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=99",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=98",
}


@pytest.fixture(scope="module")
def asan_engine() -> Iterator[str]:
    """``make -C engine asan OUT=<tmp>``: the engine under the sanitizers (removed after)."""
    out = tempfile.mkdtemp(prefix="iowall-engine-asan-")
    try:
        subprocess.run(
            ["make", "-s", "-C", str(ENGINE_SRC), "asan", f"OUT={out}"], check=True, capture_output=True
        )
        yield os.path.join(out, "iowall-engine-asan")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def san_run(binary: str) -> Callable[..., Result]:
    env = {**os.environ, **SAN_ENV}

    def _run(*args: str) -> Result:
        r = run_engine(binary, *args, env=env)
        for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            assert marker not in r.stderr, r.stderr
        assert r.rc not in (98, 99), r.stderr
        return r

    return _run


def test_memcopy_under_asan(asan_engine: str) -> None:
    run = san_run(asan_engine)
    for method in ("best", "movsb", "memcpy"):
        r = run(
            "memcopy", "--threads", "2", "--bytes", "1M", "--passes", "2", "--loops", "2", "--method", method
        )
        assert r.rc == 0 and r.records[0]["total_bytes_per_s"] > 0


def test_meta_under_asan(asan_engine: str, tmpfs: Path, mount_tmpfs) -> None:
    run = san_run(asan_engine)
    own = ["--threads", "3", "--files-per-thread", "700", "--dirs-per-thread", "3", "--size", "5000"]
    r = run("meta", "--dir", str(tmpfs / "own"), *own, "--phases", "create,walk,chmod")
    assert r.rc == 0 and [x["files"] for x in r.records] == [2100] * 3
    r = run("meta", "--dir", str(tmpfs / "own"), *own, "--phases", "walk,unlink")
    assert r.rc == 0 and list((tmpfs / "own").iterdir()) == []
    shared = ["--threads", "2", "--files-per-thread", "3000", "--shared-dir"]
    r = run("meta", "--dir", str(tmpfs / "sh"), *shared, "--phases", "create,walk,chmod,unlink")
    assert r.rc == 0 and [x["files"] for x in r.records] == [6000] * 4
    # error paths: EEXIST, ENOENT, a tree that does not match, ENOSPC
    r = run("meta", "--dir", str(tmpfs / "e"), *own, "--phases", "create,create")
    assert r.rc == 1 and r.records[-1]["errno_name"] == "EEXIST"
    r = run(
        "meta",
        "--dir",
        str(tmpfs / "e"),
        "--threads",
        "4",
        "--files-per-thread",
        "700",
        "--dirs-per-thread",
        "3",
        "--phases",
        "walk",
    )
    assert r.rc == 1 and r.records[0]["errno_name"] == "ENOENT"
    r = run(
        "meta", "--dir", str(tmpfs / "e"), "--threads", "3", "--files-per-thread", "9", "--phases", "unlink"
    )
    assert r.rc == 1 and r.records[0]["errno"] == 0
    full = mount_tmpfs("size=1m")
    r = run("meta", "--dir", str(full), *own, "--phases", "create")
    assert r.rc == 1 and r.records[0]["errno_name"] == "ENOSPC"


def test_smallfiles_under_asan(asan_engine: str, tmpfs: Path, mount_tmpfs) -> None:
    run = san_run(asan_engine)
    r = run(
        "smallfiles", "--dir", str(tmpfs / "a"), "--threads", "2", "--files", "3000", "--files-per-dir", "700"
    )
    assert r.rc == 0 and r.records[0]["files"] == 3000
    assert len(tree(tmpfs / "a")[0]) == 3000
    # time-based: a quiet machine makes ~300k files/s, a page each; room for several seconds
    roomy = mount_tmpfs("size=8g")
    r = run("smallfiles", "--dir", str(roomy / "b"), "--threads", "2", "--seconds", "1.2", "--size", "100")
    assert r.rc == 0 and len(r.records[0]["per_second"]) == 2
    full = mount_tmpfs("size=1m")
    r = run("smallfiles", "--dir", str(full), "--threads", "2", "--seconds", "10")
    assert r.rc == 1 and r.records[0]["status"] == "filled"


def test_bad_arguments_under_asan(asan_engine: str) -> None:
    run = san_run(asan_engine)
    r = run(
        "meta", "--dir", "/nonexistent", "--threads", "1", "--files-per-thread", "1", "--phases", "walk,bogus"
    )
    assert r.rc == 2


def test_stream_under_asan(asan_engine: str, tmpfs: Path, scratch: Path, mount_tmpfs) -> None:
    run = san_run(asan_engine)
    lst = scratch / "files.list"
    lst.write_text("".join(f"{j} {scratch}/j{j}.f{k}\n" for j in range(2) for k in range(3)))
    for mode in ("buffered", "uncached", "direct"):
        for rw in ("write", "read"):
            r = run(
                "stream",
                "--rw",
                rw,
                "--mode",
                mode,
                "--bs",
                "64K",
                "--file-size",
                "1M",
                "--files-from",
                str(lst),
                "--end-fsync",
                "--log-ms",
                "1",
            )
            assert r.rc == 0 and r.records[0]["bytes"] == 6 << 20, r.stdout
    # a buffer 4095 bytes past a page: the allocation covers the block beyond it
    for rw in ("write", "read"):
        r = run(
            "stream", "--rw", rw, "--mode", "buffered", "--bs", "64K", "--file-size", "1M",
            "--files-from", str(lst), "--buf-offset", "4095",
        )  # fmt: skip
        assert r.rc == 0 and r.records[0]["bytes"] == 6 << 20, r.stdout
    # error paths: EOPNOTSUPP on tmpfs, ENOSPC, a short file, a missing list, a bad list
    tl = tmpfs / "files.list"
    tl.write_text(f"0 {tmpfs}/a\n1 {tmpfs}/b\n")
    r = run(
        "stream",
        "--rw",
        "write",
        "--mode",
        "uncached",
        "--bs",
        "4K",
        "--file-size",
        "8K",
        "--files-from",
        str(tl),
    )
    assert r.rc == 1 and r.records[0]["errno_name"] == "EOPNOTSUPP"
    full = mount_tmpfs("size=1m")
    fl = scratch / "full.list"
    fl.write_text(f"0 {full}/a\n1 {full}/b\n")
    r = run(
        "stream",
        "--rw",
        "write",
        "--mode",
        "buffered",
        "--bs",
        "64K",
        "--file-size",
        "1M",
        "--files-from",
        str(fl),
        "--log-ms",
        "1",
    )
    assert r.rc == 1 and r.records[0]["status"] == "filled"
    r = run(
        "stream",
        "--rw",
        "read",
        "--mode",
        "buffered",
        "--bs",
        "64K",
        "--file-size",
        "2M",
        "--files-from",
        str(lst),
    )
    assert r.rc == 1 and r.records[0]["errno"] == 0
    r = run(
        "stream",
        "--rw",
        "read",
        "--mode",
        "buffered",
        "--bs",
        "64K",
        "--file-size",
        "2M",
        "--files-from",
        str(scratch / "none"),
    )
    assert r.rc == 1 and r.records[0]["errno_name"] == "ENOENT"
    (scratch / "bad.list").write_text("0 /x\n3 /y\n")
    r = run(
        "stream",
        "--rw",
        "read",
        "--mode",
        "buffered",
        "--bs",
        "64K",
        "--file-size",
        "2M",
        "--files-from",
        str(scratch / "bad.list"),
    )
    assert r.rc == 2
