"""The dirty threshold stored with a real buffered write is what /proc/vmstat showed during it.

Root only, under the suite's flock: a 1 GiB ram bed (torn down after), fio writing 384 MiB
through the page cache with the vmstat probe on, and an independent reader of /proc/vmstat in
a thread; the run goes through a private store and back before the threshold is computed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.analysis.explain.dirty import applied_threshold, applied_threshold_note
from iowall.beds import Bed, BedSpec, provision
from iowall.model import Point, Run
from iowall.probes import ProbeContext, ProbeSet, resolve
from iowall.store.db import Store

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices)"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]

PAGE = os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def bed(no_leftovers: None) -> Iterator[Bed]:
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=1 << 30) as b:
        yield b


def thresholds_now() -> int:
    """nr_dirty_threshold in bytes, parsed here rather than through iowall.machine.sysinfo."""
    for line in Path("/proc/vmstat").read_text().splitlines():
        name, value = line.split()
        if name == "nr_dirty_threshold":
            return int(value) * PAGE
    raise AssertionError("no nr_dirty_threshold in /proc/vmstat")


def test_stored_threshold_is_what_vmstat_showed(bed: Bed, tmp_path: Path, db_url: str) -> None:
    seen: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(thresholds_now())
            stop.wait(0.05)

    c = ProbeContext(0.25, tuple(bed.devices), (bed.devno or "",), str(tmp_path))
    ps = ProbeSet(resolve("vmstat"), c)
    ps.start()
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        subprocess.run(
            [
                "fio",
                "--name=t",
                f"--directory={bed.path}",
                "--rw=write",
                "--bs=1M",
                "--size=384M",
                "--ioengine=psync",
                "--end_fsync=1",
                "--output=/dev/null",
            ],
            check=True,
            timeout=120,
        )
    finally:
        stop.set()
        watcher.join()
        results = ps.stop()
    res = next(r for r in results if r.probe == "vmstat")
    run = Run(
        point=Point("test", {"kind": "fio", "rw": "write", "direct": 0}),
        label="dirty",
        status="ok",
        started_at=0.0,
        finished_at=1.0,
        metrics=res.metrics,
        series=res.series,
    )
    store = Store(db_url)
    rid = store.add_run(run)
    stored = store.get_run(rid)
    a = applied_threshold([stored])
    assert a is not None and a.threshold is not None and seen
    assert a.threshold.lo == pytest.approx(min(seen), rel=0.03)
    assert a.threshold.hi == pytest.approx(max(seen), rel=0.03)
    note = applied_threshold_note([stored])
    assert note is not None and "throttle probe did not run" in note
