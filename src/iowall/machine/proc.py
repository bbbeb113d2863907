"""Running helper programs (fio, mkfs, losetup, the engine) with clear errors and signal safety."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ..vocab.errors import IowallError, UserError
from . import journal
from .signals import shielded


@dataclass(frozen=True)
class Result:
    """What a finished child printed and returned."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def need(tool: str, package: str) -> str:
    """Path of ``tool`` or a UserError naming the Debian package that provides it."""
    path = shutil.which(tool)
    if path is None:
        raise UserError(
            f"{tool} not found: install it with 'apt-get install {package}' (or run 'make setup')"
        )
    return path


def dies_with_us(argv: Sequence[str]) -> list[str]:
    """``argv`` under ``setpriv --pdeathsig KILL``: a helper iowall waits on (perf script,
    perf lock contention) is killed by the kernel if iowall dies, so a SIGKILL of iowall
    leaves no perf behind. Only for children the spawning thread waits on: the signal
    follows the thread that forked."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


def run(
    argv: Sequence[str], *, check: bool = True, timeout: float | None = None, input_text: str | None = None
) -> Result:
    """Run a short command to completion; on failure raise IowallError with its stderr."""
    try:
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, input=input_text)
    except FileNotFoundError as e:
        raise IowallError(f"cannot run {argv[0]}: {e}") from e
    res = Result(tuple(argv), cp.returncode, cp.stdout, cp.stderr)
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        raise IowallError(f"{' '.join(argv)} failed ({cp.returncode}): {msg[-1] if msg else ''}")
    return res


def run_child(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> Result:
    """Run a long child (fio, engine) in its own session; on any exception (Ctrl-C, SIGTERM,
    timeout) terminate it, wait for it to exit, and re-raise, so nothing keeps the bed busy."""
    # Journaled before it exists (its environment carries the journal's mark); not started
    # inside shielded(): a child inherits the blocked signal mask, and then ignores the
    # SIGTERM (fio) or SIGINT (perf) it is stopped with.
    token, marked = journal.child(os.path.basename(argv[0]))
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env={**marked, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except BaseException:
        journal.done(token)
        raise
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with shielded():
            stop(proc)
            journal.done(token)
        raise
    journal.done(token)
    return Result(tuple(argv), proc.returncode, out, err)


def stop(proc: subprocess.Popen[str], grace: float = 5.0) -> None:
    """SIGTERM then SIGKILL a child started in its own session, and reap it; then SIGKILL
    what is left of its process group (fio's job processes outlive a killed fio main)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait()
    _killpg(proc.pid)
    try:
        proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
