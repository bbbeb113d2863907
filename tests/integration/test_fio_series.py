"""fio's bandwidth logs become the run's read_bw/write_bw series: the parser on recorded log
text, and real fio runs on /dev/shm checked against fio's own reported bandwidth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.model import Point
from iowall.recipes.tasks import fio_task
from iowall.runner import Partial
from iowall.workloads.fio import JobFile, JobSection, bw_series, parse_metrics, run_fio

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
    log = ("1000, 50, 0, 0, 0\n1000, 70, 1, 0, 0\n2000, 60, 0, 0, 0\n"
           "garbage\n\n3000, 5, 9, 0, 0\n2000, 80, 2, 0, 0\n")
    got = {s.name: s.samples for s in bw_series([log], interval_ms=1000, origin_ms=0)}
    assert got == {"read_bw": ((1.0, 50 * KIB), (2.0, 60 * KIB)),
                   "write_bw": ((1.0, 70 * KIB),),
                   "trim_bw": ((2.0, 80 * KIB),)}
    assert bw_series(["", "x, y\n"], interval_ms=1000, origin_ms=0) == ()


def test_two_samples_of_one_job_in_a_bucket_are_averaged_not_added() -> None:
    # a late and an early sample around one grid point: one job cannot double its rate
    log = "1000, 100, 1, 0, 0\n1950, 100, 1, 0, 0\n2040, 100, 1, 0, 0\n"
    (s,) = bw_series([log], interval_ms=1000, origin_ms=0)
    assert [v for _, v in s.samples] == [100 * KIB, 100 * KIB]


def test_late_group_keeps_its_time() -> None:
    # a stonewalled second group starts after the first ends: its samples follow, not overlay
    first = "5000, 100, 1, 0, 0\n6000, 100, 1, 0, 0\n"
    second = "7500, 300, 1, 0, 0\n8500, 300, 1, 0, 0\n"
    (s,) = bw_series([first, second], interval_ms=1000, origin_ms=4000)
    assert [v / KIB for _, v in s.samples] == [100, 100, 300, 300]
    assert [t for t, _ in s.samples] == sorted(t for t, _ in s.samples)
    assert s.samples[0][0] == 1.0 and s.samples[-1][0] > 4.0


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
    return JobFile({"directory": directory, "rw": "write", "bs": "256k", "size": "64m",
                    "ioengine": "psync", "time_based": 1, "runtime": runtime,
                    "numjobs": jobs, "group_reporting": 1, "rate": f"{RATE_MIB}m"},
                   [JobSection("w", {})])


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
    assert [v for _, v in s.samples] == pytest.approx([2 * RATE_MIB * 2**20] * len(s.samples),
                                                      rel=0.015)


def test_series_join_the_task_outcome_and_can_be_switched_off(shm_dir: str) -> None:
    task = fio_task(Point("test", {}), lambda: write_job(shm_dir, runtime=2, jobs=1),
                    title="w")
    out = task.execute(Partial())
    assert [x.name for x in out.series] == ["write_bw"] and out.series[0].samples
    assert run_fio(write_job(shm_dir, runtime=1, jobs=1), bw_log_ms=0).series == ()


def test_stored_job_file_is_what_fio_ran_and_reproduces_the_point(shm_dir: str,
                                                                   tmp_path: Path) -> None:
    res = run_fio(write_job(shm_dir, runtime=2))
    (stored,) = [a.body for a in res.artifacts() if a.name == "job.fio"]
    assert stored == res.jobfile and "write_bw_log=" in stored and "log_avg_msec=" in stored
    # `fio job.fio` as a user runs it from the stored file: same point, same logs
    (tmp_path / "job.fio").write_text(stored)
    cp = subprocess.run(["fio", "--output-format=json", "job.fio"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    again = parse_metrics(json.loads(cp.stdout[cp.stdout.find("{"):]))
    bw = next(m.value for m in again if m.name == "write_bw_bytes_per_s")
    assert bw == pytest.approx(2 * RATE_MIB * 2**20, rel=0.02)
    logs = sorted(p.name for p in tmp_path.glob("*_bw*.log"))
    assert len(logs) == 2, logs  # one bandwidth log per job, as the run had
    # a user's job text gets the same options, ahead of its own sections
    text = "[w]\n" + "\n".join(f"{k}={v}" for k, v in {
        "directory": shm_dir, "rw": "write", "bs": "256k", "size": "8m",
        "ioengine": "psync", "time_based": 1, "runtime": 2, "rate": "50m"}.items()) + "\n"
    user = run_fio(text)
    assert user.jobfile.endswith(text) and user.jobfile.startswith("[global]\nwrite_bw_log=")
    assert [s.name for s in user.series] == ["write_bw"]
