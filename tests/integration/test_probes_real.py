"""Probes against the real kernel: a real ram bed (loop device + xfs), real fio, real perf.

Root only. Each test provisions its own small bed and leaves nothing behind: the bed is
torn down, vm.dirty_bytes/vm.dirty_ratio are restored, the ftrace instance is removed and
tracefs is unmounted again if it was not mounted before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import iowall
from iowall.beds import Bed, BedSpec, provision
from iowall.probes import ProbeContext, ProbeResult, ProbeSet, resolve, tracefs

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices, tracefs, perf)"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]

ENGINE = Path(iowall.__file__).parent / "_bin" / "iowall-engine"
NPROC = os.cpu_count() or 1


@pytest.fixture
def bed() -> Iterator[Bed]:
    # 4 GiB: two seconds of small files fill 1 GiB on a quiet machine (the engine then
    # stops with ENOSPC)
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=4 << 30) as b:
        yield b


@pytest.fixture
def clean_tracefs() -> Iterator[None]:
    """tracefs ends as it started (mounted or not) with no iowall instance left."""
    was_mounted = tracefs.mounted()
    yield
    assert tracefs.mounted() == was_mounted
    if was_mounted:
        left = list(Path(tracefs.TRACEFS, "instances").glob(f"iowall-{os.getpid()}-*"))
        assert left == []


@pytest.fixture
def small_dirty_limit() -> Iterator[int]:
    """vm.dirty_bytes = 32 MiB for the test; both dirty_bytes and dirty_ratio restored."""
    vm = Path("/proc/sys/vm")
    old_bytes, old_ratio = (vm / "dirty_bytes").read_text(), (vm / "dirty_ratio").read_text()
    try:
        (vm / "dirty_bytes").write_text(str(32 << 20))
        yield 32 << 20
    finally:
        # writing one of the pair zeroes the other: restore the one that was in force
        if int(old_bytes):
            (vm / "dirty_bytes").write_text(old_bytes)
        else:
            (vm / "dirty_ratio").write_text(old_ratio)
        assert (vm / "dirty_bytes").read_text() == old_bytes
        assert (vm / "dirty_ratio").read_text() == old_ratio


def ctx(bed: Bed, tmp_path: Path) -> ProbeContext:
    return ProbeContext(1.0, tuple(bed.devices), (bed.devno or "",), str(tmp_path))


def fio(directory: str, *opts: str) -> dict[str, Any]:
    argv = [
        "fio",
        "--name=t",
        f"--directory={directory}",
        "--rw=write",
        "--bs=1M",
        "--ioengine=psync",
        f"--numjobs={NPROC}",
        "--group_reporting",
        "--output-format=json",
        *opts,
    ]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    job: dict[str, Any] = json.loads(out.stdout)["jobs"][0]
    return job


def with_probes(spec: str, c: ProbeContext, work: Any) -> dict[str, ProbeResult]:
    ps = ProbeSet(resolve(spec), c)
    ps.start()
    try:
        work()
    finally:
        results = ps.stop()
    return {r.probe: r for r in results}


def metrics(r: ProbeResult) -> dict[str, float]:
    assert not r.skipped, r.skipped
    return {m.name: m.value for m in r.metrics}


def test_throttle_sees_pauses_under_a_small_dirty_limit(
    bed: Bed, tmp_path: Path, small_dirty_limit: int, clean_tracefs: None
) -> None:
    res = with_probes(
        "throttle,vmstat",
        ctx(bed, tmp_path),
        lambda: fio(bed.path, "--size=256M", "--time_based", "--runtime=3", "--end_fsync=1"),
    )
    m = metrics(res["throttle"])
    assert m["throttle_events"] > 0 and m["throttle_pause_s"] > 0
    assert m["throttle_calls"] >= m["throttle_events"]
    assert 1 <= m["throttle_tasks"] <= NPROC
    assert m["throttle_limit_bytes"] == small_dirty_limit
    assert m["throttle_lost_events"] == 0
    # ms, not jiffies: no task can be paused longer than the run
    assert m["throttle_task_pause_max_s"] < 10
    table = json.loads(next(a for a in res["throttle"].artifacts if a.name == "throttle_tasks.json").body)
    assert table[0]["comm"] == "fio" and table[0]["pause_s"] > 0
    vm = metrics(res["vmstat"])
    assert vm["vm_dirty_threshold_bytes"] < 1 << 30


def _small_files(directory: str, seconds: int) -> None:
    if ENGINE.exists():
        cp = subprocess.run(
            [
                str(ENGINE),
                "smallfiles",
                "--dir",
                directory,
                "--threads",
                str(NPROC),
                "--seconds",
                str(seconds),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cp.returncode == 0, cp.stderr
    else:  # the engine is not built: many 4 KiB files from threads
        stop = threading.Event()

        def writer(i: int) -> None:
            d = Path(directory, f"t{i}")
            d.mkdir()
            n, block = 0, b"x" * 4096
            while not stop.is_set():
                (d / f"f{n}").write_bytes(block)
                n += 1

        ts = [threading.Thread(target=writer, args=(i,)) for i in range(NPROC)]
        for t in ts:
            t.start()
        stop.wait(seconds)
        stop.set()
        for t in ts:
            t.join()
    os.sync()


def test_flusher_of_the_bed_device_gets_cpu_share(bed: Bed, tmp_path: Path) -> None:
    res = with_probes("flusher,diskstats", ctx(bed, tmp_path), lambda: _small_files(bed.path, 2))
    m = metrics(res["flusher"])
    assert m["flusher_cpu_s"] > 0 and m["flusher_cpu_share"] > 0
    assert m["flusher_workers"] >= 1
    (s,) = res["flusher"].series
    assert s.unit == "CPUs" and max(v for _, v in s.samples) > 0
    d = metrics(res["diskstats"])
    assert d["disk_write_ios"] > 100
    assert f"bdi: {bed.devno}" in res["flusher"].notes


def test_btrfs_bed_is_known_by_its_own_bdi() -> None:
    """btrfs writes back through its own bdi (``btrfs-N``), not the loop device's."""
    from iowall.probes.bdi import bdi_names

    with provision(BedSpec.parse("ram"), fs="btrfs", size_bytes=512 << 20) as b:
        names = bdi_names(b.devices, [b.devno or ""])
        assert names[0] == b.devno and names[1].startswith("btrfs-")
        assert Path("/sys/class/bdi", names[1]).exists()


