"""fio's bandwidth logs become the run's read_bw/write_bw series: the parser on recorded log
text, and real fio runs on /dev/shm checked against fio's own reported bandwidth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.analysis.explain.phases import step_of, write_phases
from iowall.beds import BedSpec, provision
from iowall.measure.runner import Partial, Schedule
from iowall.model import Point
from iowall.probes import ProbeContext
from iowall.probes.diskstats import DiskstatsProbe
from iowall.recipes.tasks import fio_task
from iowall.store import Store
from iowall.workloads.fio import JobFile, JobSection, bw_series, parse_metrics, run_fio
from iowall.workloads.fio_series import series_step_ms
from tests.conftest import needs_root

KIB = 1024.0


# ------------------------------------------------------------------------------ parser


def test_jobs_summed_per_bucket_despite_jitter() -> None:
    # two jobs, ms timestamps a few ms apart (log_unix_epoch), fio 3.33's 5-column lines
    job1 = "10001000, 100, 1, 0, 0\n10002003, 110, 1, 0, 0\n10003001, 120, 1, 0, 0\n"
    job2 = "10001004, 200, 1, 0, 0\n10001998, 210, 1, 0, 0\n10003006, 220, 1, 0, 0, 0\n"
    (s,) = bw_series([job1, job2], interval_ms=1000, origin_ms=10000000)
    assert (s.probe, s.name, s.unit) == ("fio", "write_bw", "B/s")
    assert s.samples == ((1.0, 300 * KIB), (2.0, 320 * KIB), (3.0, 340 * KIB))


def test_ragged_last_window_is_dropped() -> None:
    # fio logged the window the jobs ended in for job 1 only: a half-sized sum is no drop
    job1 = "1000, 100, 1, 0, 0\n2000, 100, 1, 0, 0\n3000, 100, 1, 0, 0\n"
    job2 = "1001, 100, 1, 0, 0\n2001, 100, 1, 0, 0\n"
    (s,) = bw_series([job1, job2], interval_ms=1000, origin_ms=0)
    assert s.samples == ((1.0, 200 * KIB), (2.0, 200 * KIB))
    (one,) = bw_series([job1], interval_ms=1000, origin_ms=0)
    assert len(one.samples) == 3


def test_directions_and_bad_lines() -> None:
    log = (
        "1000, 50, 0, 0, 0\n1000, 70, 1, 0, 0\n2000, 60, 0, 0, 0\n"
        "garbage\n\n3000, 5, 9, 0, 0\n2000, 80, 2, 0, 0\n"
    )
    got = {s.name: s.samples for s in bw_series([log], interval_ms=1000, origin_ms=0)}
    assert got == {
        "read_bw": ((1.0, 50 * KIB), (2.0, 60 * KIB)),
        "write_bw": ((1.0, 70 * KIB),),
        "trim_bw": ((2.0, 80 * KIB),),
    }
    assert bw_series(["", "x, y\n"], interval_ms=1000, origin_ms=0) == ()


def test_two_samples_of_one_job_in_a_bucket_are_averaged_not_added() -> None:
    # a late and an early sample around one grid point: one job cannot double its rate
    log = "1000, 100, 1, 0, 0\n1950, 100, 1, 0, 0\n2040, 100, 1, 0, 0\n"
    (s,) = bw_series([log], interval_ms=1000, origin_ms=0)
    assert [v for _, v in s.samples] == [100 * KIB, 100 * KIB]


def test_late_group_keeps_its_time_and_the_gap_reads_zero() -> None:
    # a stonewalled second group starts after the first ends: its samples follow, not overlay,
    # and the window between them, which fio did not log (nothing completed), reads zero
    first = "5000, 100, 1, 0, 0\n6000, 100, 1, 0, 0\n"
    second = "7500, 300, 1, 0, 0\n8500, 300, 1, 0, 0\n"
    (s,) = bw_series([first, second], interval_ms=1000, origin_ms=4000)
    assert [v / KIB for _, v in s.samples] == [100, 100, 0, 300, 300]
    assert [t for t, _ in s.samples] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_fine_log_resampled_and_padded_to_the_end() -> None:
    # 10 ms windows, 25 of them at 100 KiB/s then 5 at 200: 50 ms steps average 5 windows;
    # the last step only partly covered is averaged over what it covers; then zeros to the end
    log = "".join(f"{1000 + 10 * i}, {100 if i < 25 else 200}, 1, 0, 0\n" for i in range(32))
    (s,) = bw_series([log], interval_ms=10, origin_ms=990, step_ms=50, end_ms=1500)
    vals = [v / KIB for _, v in s.samples]
    times = [t for t, _ in s.samples]
    assert vals[:5] == [100] * 5 and vals[5] == 200 and vals[6] == 200
    assert times[:7] == [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.32]
    assert vals[7:] == [0.0] * (len(vals) - 7)
    assert times[-1] == pytest.approx(0.51, abs=0.025)  # the step holding the end


def test_series_step_gives_twenty_points_at_most_100ms_apart() -> None:
    assert series_step_ms(800, 10) == 40
    assert series_step_ms(60_000, 10) == 100
    assert series_step_ms(100, 10) == 10


# ------------------------------------------------------------------------------ real fio


@pytest.fixture
def shm_dir() -> Iterator[str]:
    """A scratch directory on tmpfs (/dev/shm), removed afterwards. (Not ``no_leftovers``:
    it compares machine-wide state, which other suites running at once change.)"""
    path = "/dev/shm/iowall-fio-series-test"
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
    assert not os.path.exists(path)


RATE_MIB = 100


def write_job(directory: str, runtime: int, jobs: int = 2) -> JobFile:
    """Rate-limited writers: their bandwidth is fio's limiter, not this busy 2-core box's CPU
    share, so a window fio did not log (the last one) cannot differ from the logged ones."""
    return JobFile(
        {
            "directory": directory,
            "rw": "write",
            "bs": "256k",
            "size": "64m",
            "ioengine": "psync",
            "time_based": 1,
            "runtime": runtime,
            "numjobs": jobs,
            "group_reporting": 1,
            "rate": f"{RATE_MIB}m",
        },
        [JobSection("w", {})],
    )


def test_real_fio_write_bw_series_matches_reported_bandwidth(shm_dir: str) -> None:
    res = run_fio(write_job(shm_dir, runtime=4), bw_log_ms=1000)
    reported = next(m.value for m in res.metrics if m.name == "write_bw_bytes_per_s")
    assert reported == pytest.approx(2 * RATE_MIB * 2**20, rel=0.02)
    (s,) = [x for x in res.series if x.name == "write_bw"]
    assert (s.probe, s.unit) == ("fio", "B/s")
    assert not [x for x in res.series if x.name == "read_bw"]
    assert len(s.samples) >= 3
    times = [t for t, _ in s.samples]
    assert all(0 < t < 10 for t in times) and times == sorted(times)
    assert all(b - a == pytest.approx(1.0, abs=0.1) for a, b in zip(times, times[1:], strict=False))
    mean = sum(v for _, v in s.samples) / len(s.samples)
    assert mean == pytest.approx(reported, rel=0.15)
    # both jobs summed in every bucket, KiB/s read as 1024 B/s (1000 would be 2.4% off)
    assert [v for _, v in s.samples] == pytest.approx([2 * RATE_MIB * 2**20] * len(s.samples), rel=0.015)


def test_series_join_the_task_outcome_and_can_be_switched_off(shm_dir: str) -> None:
    task = fio_task(Point("test", {}), lambda: write_job(shm_dir, runtime=2, jobs=1), title="w")
    out = task.execute(Partial())
    assert [x.name for x in out.series] == ["write_bw"] and out.series[0].samples
    assert run_fio(write_job(shm_dir, runtime=1, jobs=1), bw_log_ms=0).series == ()


def test_stored_job_file_is_what_fio_ran_and_reproduces_the_point(shm_dir: str, tmp_path: Path) -> None:
    res = run_fio(write_job(shm_dir, runtime=2))
    (stored,) = [a.body for a in res.artifacts() if a.name == "job.fio"]
    assert stored == res.jobfile and "write_bw_log=" in stored and "log_avg_msec=" in stored
    # `fio job.fio` as a user runs it from the stored file: same point, same logs
    (tmp_path / "job.fio").write_text(stored)
    cp = subprocess.run(
        ["fio", "--output-format=json", "job.fio"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert cp.returncode == 0, cp.stderr
    again = parse_metrics(json.loads(cp.stdout[cp.stdout.find("{") :]))
    bw = next(m.value for m in again if m.name == "write_bw_bytes_per_s")
    assert bw == pytest.approx(2 * RATE_MIB * 2**20, rel=0.02)
    logs = sorted(p.name for p in tmp_path.glob("*_bw*.log"))
    assert len(logs) == 2, logs  # one bandwidth log per job, as the run had
    # a user's job text gets the same options, ahead of its own sections
    text = (
        "[w]\n"
        + "\n".join(
            f"{k}={v}"
            for k, v in {
                "directory": shm_dir,
                "rw": "write",
                "bs": "256k",
                "size": "8m",
                "ioengine": "psync",
                "time_based": 1,
                "runtime": 2,
                "rate": "50m",
            }.items()
        )
        + "\n"
    )
    user = run_fio(text)
    assert user.jobfile.endswith(text) and user.jobfile.startswith("[global]\nwrite_bw_log=")
    assert [s.name for s in user.series] == ["write_bw"]


# ------------------------------------------------------------------------------ on a loop bed


def onset(samples: tuple[tuple[float, float], ...]) -> float:
    """End time of the first sample at a fifth of the series' peak or more."""
    peak = max(v for _, v in samples)
    return next(t for t, v in samples if v >= 0.2 * peak)


