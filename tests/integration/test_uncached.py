"""Uncached buffered I/O on real XFS on a loop device over RAM: what RWF_DONTCACHE leaves in
the page cache, the support checks, the old-flag fio detected, and the engine's buffered
stream agreeing with fio's on the same point."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.beds import Bed, BedSpec, provision
from iowall.machine.sysinfo import drop_caches, meminfo
from iowall.vocab.units import fio_size
from iowall.workloads.dontcache import (
    RWF_ATOMIC,
    dontcache_support,
    fio_dontcache_ok,
    fio_uncached_flag,
)
from iowall.workloads.fio import JobFile, JobSection, run_fio
from iowall.workloads.stream import StreamResult, StreamSpec, run_stream

from ..conftest import needs_root, reporting_held_off

MIB = 1 << 20
BS = 2 * MIB

pytestmark = needs_root


@pytest.fixture(scope="module")
def xfs() -> Iterator[Bed]:
    """XFS on a loop device over a zero-filled /dev/shm image (the ram bed), torn down after."""
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=2048 * MIB) as bed:
        yield bed


def names(d: str, jobs: int, files: int) -> tuple[tuple[str, ...], ...]:
    """fio's limits layout: ``j{j:03d}.f{k}`` per job in d."""
    return tuple(tuple(os.path.join(d, f"j{j:03d}.f{k}") for k in range(files)) for j in range(jobs))


def fresh(d: str) -> str:
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def file_cache() -> int:
    """Page cache of files, shmem left out: the bed's image is itself in /dev/shm, and mkfs's
    discard punched holes in it that the first writes to those blocks fill again."""
    m = meminfo()
    return m["Cached"] - m["Shmem"]


def stream(spec: StreamSpec) -> tuple[StreamResult, float]:
    """Run after a cache drop; the result and page-cache growth per byte moved."""
    assert drop_caches()
    before = file_cache()
    res = run_stream(spec)
    return res, (file_cache() - before) / res.record["bytes"]


def test_uncached_leaves_little_in_the_page_cache(xfs: Bed) -> None:
    # measured (2 jobs, 4 files of 128 MiB, 4 runs): uncached 0.0004-0.007 of the bytes,
    # buffered 1.00-1.04, writes and reads alike
    d = fresh(os.path.join(xfs.path, "cache"))
    files = names(d, 2, 4)
    growth = {}
    for rw in ("write", "read"):
        for mode in ("buffered", "uncached"):
            spec = StreamSpec(rw, mode, BS, 128 * MIB, files, end_fsync=rw == "write")
            res, growth[(rw, mode)] = stream(spec)
            assert res.record["bytes"] == 1024 * MIB
    assert growth[("write", "uncached")] <= 0.10, growth
    assert growth[("read", "uncached")] <= 0.10, growth
    assert growth[("write", "buffered")] > 0.5, growth
    assert growth[("read", "buffered")] > 0.5, growth
    shutil.rmtree(d)


def test_dontcache_support(xfs: Bed) -> None:
    assert dontcache_support(xfs.path) == (
        True,
        "xfs supports RWF_DONTCACHE (a 4 KiB write and read with flag 0x80 worked)",
    )
    assert not any(n.startswith(".iowall-dontcache-") for n in os.listdir(xfs.path))
    tmp = tempfile.mkdtemp(prefix="iowall-dontcache-", dir="/dev/shm")
    try:
        ok, why = dontcache_support(tmp)
        assert os.listdir(tmp) == []
    finally:
        os.rmdir(tmp)
    assert not ok and why == "tmpfs does not support RWF_DONTCACHE (EOPNOTSUPP)"


def test_old_flag_fio_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # observed here, not read from a cache
    version = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    flag = fio_uncached_flag()
    assert (tmp_path / "iowall" / "fio-uncached.json").is_file()
    ok, why = fio_dontcache_ok()
    if version == "fio-3.33":  # Debian's: uncached=1 is the pre-6.14 flag
        assert flag == RWF_ATOMIC
        assert why == (
            "fio-3.33's uncached=1 passes 0x40 (RWF_ATOMIC since 6.11), not "
            "RWF_DONTCACHE 0x80: the engine generates the uncached stream"
        )
    assert ok == (flag == 0x80)


def fio_write(d: str, jobs: int, files: int, fsize: int) -> float:
    """fio's buffered write of the same layout with pwritev2 (pvsync2), end_fsync=1."""
    job = JobFile(
        {
            "ioengine": "pvsync2",
            "bs": fio_size(BS),
            "rw": "write",
            "direct": 0,
            "group_reporting": 1,
            "directory": d,
            "fallocate": "none",
            "create_on_open": 1,
            "end_fsync": 1,
        },
        [
            JobSection(
                f"w{j}",
                {
                    "filename": [f"j{j:03d}.f{k}" for k in range(files)],
                    "filesize": fio_size(fsize),
                    "size": fio_size(fsize * files),
                },
            )
            for j in range(jobs)
        ],
    )
    assert drop_caches()
    res = run_fio(job, bw_log_ms=0)
    return next(m.value for m in res.metrics if m.name == "write_bw_bytes_per_s")


@pytest.fixture
def backed() -> Iterator[None]:
    """Page cache from memory the host has backed: free page reporting held off and 6 GiB
    touched first (a run makes 520 MiB of page cache; the bed's image is 2 GiB). Without
    it, on a VM up a few minutes, single runs fell to 0.5 GB/s from 4-5 at random, fio's and
    the engine's alike, and the median engine/fio ratio of 5 rounds spread 0.84-1.69 over 4
    sets; with it, 1.04-1.24 over 8."""
    with reporting_held_off(6 << 30):
        yield


def test_engine_buffered_write_agrees_with_fio(xfs: Bed, backed: None) -> None:
    # Same point both ways: 2 jobs x 10 files x 26 MiB, bs 2M, end fsync, pwritev2 on both
    # sides (fio's io_uring buffered write is 2-4x slower here: another path), interleaved.
    # Measured on backed memory, 12 sets of 5 rounds: median engine / median fio 1.01-1.24,
    # best engine / best fio 0.94-1.32: the engine a little faster on a 0.1 s write. On
    # 2026-11-30 the medians' ratio read 1.28-1.49 in four sets of 7 (the first six rounds
    # each printed: fio 1.27-2.26 GB/s, the engine 1.61-2.80, slowdowns hitting fio's short
    # runs more; the best of those six 1.05-1.24): the median's bound is 1.6, the best's
    # (the sharper check) stays 1.45.
    d = os.path.join(xfs.path, "agree")
    jobs, files, fsize = 2, 10, 26 * MIB
    fio_bw, eng_bw = [], []
    for _ in range(7):
        fio_bw.append(fio_write(fresh(d), jobs, files, fsize))
        res, _ = stream(
            StreamSpec("write", "buffered", BS, fsize, names(fresh(d), jobs, files), end_fsync=True)
        )
        eng_bw.append(res.record["bytes_per_s"])
    median = statistics.median(eng_bw) / statistics.median(fio_bw)
    best = max(eng_bw) / max(fio_bw)
    assert 1 / 1.6 <= median <= 1.6, (median, fio_bw, eng_bw)
    assert 1 / 1.45 <= best <= 1.45, (best, fio_bw, eng_bw)
    shutil.rmtree(d)
