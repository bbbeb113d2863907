"""``profile``: where every CPU was, from ``perf record -e cpu-clock -F 99 -a -g`` around the
point, folded into stacks (``comm;frame;…;frame count``) by ``inferno-collapse-perf`` and kept
with the run as a compressed artifact. cpu-clock is a software event, so it works in VMs
without hardware counters; 99 Hz on every CPU costs little (docs/probes.md).

The probe only records and folds: which kernel path a stack belongs to is decided later, from
the stored stacks, by ``iowall.analysis.explain.kernel_paths`` (probes may not import analysis, and a better
table then applies to old runs too).
"""

from __future__ import annotations

import base64
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..machine.proc import dies_with_us
from ..model import GZIP_BASE64, PROFILE_ARTIFACT, Artifact
from ..vocab.errors import IowallError
from .base import Probe, ProbeContext, ProbeResult
from .perf import PerfRecording
from .sampling import metric

FREQ_HZ = 99
#: the folded stacks, gzip then base64 (artifact bodies are text); ``decode_folded`` in
#: ``iowall.analysis.explain.kernel_paths`` reads it back.
ARTIFACT = PROFILE_ARTIFACT
CONTENT_TYPE = GZIP_BASE64
COLLAPSE = "inferno-collapse-perf"
#: fields for perf script: no ``period``, so the collapser counts samples, not nanoseconds.
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,event,ip,sym,dso"
#: a run of frames that perf could not resolve (a frame-pointer walk through code built
#: without frame pointers yields dozens): kept as one frame, they carry nothing more.
UNKNOWN_RUN = re.compile(r"(?:;\[unknown\])+")
STOP_WAIT_S = 30.0
SCRIPT_TIMEOUT_S = 600.0


def inferno_tool(name: str) -> str | None:
    """An inferno tool: beside this Python (``make setup`` installs them in the venv's bin/,
    which need not be on PATH), else on PATH."""
    here = os.path.dirname(sys.executable)
    return shutil.which(name, path=os.pathsep.join([here, os.environ.get("PATH", "")]))


def record_argv(data: str) -> list[str]:
    """``perf record`` for the profile, under ``setpriv --pdeathsig INT`` when there is one, so
    perf stops even if iowall is killed. ``-N``: no copies of every binary in ~/.debug. ``-B``
    and ``--no-bpf-event``: no build-id pass over the data at the end and no BPF programs'
    events, which made perf take 0.3 s to stop (every run paid it; 0.00 s without them here).
    perf script then finds each binary by its path, as the folding always has on this machine;
    a BPF program's frames stay unnamed (none is on an I/O path iowall explains)."""
    argv = ["perf", "record", "-e", "cpu-clock", "-F", str(FREQ_HZ), "-a", "-g", "-N", "-B"]
    argv += ["--no-bpf-event", "-o", data]
    if shutil.which("setpriv"):
        argv = ["setpriv", "--pdeathsig", "INT", "--", *argv]
    return argv