@needs_root
def test_fio_and_diskstats_share_one_time_axis(db_url: str) -> None:
    # a direct write on a loop device, started 1 s after the probes (as a cache drop that
    # syncs dirty pages delays it): fio's series and the device's start together
    interval = 0.25
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=512 << 20) as bed:
        job = JobFile(
            {
                "directory": bed.path,
                "rw": "write",
                "bs": "1M",
                "size": "256m",
                "direct": 1,
                "ioengine": "psync",
                "time_based": 1,
                "runtime": 2,
                "rate": "200m",
            },
            [JobSection("w", {})],
        )
        sched = Schedule(
            store=Store(db_url),
            label="t",
            env=dict,
            bed=dict,
            probes=[DiskstatsProbe],
            probe_ctx=ProbeContext(interval_s=interval, devices=bed.devices, devnos=(bed.devno,)),
        )
        task = fio_task(Point("t", {}), lambda: job, title="w", prepare=lambda: time.sleep(1.0))
        (run,) = sched.execute([task], 1)
    fio = next(s for s in run.series if s.probe == "fio" and s.name == "write_bw")
    disk = next(
        s for s in run.series if s.probe == "diskstats" and s.name == f"{bed.devices[0]}_write_bytes_per_s"
    )
    assert abs(onset(fio.samples) - onset(disk.samples)) <= interval, (fio, disk)
    # every point of the series at most 100 ms apart, at least 20 of them
    assert len(fio.samples) >= 20 and step_of(fio.samples) <= 0.1


