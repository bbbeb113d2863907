"""fio as iowall's I/O generator: job files built from parameters, JSON output parsed into
metrics, fio's own JSON kept verbatim with the run."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError, WorkloadError
from ..model import Artifact, Metric
from ..proc import run, run_child

#: Oldest fio whose JSON carries everything parsed here (bw_bytes, job_runtime, io_uring).
MIN_FIO = (3, 16)
DIRECTIONS = ("read", "write", "trim")


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

    def artifacts(self) -> tuple[Artifact, ...]:
        """fio's JSON and the job file, kept verbatim with the run."""
        return (Artifact("fio.json", "application/json", json.dumps(self.raw)),
                Artifact("job.fio", "text/plain", self.jobfile))


def run_fio(job: JobFile | str, *, timeout: float | None = None) -> FioResult:
    """Run fio on a job file (ours or a user's text) with JSON output; parse it into metrics.

    fio writes its JSON to a file (``--output``) so that warnings on stdout cannot corrupt it.
    """
    text = job.render() if isinstance(job, JobFile) else job
    with tempfile.TemporaryDirectory(prefix="iowall-fio-") as tmp:
        jf = os.path.join(tmp, "job.fio")
        out = os.path.join(tmp, "out.json")
        with open(jf, "w") as f:
            f.write(text)
        res = run_child(["fio", "--output-format=json", f"--output={out}", jf], timeout=timeout)
        try:
            with open(out) as f:
                body = f.read()
        except OSError:
            body = ""
    raw = _parse_json(body)
    err = (res.stderr or res.stdout).strip().splitlines()
    detail = next((e for e in err if "error" in e.lower() or "fio:" in e), err[-1] if err else "")
    if raw is None:
        raise WorkloadError(f"fio failed (exit {res.returncode}): {detail}")
    result = FioResult(raw, text, tuple(parse_metrics(raw)), res.stderr)
    if res.returncode != 0:
        raise FioFailure(f"fio failed (exit {res.returncode}): {detail}", result)
    return result


class FioFailure(WorkloadError):
    """fio exited non-zero but left JSON (e.g. ENOSPC): the partial result travels with it."""

    def __init__(self, message: str, result: FioResult) -> None:
        super().__init__(message)
        self.result = result


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
