"""``locks``: kernel lock contention during the run, from ``perf lock record -a`` (tracepoint
mode: ``lock:contention_begin``/``contention_end``) and ``perf lock contention -v`` for the
table with stacks. Heavy (perf records system-wide): not in the default set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any

from ..machine.proc import dies_with_us
from ..model import Artifact, Metric
from ..vocab.errors import IowallError
from . import tracefs
from .base import Probe, ProbeContext, ProbeResult
from .perf import PerfRecording
from .sampling import metric

#: perf prints times with these units (lock_stat_key_print_time in tools/perf/builtin-lock.c).
UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_T = r"([\d.]+)\s+(ns|us|ms|s|m|h)"
ROW = re.compile(rf"^\s*(\d+)\s+{_T}\s+{_T}\s+{_T}\s+(\S+)\s+(\S.*?)\s*$")
FRAME = re.compile(r"^\s+0x[0-9a-fA-F]+\s*(\S.*?)?\s*$")
#: rows kept with their stacks in the artifact (all rows count in the totals).
TOP_ROWS = 50


def to_seconds(value: str, unit: str) -> float:
    """``64.69``, ``h`` → 232884.0 s (rounded to the ns perf can resolve)."""
    return round(float(value) * UNITS_S[unit], 9)


def parse_contention(text: str) -> list[dict[str, Any]]:
    """Rows of ``perf lock contention [-v]`` text: caller, type, contended, total/max/avg wait
    in seconds, and the stack (symbols, innermost first; frames without a symbol dropped).

    Lines that are neither a row nor a stack frame (perf's warnings, the header, the
    ``=== output for debug===`` trailer) are ignored.
    """
    rows: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("=== output for debug"):
            break
        m = ROW.match(line)
        if m:
            cur = {
                "caller": m[9],
                "type": m[8],
                "contended": int(m[1]),
                "total_wait_s": to_seconds(m[2], m[3]),
                "max_wait_s": to_seconds(m[4], m[5]),
                "avg_wait_s": to_seconds(m[6], m[7]),
                "stack": [],
            }
            rows.append(cur)
            continue
        f = FRAME.match(line)
        if f and cur is not None:
            if f[1]:
                cur["stack"].append(f[1])
            continue
        if line.strip() and not line.startswith(("\t", " ")):
            cur = None
    return rows


def bad_sequences(text: str) -> tuple[int, int]:
    """perf's own count of events in a bad sequence, and of all, from the debug trailer."""
    m = re.search(r"^bad: (\d+), total: (\d+)", text, re.M)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def summarize(rows: list[dict[str, Any]]) -> tuple[list[Metric], list[str]]:
    """Metrics over the whole table, and notes: the top caller; rows where perf counted no
    contention yet reports wait time (perf 6.1 loses the count on nested contention, e.g. a
    spinlock inside a semaphore's slow path; its wait time is still real)."""
    total = sum(r["total_wait_s"] for r in rows)
    top = max(rows, key=lambda r: r["total_wait_s"], default=None)
    metrics = [
        metric("lock_wait_total_s", total, "s"),
        metric("lock_contended", sum(r["contended"] for r in rows), "events"),
        metric("lock_callers", len(rows), "callers"),
        metric("lock_top_wait_s", top["total_wait_s"] if top else 0.0, "s"),
        metric("lock_top_contended", top["contended"] if top else 0, "events"),
    ]
    notes = (
        [
            f"top caller: {top['caller']} ({top['type']}), {top['contended']} contended, "
            f"{top['total_wait_s']:.6g} s total wait"
        ]
        if top
        else []
    )
    odd = [r for r in rows if r["contended"] == 0 and r["total_wait_s"] > 0]
    if odd:
        notes.append(f"{len(odd)} row(s) with wait time but 0 contended, as perf printed them")
    return metrics, notes


def perf_argv(data: str) -> list[str]:
    """``perf lock record -a -o DATA``, under ``setpriv --pdeathsig INT`` when there is one:
    perf then gets SIGINT if iowall dies (even by SIGKILL) and never records forever. (A
    ``preexec_fn`` prctl would do the same but is unsafe with the sampler threads running.)
    """
    argv = ["perf", "lock", "record", "-a", "-o", data]
    if shutil.which("setpriv"):
        argv = ["setpriv", "--pdeathsig", "INT", "--", *argv]
    return argv


class LocksProbe(Probe):
    """Contended kernel locks: top callers by total wait, with type, counts and stacks."""

    name = "locks"

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self._rec: PerfRecording | None = None
        self._acquired = False
        self._notes: list[str] = []

    def unavailable(self) -> str | None:
        if shutil.which("perf") is None:
            return "perf not found: install it with 'apt-get install linux-perf'"
        if os.geteuid() != 0:
            return "needs root (perf lock record -a)"
        if tracefs.mounted() and not os.path.isdir(f"{tracefs.TRACEFS}/events/lock/contention_begin"):
            return "no lock:contention_begin tracepoint in this kernel (needs 5.19+)"
        return None

    def start(self) -> None:
        try:
            # Mount tracefs ourselves: perf would mount it and leave it mounted.
            tracefs.acquire()
            self._acquired = True
            self._rec = PerfRecording(self.ctx.workdir, "lock", "perf lock record", 60.0)
            self._rec.start(perf_argv)
        except BaseException:
            self._cleanup()
            raise

    def _cleanup(self) -> None:
        if self._rec is not None:
            self._rec.stop()
            self._rec.cleanup()
            self._notes += self._rec.notes
            self._rec = None
        if self._acquired:
            self._acquired = False
            if not tracefs.release():
                self._notes.append("tracefs left mounted: busy (another user)")

    def stop(self) -> ProbeResult:
        rec = self._rec
        if rec is None:
            return ProbeResult(self.name, skipped="not started")
        try:
            rec.stop()
            size = rec.size()
            if size == 0:
                self._cleanup()
                return ProbeResult(
                    self.name, skipped="perf lock record wrote no data", notes=tuple(self._notes)
                )
            r = subprocess.run(
                dies_with_us(["perf", "lock", "contention", "-v", "-i", str(rec.data)]),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=300,
            )
            text = r.stdout + r.stderr  # perf prints the table on stderr (pr_info)
            if r.returncode != 0 and not ROW.search(text):
                raise IowallError(
                    f"perf lock contention failed ({r.returncode}): {(text.strip().splitlines() or [''])[-1]}"
                )
        finally:
            self._cleanup()
        rows = parse_contention(text)
        metrics, notes = summarize(rows)
        bad, total = bad_sequences(text)
        if bad:
            notes.append(f"perf saw {bad} of {total} lock events in a bad sequence")
        rows.sort(key=lambda r: -r["total_wait_s"])
        table = json.dumps(rows[:TOP_ROWS], indent=1)
        self._notes.append(f"perf.data was {size} bytes (removed)")
        return ProbeResult(
            self.name,
            metrics=tuple(metrics),
            artifacts=(
                Artifact("lock_contention.json", "application/json", table),
                Artifact("lock_contention.txt", "text/plain", text),
            ),
            notes=tuple(self._notes + notes),
        )
