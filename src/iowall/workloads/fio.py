"""fio as iowall's I/O generator: job files built from parameters, JSON output parsed into
metrics, fio's own JSON kept verbatim with the run."""

from __future__ import annotations

import glob
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError, WorkloadError
from ..model import Artifact, Metric, Series
from ..proc import run, run_child

#: Oldest fio whose JSON carries everything parsed here (bw_bytes, job_runtime, io_uring).
MIN_FIO = (3, 16)
DIRECTIONS = ("read", "write", "trim")
#: fio's averaging window for the bandwidth logs, ms: fine enough to split a sub-second
#: buffered write into its copy and end_fsync phases (analysis/phases.py).
BW_LOG_MS = 100
#: The bandwidth logs' name, relative to the directory fio runs in (``iowall_bw.N.log``).
BW_LOG_PREFIX = "iowall"


def fio_version() -> tuple[int, ...]:
    """The installed fio's version, or a UserError saying how to install or upgrade it."""
    if shutil.which("fio") is None:
        raise UserError("fio not found: install it with 'apt-get install fio' (or run 'make setup')")
    out = run(["fio", "--version"]).stdout.strip()
    m = re.search(r"(\d+)\.(\d+)", out)
    if not m:
        raise UserError(f"cannot read fio's version from {out!r}")
    ver = (int(m.group(1)), int(m.group(2)))
    if ver < MIN_FIO:
        raise UserError(f"fio {out} is too old: iowall needs fio >= "
                        f"{'.'.join(map(str, MIN_FIO))} (apt-get install fio)")
    return ver


@dataclass(frozen=True)
class JobSection:
    """One ``[name]`` section of a job file: its own options on top of [global]."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobFile:
    """A whole fio job file: global options and job sections, rendered deterministically."""

    global_options: Mapping[str, Any]
    sections: Sequence[JobSection]

    def render(self) -> str:
        """The text fio reads."""
        lines = ["[global]"] + [_opt(k, v) for k, v in self.global_options.items()]
        for s in self.sections:
            lines += ["", f"[{s.name}]"] + [_opt(k, v) for k, v in s.options.items()]
        return "\n".join(lines) + "\n"


def _opt(k: str, v: Any) -> str:
    if v is True:
        return k
    if isinstance(v, (list, tuple)):
        v = ":".join(str(x) for x in v)
    return f"{k}={v}"


@dataclass(frozen=True)
class FioResult:
    """fio's parsed JSON, the job file it ran, and the metrics iowall derives from them."""

    raw: Mapping[str, Any]
    jobfile: str
    metrics: tuple[Metric, ...]
    stderr: str = ""
    #: read_bw / write_bw / trim_bw from fio's bandwidth logs, all jobs summed (B/s).
    series: tuple[Series, ...] = ()

    def artifacts(self) -> tuple[Artifact, ...]:
        """fio's JSON and the job file, kept verbatim with the run."""
        return (Artifact("fio.json", "application/json", json.dumps(self.raw)),
                Artifact("job.fio", "text/plain", self.jobfile))


def with_bw_logs(job: JobFile | str, bw_log_ms: int) -> str:
    """The text of ``job`` with its bandwidth-log options written in it (a ``[global]``
    section ahead of a user's text): every job logs its bandwidth averaged over ``bw_log_ms``
    (0: no log) to ``BW_LOG_PREFIX_bw.N.log`` in the directory fio runs in."""
    logs = {"write_bw_log": BW_LOG_PREFIX, "log_avg_msec": bw_log_ms,
            "log_unix_epoch": 1} if bw_log_ms > 0 else {}
    if isinstance(job, JobFile):
        return JobFile({**job.global_options, **logs}, job.sections).render()
    if not logs:
        return job
    return JobFile(logs, ()).render() + "\n" + job


def run_fio(job: JobFile | str, *, timeout: float | None = None,
            bw_log_ms: int = BW_LOG_MS) -> FioResult:
    """Run fio on a job file (ours or a user's text) with JSON output; parse it into metrics.

    fio writes its JSON to a file (``--output``) so that warnings on stdout cannot corrupt it.
    Every job also writes a bandwidth log averaged over ``bw_log_ms`` (0: none), asked for in
    the job file itself (``with_bw_logs``), which fio reads in a scratch directory where the
    logs land; the logs become the result's series. The job file kept with the run is the
    one fio ran: ``fio job.fio`` in any directory reproduces the point (output format aside).
    """
    text = with_bw_logs(job, bw_log_ms)
    with tempfile.TemporaryDirectory(prefix="iowall-fio-") as tmp:
        jf = os.path.join(tmp, "job.fio")
        out = os.path.join(tmp, "out.json")
        with open(jf, "w") as f:
            f.write(text)
        launched_ms = time.time() * 1000.0
        res = run_child(["fio", "--output-format=json", f"--output={out}", jf], cwd=tmp,
                        timeout=timeout)
        try:
            with open(out) as f:
                body = f.read()
        except OSError:
            body = ""
        logs = _read_logs(os.path.join(tmp, BW_LOG_PREFIX)) if bw_log_ms > 0 else []
    raw = _parse_json(body)
    err = (res.stderr or res.stdout).strip().splitlines()
    detail = next((e for e in err if "error" in e.lower() or "fio:" in e), err[-1] if err else "")
    if raw is None:
        raise WorkloadError(f"fio failed (exit {res.returncode}): {detail}")
    series = bw_series(logs, interval_ms=bw_log_ms, origin_ms=launched_ms) if logs else ()
    result = FioResult(raw, text, tuple(parse_metrics(raw)), res.stderr, series)
    if res.returncode != 0:
        raise FioFailure(f"fio failed (exit {res.returncode}): {detail}", result)
    return result