@pytest.mark.skipif(shutil.which("perf") is None, reason="needs perf")
def test_locks_finds_a_contended_caller_with_a_stack(bed: Bed, tmp_path: Path, clean_tracefs: None) -> None:
    def contend() -> None:
        if ENGINE.exists():
            subprocess.run(
                [
                    str(ENGINE),
                    "meta",
                    "--dir",
                    bed.path,
                    "--threads",
                    "4",
                    "--files-per-thread",
                    "8000",
                    "--shared-dir",
                    "--phases",
                    "create,unlink",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
        else:

            def churn(i: int) -> None:
                for n in range(4000):
                    p = Path(bed.path, f"f{i}_{n}")
                    p.write_bytes(b"")
                    p.unlink()

            ts = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

    res = with_probes("locks", ctx(bed, tmp_path), contend)
    m = metrics(res["locks"])
    assert m["lock_callers"] >= 1 and m["lock_wait_total_s"] > 0
    rows = json.loads(next(a for a in res["locks"].artifacts if a.name == "lock_contention.json").body)
    assert rows[0]["stack"] and rows[0]["total_wait_s"] == m["lock_top_wait_s"]
    assert any(n.startswith("top caller: ") for n in res["locks"].notes)
    assert list(tmp_path.glob("*perf-lock*")) == []  # perf.data and its log are removed


def test_diskstats_bytes_match_fio_on_a_direct_write(bed: Bed, tmp_path: Path) -> None:
    job: dict[str, Any] = {}
    res = with_probes(
        "diskstats", ctx(bed, tmp_path), lambda: job.update(fio(bed.path, "--size=192M", "--direct=1"))
    )
    m = metrics(res["diskstats"])
    fio_bytes = job["write"]["io_bytes"]
    assert fio_bytes == NPROC * (192 << 20)
    assert m["disk_write_bytes"] == pytest.approx(fio_bytes, rel=0.02)
    assert 0 < m["disk_util"] <= 1
