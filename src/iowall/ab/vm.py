"""One guest: boot a kernel with virtme-ng (`vng`), fixed vCPUs and memory, run one command
inside with a shared read-write directory, and keep the whole console in a file."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from ..machine import journal
from ..vocab.errors import UserError
from .kernels import Kernel

#: Console lines kept in a failure's report.
TAIL = 15


@dataclass(frozen=True)
class Boot:
    """How a guest ended: vng's exit status, the host wall time, the console's last lines."""

    rc: int
    wall_s: float
    console: str
    tail: tuple[str, ...]
    timed_out: bool = False


def vng_path() -> str:
    """`vng`, from PATH or beside this Python (the venv's bin), or a UserError."""
    here = os.path.join(os.path.dirname(sys.executable), "vng")
    found = shutil.which("vng") or (here if os.access(here, os.X_OK) else None)
    if found is None:
        raise UserError(
            "virtme-ng is not installed: `make setup` (pip extra 'ab') or `pip install virtme-ng`"
        )
    if shutil.which("qemu-system-x86_64") is None:
        raise UserError("qemu-system-x86_64 is not installed: run scripts/setup-debs.sh")
    return found


#: Host directories the guest's init covers with a tmpfs of its own (virtme-ng 1.42's
#: ``mount_sys_filesystems``): what lies under them on the host is not seen in the guest.
GUEST_OWN = (
    "/var/tmp",
    "/var/log",
    "/var/cache",
    "/var/lib/private",
    "/var/lib/machines",
    "/var/lib/portables",
    "/var/spool/rsyslog",
    "/run",
)


def hidden_in_guest(paths: Sequence[str]) -> list[str]:
    """The directories of ``paths`` (real paths, each once) the guest would not see: under
    one of ``GUEST_OWN``. `vng --rodir` shows them at the same path."""
    out: list[str] = []
    for p in paths:
        real = os.path.realpath(p)
        if any(real == d or real.startswith(d + "/") for d in GUEST_OWN) and real not in out:
            out.append(real)
    return out


def vng_argv(
    vng: str,
    kernel: Kernel,
    *,
    cpus: int,
    memory: str,
    kvm: bool,
    shared: str,
    command: str,
    rodirs: Sequence[str] = (),
) -> list[str]:
    """The `vng` command line: the kernel's modules are found by virtme-ng next to the image
    (``ROOT/boot/vmlinuz-R`` → ``ROOT/lib/modules/R``) and linked in the guest. The guest
    starts its command in ``/`` (vng's default is the caller's directory, which the guest
    may not have: one under /var/tmp); ``rodirs`` are shown read-only at their own paths."""
    argv = [
        vng,
        "--verbose",
        "--run",
        kernel.image,
        "--cpus",
        str(cpus),
        "--memory",
        memory,
        "--cwd",
        "/",
        "--rwdir",
        shared,
    ]
    for d in rodirs:
        argv += ["--rodir", d]
    if kernel.append:  # the kernel's own options, after virtme-ng's
        argv += ["--append", kernel.append]
    return argv + ["--exec", command] + ([] if kvm else ["--disable-kvm"])


def boot(argv: list[str], console: str, timeout_s: float, *, started: str, boot_timeout_s: float) -> Boot:
    """Run ``argv`` (a `vng` line) in its own session, its output into ``console``; killed
    with its process group when file ``started`` (the guest's first act) is still missing
    after ``boot_timeout_s``, or after ``timeout_s`` in all."""
    # journaled before the start: if ab dies, `iowall recover` (or the next start) kills vng,
    # qemu and all they forked, by the mark in their environment
    token, env = journal.child("vng")
    env["PATH"] = os.path.dirname(argv[0]) + os.pathsep + env.get("PATH", "")  # virtme-run
    t0 = time.monotonic()
    timed_out = False
    with open(console, "wb") as out:
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            while True:
                try:
                    rc = p.wait(1.0)
                    break
                except subprocess.TimeoutExpired:
                    took = time.monotonic() - t0
                    if took > timeout_s or (took > boot_timeout_s and not os.path.exists(started)):
                        timed_out = True
                        os.killpg(p.pid, signal.SIGKILL)
                        rc = p.wait()
                        break
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        finally:  # vng has exited or was killed with its group
            journal.done(token)
    wall = time.monotonic() - t0
    with open(console, errors="replace") as f:
        tail = tuple(line.rstrip("\n") for line in deque(f, TAIL))
    return Boot(rc, wall, console, tail, timed_out)
