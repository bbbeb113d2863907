"""The engine's sequential stream (``iowall-engine stream``): buffered, uncached
(RWF_DONTCACHE) or direct read/write of a set of files, one thread per job, round-robin over
each job's files like fio. Its metrics carry fio's names so the same analysis reads both.

The bandwidth series is ``Series("engine", "write_bw" | "read_bw", "B/s")``: the same names
and units as fio's (``workloads.fio.bw_series``) under the probe that produced it, so a stored
run says which generator made it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..machine.journal import scratch_dir
from ..model import Artifact, Metric, Series
from ..vocab.errors import UserError
from .engine import run_engine
from .fio import BW_LOG_MS

RWS = ("read", "write")
MODES = ("buffered", "uncached", "direct")


@dataclass(frozen=True)
class StreamSpec:
    """One stream: direction, mode, block and file size, and each job's files (paths)."""

    rw: str
    mode: str
    bs: int
    file_size: int
    jobs: tuple[tuple[str, ...], ...]
    end_fsync: bool = False
    #: bandwidth series interval, ms (0: none)
    log_ms: int = BW_LOG_MS
    #: pass after pass over the files for this long, as fio's time_based (0: one pass)
    runtime_ms: int = 0
    #: the buffer starts this many bytes past a page (0: page-aligned, as iowall runs it;
    #: 16 is where glibc's malloc puts a 2 MiB buffer, fio's without iomem_align)
    buf_offset: int = 0

    def __post_init__(self) -> None:
        if self.rw not in RWS:
            raise UserError(f"stream rw must be read or write, got {self.rw!r}")
        if self.mode not in MODES:
            raise UserError(f"stream mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.jobs or any(not files for files in self.jobs):
            raise UserError("a stream needs at least one job, and every job at least one file")
        if any("\n" in p for files in self.jobs for p in files):
            raise UserError("stream file paths cannot contain a newline")
        if not 0 <= self.buf_offset < 4096 or (self.buf_offset and self.mode == "direct"):
            raise UserError(f"stream buf_offset must be 0..4095 (0 for direct), got {self.buf_offset}")

    def files_list(self) -> str:
        """The engine's ``--files-from`` text: ``JOB PATH`` per line."""
        return "".join(f"{j} {p}\n" for j, files in enumerate(self.jobs) for p in files)

    def args(self, files_from: str) -> list[str]:
        """The engine's command line (after the binary) for this stream."""
        argv = [
            "stream",
            "--rw",
            self.rw,
            "--mode",
            self.mode,
            "--bs",
            str(self.bs),
            "--file-size",
            str(self.file_size),
            "--files-from",
            files_from,
        ]
        if self.end_fsync:
            argv.append("--end-fsync")
        if self.log_ms > 0:
            argv += ["--log-ms", str(self.log_ms)]
        if self.runtime_ms > 0:
            argv += ["--runtime-ms", str(self.runtime_ms)]
        if self.buf_offset:
            argv += ["--buf-offset", str(self.buf_offset)]
        return argv


@dataclass(frozen=True)
class StreamResult:
    """The engine's record, the list it read, and the metrics and series derived from them."""

    record: Mapping[str, Any]
    files_list: str
    metrics: tuple[Metric, ...]
    series: tuple[Series, ...] = ()

    def artifacts(self) -> tuple[Artifact, ...]:
        """The engine's JSON and its file list, kept verbatim with the run."""
        return (
            Artifact("engine.json", "application/json", json.dumps(self.record)),
            Artifact("files.list", "text/plain", self.files_list),
        )


def run_stream(
    spec: StreamSpec, *, timeout: float | None = None, origin_s: float | None = None
) -> StreamResult:
    """Run the stream to completion; an engine error object raises EngineRunError (ENOSPC
    included: its record has status filled and the partial counts). Series times count from
    ``origin_s`` (wall clock: the probes' common start, as fio's do), else from launch."""
    text = spec.files_list()
    with scratch_dir("iowall-stream-") as tmp:
        lst = os.path.join(tmp, "files.list")
        with open(lst, "w") as f:
            f.write(text)
        launched_ms = time.time() * 1000.0
        rec = run_engine(spec.args(lst), timeout=timeout)[-1]
    origin_ms = launched_ms if origin_s is None else origin_s * 1e3
    return StreamResult(rec, text, tuple(stream_metrics(rec)), stream_series(rec, origin_ms=origin_ms))


def stream_metrics(rec: Mapping[str, Any]) -> list[Metric]:
    """fio's metric names for the record's direction (``write_bw_bytes_per_s``, ``_iops``,
    ``_io_bytes``, ``_runtime_s``: barrier to the last job done, end fsync included) and the
    engine's CPU time (user and system seconds of the whole process)."""
    d = str(rec["rw"])
    return [
        Metric(f"{d}_bw_bytes_per_s", float(rec["bytes_per_s"]), "B/s"),
        Metric(f"{d}_iops", float(rec["iops"]), "IO/s"),
        Metric(f"{d}_io_bytes", float(rec["bytes"]), "B"),
        Metric(f"{d}_runtime_s", float(rec["runtime_s"]), "s", "lower"),
        Metric("engine_user_s", float(rec["user_s"]), "s", "lower"),
        Metric("engine_sys_s", float(rec["sys_s"]), "s", "lower"),
    ]


def stream_series(rec: Mapping[str, Any], *, origin_ms: float) -> tuple[Series, ...]:
    """``<rw>_bw`` in B/s from the engine's log, whose entries are (CLOCK_REALTIME ms at the
    interval's end, bytes completed in it, its length in ns on the monotonic clock): the rate
    is bytes over that length (the last interval is usually short). Times are seconds from
    ``origin_ms`` at the interval's end, as fio's series are."""
    log: Sequence[Sequence[int]] = rec.get("log") or ()
    samples = [
        (round((float(stamp) - origin_ms) / 1000.0, 3), nbytes / (ns / 1e9))
        for stamp, nbytes, ns in log
        if ns > 0
    ]
    if not samples:
        return ()
    return (Series("engine", f"{rec['rw']}_bw", "B/s", tuple(samples)),)
