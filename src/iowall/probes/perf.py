"""A perf recording in the background, as the ``locks`` and ``profile`` probes run one: its
data and log files journaled for removal before perf starts (so even a SIGKILL of iowall is
undone by the next start), started once perf has written its header, stopped with SIGINT (perf
then writes its trailer) and a bounded wait, then removed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ..machine import journal
from ..vocab.errors import IowallError

#: How long perf may take to write its header before the probe gives up.
START_S = 10.0


class PerfRecording:
    """One ``perf … record`` process writing ``data``, its output in ``log``."""

    def __init__(self, workdir: str, name: str, what: str, stop_wait_s: float) -> None:
        base = Path(workdir)
        base.mkdir(parents=True, exist_ok=True)
        stem = f"iowall-perf-{name}-{os.getpid()}-{time.monotonic_ns()}"
        self.data, self.log = base / f"{stem}.data", base / f"{stem}.log"
        self.what, self.stop_wait_s = what, stop_wait_s
        self.notes: list[str] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._tokens: list[Path] = []
        self._child: Path | None = None

    def start(self, argv: Callable[[str], list[str]]) -> None:
        """Start ``argv(data path)``; return once recording runs, or raise IowallError (the
        caller then calls ``stop`` and ``cleanup``)."""
        for p in (self.data, self.log):
            self._tokens.append(journal.add({"undo": "unlink", "path": str(p)}))
        # Journaled before it exists (its environment carries the mark). Not inside
        # shielded(): perf would inherit SIGINT blocked and never write its trailer.
        self._child, env = journal.child("perf")
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                argv(str(self.data)),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:  # recording starts once the header is written
            if self._proc.poll() is not None:
                tail = (self.log_text().strip().splitlines() or [""])[-1]
                raise IowallError(f"{self.what} exited: {tail}")
            if self.data.exists() and self.data.stat().st_size > 0:
                time.sleep(0.1)
                return
            time.sleep(0.05)
        raise IowallError(f"{self.what} did not start within {START_S:.0f} s")

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGINT, a bounded wait, then SIGKILL (said in ``notes``)."""
        p, self._proc = self._proc, None
        if p is None or p.poll() is not None:
            self._forget_child()
            return
        p.send_signal(signal.SIGINT)
        try:
            p.wait(self.stop_wait_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self.notes.append(f"{self.what} did not stop on SIGINT: killed")
        self._forget_child()

    def _forget_child(self) -> None:
        if self._child is not None:
            journal.done(self._child)
            self._child = None

    def size(self) -> int:
        """Bytes perf wrote (0 when it wrote nothing)."""
        try:
            return self.data.stat().st_size
        except OSError:
            return 0

    def cleanup(self) -> None:
        """Remove the data and log files and cross them out of the journal."""
        for p in (self.data, self.log):
            p.unlink(missing_ok=True)
        for t in self._tokens:
            journal.done(t)
        self._tokens.clear()
