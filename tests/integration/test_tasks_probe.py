"""The ``tasks`` probe on the real kernel: the workload, the bed's loop worker and a neighbour
that spins on every CPU (started by the test, outside iowall's process tree) are told apart,
and the classes account for at least 95% of the CPU time /proc/stat counted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from iowall.analysis.explain.run import explain
from iowall.beds import Bed, BedSpec, provision
from iowall.model import Point, Run
from iowall.probes import ProbeContext, ProbeSet
from iowall.probes.tasks import TasksProbe
from iowall.workloads.fio import JobFile, JobSection, run_fio

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices)"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]
SPIN = "import ctypes, sys; ctypes.CDLL(None).prctl(15, b'iowall-spin', 0, 0, 0)\nwhile True: pass\n"


@pytest.fixture
def bed() -> Iterator[Bed]:
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=2 << 30) as b:
        yield b


@pytest.fixture
def spinners() -> Iterator[None]:
    """One busy loop per CPU, daemonised (setsid -f): their parent is not this process."""
    for _ in range(os.cpu_count() or 1):
        subprocess.run(["setsid", "-f", sys.executable, "-c", SPIN, "iowall-spin-marker"], check=True)
    time.sleep(0.3)
    try:
        yield
    finally:
        subprocess.run(["pkill", "-f", "iowall-spin-marker"], check=False)


def write(bed: Bed, seconds: int = 4) -> None:
    run_fio(
        JobFile(
            {
                "directory": bed.path,
                "rw": "write",
                "bs": "1M",
                "size": "512M",
                "numjobs": 2,
                "ioengine": "psync",
                "time_based": 1,
                "runtime": seconds,
                "group_reporting": 1,
            },
            [JobSection("w", {})],
        )
    )


def probed(bed: Bed) -> Run:
    ctx = ProbeContext(
        devices=tuple(bed.devices), devnos=(bed.devno,) if bed.devno else (), workdir=bed.path, interval_s=0.5
    )
    ps = ProbeSet([TasksProbe], ctx)
    ps.start()
    try:
        write(bed)
    finally:
        (res,) = ps.stop()
    return Run(
        point=Point("t", {"kind": "fio", "rw": "write"}),
        label="t",
        status="ok",
        started_at=0.0,
        finished_at=4.0,
        metrics=res.metrics,
        series=res.series,
        artifacts=res.artifacts,
        bed=dict(bed.facts),
        id=1,
    )


def test_classes_cover_the_cpu_time(bed: Bed) -> None:
    run = probed(bed)
    m = {x.name: x.value for x in run.metrics}
    assert m["tasks_busy_cpu_s"] > 1.0
    assert m["tasks_unattributed_share"] <= 0.05, m
    # fio copies into the page cache; the bed's loop worker writes its backing file
    assert m["tasks_workload_share"] > 0.15 and m["tasks_loop_share"] > 0.15, m
    # of the CPU time this machine's own work took (other processes may share the machine)
    own = 1.0 - m.get("tasks_neighbours_share", 0.0) - m.get("tasks_steal_share", 0.0)
    assert m["tasks_workload_share"] + m["tasks_loop_share"] > 0.6 * own, m
    assert {s.name for s in run.series} >= {"workload_cpus"}


def test_a_spinning_neighbour_is_named_with_its_share(bed: Bed, spinners: None) -> None:
    run = probed(bed)
    m = {x.name: x.value for x in run.metrics}
    assert m["tasks_neighbours_share"] >= 0.25, m
    assert m["tasks_unattributed_share"] <= 0.05, m
    e = explain(run, [run])
    neigh = next(v for v in e.verdicts if v.rule == "neighbours")
    assert "iowall-spin" in neigh.sentence, neigh.sentence
    assert e.attribution[0].cls in ("neighbours", "workload")