def tidy_folded(text: str) -> dict[str, int]:
    """Folded lines → ``{stack: samples}``, runs of ``[unknown]`` frames made one (stacks
    that then coincide are summed); lines that are not ``stack count`` are ignored."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        stack = UNKNOWN_RUN.sub(";[unknown]", stack)
        out[stack] = out.get(stack, 0) + int(count)
    return out


def encode_folded(stacks: dict[str, int]) -> str:
    """The artifact body: ``stack count`` lines, heaviest first, gzip, base64."""
    lines = "".join(f"{s} {n}\n" for s, n in sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0])))
    return base64.b64encode(gzip.compress(lines.encode(), compresslevel=6, mtime=0)).decode()


def fold(data: Path, collapse: str) -> str:
    """``perf script -i DATA | inferno-collapse-perf --all`` (kernel frames marked ``_[k]``)."""
    with (
        tempfile.TemporaryFile() as err,
        subprocess.Popen(
            dies_with_us(["perf", "script", "-F", SCRIPT_FIELDS, "-i", str(data)]),
            stdout=subprocess.PIPE,
            stderr=err,
        ) as script,
    ):
        assert script.stdout is not None
        try:
            col = subprocess.run(
                dies_with_us([collapse, "--all", "--quiet"]),
                stdin=script.stdout,
                capture_output=True,
                timeout=SCRIPT_TIMEOUT_S,
            )
        finally:
            script.stdout.close()
            try:
                script.wait(SCRIPT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                script.kill()
                script.wait()
        if script.returncode != 0:
            err.seek(0)
            raise IowallError(f"perf script failed ({script.returncode}): {_last_line(err.read())}")
    if col.returncode != 0:
        raise IowallError(f"{collapse} failed ({col.returncode}): {_last_line(col.stderr)}")
    return col.stdout.decode(errors="replace")


def _last_line(b: bytes) -> str:
    return (b.decode(errors="replace").strip().splitlines() or [""])[-1]


def recorded_samples(log: str) -> int | None:
    """perf record's own count, from ``[ perf record: Captured and wrote … (N samples) ]``."""
    m = re.search(r"\((\d+) samples\)", log)
    return int(m[1]) if m else None


class ProfileProbe(Probe):
    """System-wide CPU profile with kernel and user stacks, folded and stored compressed."""

    name = "profile"

    def __init__(self, ctx: ProbeContext) -> None:
        super().__init__(ctx)
        self._rec: PerfRecording | None = None

    def unavailable(self) -> str | None:
        if shutil.which("perf") is None:
            return "perf not found: install it with 'apt-get install linux-perf'"
        if inferno_tool(COLLAPSE) is None:
            return f"{COLLAPSE} not found: run 'make setup' (it builds the inferno crate)"
        if os.geteuid() != 0:
            try:
                level = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
            except (OSError, ValueError):
                level = 2
            if level > 0:
                return (
                    f"perf refuses system-wide sampling: kernel.perf_event_paranoid={level}"
                    " (needs root or a value <= 0)"
                )
        return None

    def start(self) -> None:
        self._rec = PerfRecording(self.ctx.workdir, "profile", "perf record", STOP_WAIT_S)
        try:
            self._rec.start(record_argv)
        except BaseException:
            self._rec.stop()
            self._rec.cleanup()
            raise

    def stop(self) -> ProbeResult:
        rec = self._rec
        if rec is None:
            return ProbeResult(self.name, skipped="not started")
        notes = rec.notes
        try:
            rec.stop()
            size = rec.size()
            if size == 0:
                return ProbeResult(self.name, skipped="perf record wrote no data", notes=tuple(notes))
            log = rec.log_text()
            collapse = inferno_tool(COLLAPSE)
            if collapse is None:
                raise IowallError(f"{COLLAPSE} vanished during the run")
            stacks = tidy_folded(fold(rec.data, collapse))
        finally:
            rec.cleanup()
        samples = sum(stacks.values())
        if samples == 0:
            return ProbeResult(self.name, skipped="perf recorded no samples", notes=tuple(notes))
        notes.append(f"perf.data was {size} bytes (removed)")
        perf_count = recorded_samples(log)
        if perf_count is not None and perf_count != samples:
            notes.append(f"perf recorded {perf_count} samples, {samples} folded")
        lost = re.findall(r"(?i)lost \d+ \w+.*", log)
        if lost:
            notes.append(f"perf: {lost[0].strip()}")
        return ProbeResult(
            self.name,
            metrics=(
                metric("profile_samples", samples, "samples"),
                metric("profile_cpu_s", samples / FREQ_HZ, "s"),
                metric("profile_stacks", len(stacks), "stacks"),
            ),
            artifacts=(Artifact(ARTIFACT, CONTENT_TYPE, encode_folded(stacks)),),
            notes=tuple(notes),
        )