@needs_root
def test_end_fsync_tail_reads_zero_to_the_end(db_url: str) -> None:
    # long enough a copy that fio logs it (fio's averaged log misses its first ~0.1 s)
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=3 << 30) as bed:
        job = JobFile(
            {
                "directory": bed.path,
                "rw": "write",
                "bs": "1M",
                "size": "2g",
                "ioengine": "psync",
                "end_fsync": 1,
            },
            [JobSection("w", {})],
        )
        res = run_fio(job)
    (s,) = [x for x in res.series if x.name == "write_bw"]
    m = {x.name: x.value for x in res.metrics}
    assert s.samples[-1][1] == 0.0
    ph = write_phases(s.samples, total_bytes=m["write_io_bytes"], runtime_s=m["write_runtime_s"])
    assert ph is not None and 0 < ph.copy_s < ph.runtime_s
    # the writeback phase is the zero tail: from the last step in which fio logged a write
    # (a slow copy tail under 5% of the peak carried 9% of the bytes once: it is copy)
    last_moving = max(t for t, v in s.samples if v > 0)
    zeros = [t for t, v in s.samples if t > last_moving]
    assert zeros and ph.writeback_s == pytest.approx(zeros[-1] - last_moving, abs=ph.resolution_s)
    # the copy phase carries the bytes fio logged: at most a step's worth is missing
    step = ph.resolution_s
    logged = sum(v * step for _, v in s.samples)
    assert logged <= 1.05 * m["write_io_bytes"]
    assert len(s.samples) >= 20 and step_of(s.samples) <= 0.1