class FioFailure(WorkloadError):
    """fio exited non-zero but left JSON (e.g. ENOSPC): the partial result travels with it."""

    def __init__(self, message: str, result: FioResult) -> None:
        super().__init__(message)
        self.result = result


def _read_logs(prefix: str) -> list[str]:
    """The text of every job's bandwidth log (``PREFIX_bw.N.log``, or one shared log)."""
    out = []
    for path in sorted(glob.glob(f"{glob.escape(prefix)}_bw*.log")):
        try:
            with open(path) as f:
                out.append(f.read())
        except OSError:
            continue
    return out


def bw_series(logs: Sequence[str], *, interval_ms: float, origin_ms: float) -> tuple[Series, ...]:
    """Series ``read_bw``/``write_bw``/``trim_bw`` (B/s) from fio bandwidth logs, one text per job.

    A log line is ``time_ms, KiB/s, direction (0 read, 1 write, 2 trim), bs, offset[, prio]``,
    each an average over ``interval_ms`` (``log_avg_msec``). Samples go to the nearest bucket
    on a grid of ``interval_ms`` anchored one interval before the first sample, so jobs that
    started a few ms apart share buckets; a job's samples in one bucket are averaged, the jobs
    summed. The last bucket is dropped when fewer jobs logged it than the one before (fio
    writes the window a job ends in for some jobs only). Times are seconds from
    ``origin_ms`` (same clock as the log: fio's ``log_unix_epoch``, or 0 for job-relative
    logs), at the bucket's end.
    """
    rows: list[tuple[int, float, int, float]] = []  # job, t_ms, direction, KiB/s
    for job, text in enumerate(logs):
        for line in text.splitlines():
            parts = line.split(",")
            if len(parts) < 3:
                continue
            try:
                t, v, d = float(parts[0]), float(parts[1]), int(parts[2])
            except ValueError:
                continue
            if 0 <= d < len(DIRECTIONS):
                rows.append((job, t, d, v))
    if not rows or interval_ms <= 0:
        return ()
    base = min(r[1] for r in rows) - interval_ms
    per_job: dict[tuple[int, int, int], list[float]] = {}
    for job, t, d, v in rows:
        k = math.floor((t - base) / interval_ms + 0.5)
        per_job.setdefault((d, k, job), []).append(v)
    total: dict[tuple[int, int], float] = {}
    jobs: dict[tuple[int, int], int] = {}
    for (d, k, _job), vals in per_job.items():
        total[(d, k)] = total.get((d, k), 0.0) + sum(vals) / len(vals) * 1024.0
        jobs[(d, k)] = jobs.get((d, k), 0) + 1
    out = []
    for d, name in enumerate(DIRECTIONS):
        pts = sorted((k, v) for (dd, k), v in total.items() if dd == d)
        if len(pts) >= 2 and jobs[(d, pts[-1][0])] < jobs[(d, pts[-2][0])]:
            pts.pop()  # fio logs the window a job ends in for some jobs only: not a drop
        if pts:
            out.append(Series("fio", f"{name}_bw", "B/s", tuple(
                (round((base + k * interval_ms - origin_ms) / 1000.0, 3), v) for k, v in pts)))
    return tuple(out)


def _parse_json(body: str) -> dict[str, Any] | None:
    """fio may print notes before the JSON object; take the object."""
    start = body.find("{")
    if start < 0:
        return None
    try:
        doc = json.loads(body[start:])
    except json.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def parse_metrics(raw: Mapping[str, Any]) -> list[Metric]:
    """Metrics per direction summed over fio's reported jobs (one per group with
    group_reporting): bandwidth and IOPS exactly as fio reports them, runtime, bytes,
    completion-latency percentiles, and fio's own CPU accounting."""
    jobs = list(raw.get("jobs", []))
    if not jobs:
        return []
    out: list[Metric] = []
    for d in DIRECTIONS:
        parts = [j[d] for j in jobs if d in j and j[d].get("io_bytes", 0) > 0]
        if not parts:
            continue
        out += [
            Metric(f"{d}_bw_bytes_per_s", float(sum(p["bw_bytes"] for p in parts)), "B/s"),
            Metric(f"{d}_iops", float(sum(p["iops"] for p in parts)), "IO/s"),
            Metric(f"{d}_io_bytes", float(sum(p["io_bytes"] for p in parts)), "B"),
            Metric(f"{d}_runtime_s", max(p["runtime"] for p in parts) / 1000.0, "s", "lower"),
        ]
        if len(parts) == 1:
            pct = parts[0].get("clat_ns", {}).get("percentile", {})
            for key, name in (("50.000000", "p50"), ("99.000000", "p99")):
                if key in pct:
                    out.append(Metric(f"{d}_clat_{name}_s", pct[key] / 1e9, "s", "lower"))
    out.append(Metric("fio_usr_cpu_pct", float(sum(j.get("usr_cpu", 0.0) for j in jobs)), "%",
                      "lower"))
    out.append(Metric("fio_sys_cpu_pct", float(sum(j.get("sys_cpu", 0.0) for j in jobs)), "%",
                      "lower"))
    errors = [j.get("error", 0) for j in jobs if j.get("error", 0)]
    if errors:
        out.append(Metric("fio_error", float(errors[0]), "errno", "lower"))
    return out


def distribute(files: Sequence[str], jobs: int) -> list[list[str]]:
    """Deal files round-robin to ``jobs`` jobs so that every job has at least one and the
    counts differ by at most one."""
    if jobs < 1:
        raise UserError("jobs must be at least 1")
    if len(files) < jobs:
        raise UserError(f"{len(files)} files cannot feed {jobs} jobs")
    out: list[list[str]] = [[] for _ in range(jobs)]
    for i, f in enumerate(files):
        out[i % jobs].append(f)
    return out
