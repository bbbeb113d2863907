"""Running helper programs (fio, mkfs, losetup, the engine) with clear errors and signal safety."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import IowallError, UserError
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
        raise UserError(f"{tool} not found: install it with 'apt-get install {package}' "
                        "(or run 'make setup')")
    return path


def run(argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
        input_text: str | None = None) -> Result:
    """Run a short command to completion; on failure raise IowallError with its stderr."""
    try:
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                            input=input_text)
    except FileNotFoundError as e:
        raise IowallError(f"cannot run {argv[0]}: {e}") from e
    res = Result(tuple(argv), cp.returncode, cp.stdout, cp.stderr)
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        raise IowallError(f"{' '.join(argv)} failed ({cp.returncode}): {msg[-1] if msg else ''}")
    return res


def run_child(argv: Sequence[str], *, cwd: str | None = None, env: dict[str, str] | None = None,
              timeout: float | None = None) -> Result:
    """Run a long child (fio, engine) in its own session; on any exception (Ctrl-C, SIGTERM,
    timeout) terminate it, wait for it to exit, and re-raise, so nothing keeps the bed busy."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with shielded():
            stop(proc)
        raise
    return Result(tuple(argv), proc.returncode, out, err)


def stop(proc: subprocess.Popen[str], grace: float = 5.0) -> None:
    """SIGTERM then SIGKILL a child and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass
