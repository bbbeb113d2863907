"""fio as iowall's I/O generator: job files built from parameters, JSON output parsed into
metrics, fio's own JSON kept verbatim with the run."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..machine.journal import scratch_dir
from ..machine.proc import run, run_child
from ..model import Artifact, Metric, Series
from ..vocab.errors import UserError, WorkloadError
from ..vocab.units import plural
from .fio_metrics import DIRECTIONS, parse_metrics
from .fio_series import bw_series, series_step_ms

__all__ = [
    "DIRECTIONS",
    "BW_LOG_MS",
    "FioFailure",
    "FioResult",
    "JobFile",
    "JobSection",
    "bw_series",
    "distribute",
    "fio_version",
    "parse_metrics",
    "run_fio",
    "with_bw_logs",
]

#: Oldest fio whose JSON carries everything parsed here (bw_bytes, job_runtime, io_uring).
MIN_FIO = (3, 16)
#: fio's averaging window for the bandwidth logs, ms: fine, so that the series resampled from
#: it (``fio_series``: at least 20 points a run, at most 100 ms apart) are whole windows;
#: measured cost against 100 ms windows in docs/fio-series.md.
BW_LOG_MS = 10
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
        raise UserError(
            f"fio {out} is too old: iowall needs fio >= {'.'.join(map(str, MIN_FIO))} (apt-get install fio)"
        )
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
        return (
            Artifact("fio.json", "application/json", json.dumps(self.raw)),
            Artifact("job.fio", "text/plain", self.jobfile),
        )


def with_bw_logs(job: JobFile | str, bw_log_ms: int) -> str:
    """The text of ``job`` with its bandwidth-log options written in it (a ``[global]``
    section ahead of a user's text): every job logs its bandwidth averaged over ``bw_log_ms``
    (0: no log) to ``BW_LOG_PREFIX_bw.N.log`` in the directory fio runs in."""
    logs = (
        {"write_bw_log": BW_LOG_PREFIX, "log_avg_msec": bw_log_ms, "log_unix_epoch": 1}
        if bw_log_ms > 0
        else {}
    )
    if isinstance(job, JobFile):
        return JobFile({**job.global_options, **logs}, job.sections).render()
    if not logs:
        return job
    return JobFile(logs, ()).render() + "\n" + job


def run_fio(
    job: JobFile | str,
    *,
    timeout: float | None = None,
    bw_log_ms: int = BW_LOG_MS,
    origin_s: float | None = None,
) -> FioResult:
    """Run fio on a job file (ours or a user's text) with JSON output; parse it into metrics.

    fio writes its JSON to a file (``--output``) so that warnings on stdout cannot corrupt it.
    Every job also writes a bandwidth log averaged over ``bw_log_ms`` (0: none), asked for in
    the job file itself (``with_bw_logs``), which fio reads in a scratch directory where the
    logs land; the logs become the result's series. The job file kept with the run is the
    one fio ran: ``fio job.fio`` in any directory reproduces the point (output format aside).
    Series times are seconds from ``origin_s`` (wall clock: the probes' common start, so that
    fio's and the probes' series share one axis), or from fio's launch.
    """
    text = with_bw_logs(job, bw_log_ms)
    with scratch_dir("iowall-fio-") as tmp:
        jf = os.path.join(tmp, "job.fio")
        out = os.path.join(tmp, "out.json")
        with open(jf, "w") as f:
            f.write(text)
        launched_ms = time.time() * 1000.0
        res = run_child(["fio", "--output-format=json", f"--output={out}", jf], cwd=tmp, timeout=timeout)
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
    series = _series(raw, logs, bw_log_ms, launched_ms if origin_s is None else origin_s * 1e3)
    result = FioResult(raw, text, tuple(parse_metrics(raw)), res.stderr, series)
    if res.returncode != 0:
        raise FioFailure(f"fio failed (exit {res.returncode}): {detail}", result)
    return result


class FioFailure(WorkloadError):
    """fio exited non-zero but left JSON (e.g. ENOSPC): the partial result travels with it."""

    def __init__(self, message: str, result: FioResult) -> None:
        super().__init__(message)
        self.result = result


def _series(
    raw: Mapping[str, Any], logs: Sequence[str], log_ms: float, origin_ms: float
) -> tuple[Series, ...]:
    """The run's bandwidth series: resampled to at least 20 points over the run, padded with
    zeros up to the run's end (fio's ``timestamp_ms``: when it wrote its JSON, after the last
    job, end_fsync included)."""
    if not logs:
        return ()
    end = raw.get("timestamp_ms")
    end_ms = float(end) if isinstance(end, (int, float)) else None
    start = min(
        (
            float(x.split(",", 1)[0])
            for text in logs
            for x in text.splitlines()[:1]
            if x.split(",", 1)[0].strip().isdigit()
        ),
        default=None,
    )
    span = (end_ms - start) if end_ms is not None and start is not None else 0.0
    step = series_step_ms(span, log_ms) if span > 0 else log_ms
    return bw_series(logs, interval_ms=log_ms, origin_ms=origin_ms, step_ms=step, end_ms=end_ms)


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


def distribute(files: Sequence[str], jobs: int) -> list[list[str]]:
    """Deal files round-robin to ``jobs`` jobs so that every job has at least one and the
    counts differ by at most one."""
    if jobs < 1:
        raise UserError("jobs must be at least 1")
    if len(files) < jobs:
        raise UserError(f"{plural(len(files), 'file')} cannot feed {plural(jobs, 'job')}")
    out: list[list[str]] = [[] for _ in range(jobs)]
    for i, f in enumerate(files):
        out[i % jobs].append(f)
    return out
