"""The part of `iowall ab` that runs inside the guest (``python -m iowall.ab.guest``): note
the kernel's facts (build id, command line, KVM or emulated, boot time), run the recipe or
plan with iowall itself into a store in the guest's /tmp, and copy that store file into the
shared directory (20 s cheaper under emulation than `iowall export`: no second iowall start).
The store starts as a copy of an empty one the host made at the schema's head, so the guest
imports no alembic and runs no migration (6 s of a 36 s run under emulation)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from typing import Any

from ..machine import spooldir
from ..machine.atomic import write_text

FACTS, STORE, LOG, STARTED, SPOOL = "facts.json", "guest.db", "run.log", "started", "spool"
NT_GNU_BUILD_ID = 3
#: The kernel's module directory on the host (seen at the same path in the guest).
MODDIR_ENV = "IOWALL_AB_MODDIR"
#: An empty store at the schema's head, made by the host (seen at the same path).
SEED_ENV = "IOWALL_AB_SEED"


def build_id(notes: bytes) -> str:
    """The GNU build id in an ELF note section (``/sys/kernel/notes``), hex, or ""."""
    off = 0
    while off + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, off)
        off += 12
        name = notes[off : off + namesz].rstrip(b"\0")
        off += (namesz + 3) & ~3
        desc = notes[off : off + descsz]
        off += (descsz + 3) & ~3
        if name == b"GNU" and kind == NT_GNU_BUILD_ID:
            return desc.hex()
    return ""


def _read(path: str, mode: str = "r") -> Any:
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return b"" if "b" in mode else ""


def facts() -> dict[str, Any]:
    """What the guest kernel says about itself; ``kvm`` from its clocksources (kvm-clock
    exists only when the hypervisor is KVM), so a silent fallback to emulation is seen."""
    uptime = float((_read("/proc/uptime").split() or ["0"])[0])
    mem = next(
        (
            int(line.split()[1]) * 1024
            for line in _read("/proc/meminfo").splitlines()
            if line.startswith("MemTotal:")
        ),
        0,
    )
    clocks = _read("/sys/devices/system/clocksource/clocksource0/available_clocksource")
    return {
        "release": os.uname().release,
        "build_id": build_id(_read("/sys/kernel/notes", "rb")),
        "cmdline": _read("/proc/cmdline").strip(),
        "kvm": "kvm-clock" in clocks.split(),
        "boot_s": uptime,
        "cpus": os.cpu_count(),
        "mem_total_bytes": mem,
    }


def link_modules(moddir: str) -> None:
    """Make ``/lib/modules/$(uname -r)`` lead to ``moddir``: virtme-ng links it on a tmpfs
    it mounts on /lib/modules, but its own /lib overlay then hides that (seen here with
    virtme-ng 1.42: "Module loop not found in directory /lib/modules/6.1.0-50-amd64")."""
    link = f"/lib/modules/{os.uname().release}"
    if moddir and not os.path.isdir(moddir):
        raise RuntimeError(
            f"iowall ab: the kernel's module directory {moddir} is not visible "
            "in the guest (virtme-ng gives the guest its own /tmp and /var/tmp): "
            "keep kernels and XDG_CACHE_HOME elsewhere"
        )
    if moddir and not os.path.exists(os.path.join(link, "modules.dep")):
        os.makedirs("/lib/modules", exist_ok=True)
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(moddir, link)


def main(argv: list[str]) -> int:
    """``SHARED TARGET LABEL [iowall run options…]``: facts, modules, run, the store out."""
    shared, target, label, *opts = argv
    with open(os.path.join(shared, STARTED), "w") as f:
        f.write(_read("/proc/uptime"))
    doc: dict[str, Any] = {"facts": facts(), "steps": []}
    os.makedirs("/tmp/iowall-guest", exist_ok=True)
    db_file = "/tmp/iowall-guest/guest.db"
    db = f"sqlite:///{db_file}"  # SQLite over 9p: "disk I/O error"; a copy is fine
    seed = os.environ.get(SEED_ENV, "")
    if seed and os.path.exists(seed):
        shutil.copyfile(seed, db_file)
    iowall = [sys.executable, "-m", "iowall"]
    steps = [["modprobe", "-a", "loop", "xfs"], [*iowall, "run", target, "--label", label, "--db", db, *opts]]
    # The guest sees the host's root read-only except the overlays virtme-ng makes (/tmp,
    # /var, …): iowall's data, state and cache directories go to the guest's own /tmp.
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ[var] = f"/tmp/iowall-guest/{var.lower()}"
    # every run measured is written to the host's disk as it is measured, and kept there: a
    # guest killed mid-run (its store is in its memory) leaves its runs for the host
    os.environ[spooldir.ROOT_ENV] = os.path.join(shared, SPOOL)
    os.environ[spooldir.KEEP_ENV] = "1"
    rc = 0
    with open(os.path.join(shared, LOG), "ab") as log:
        try:
            link_modules(os.environ.get(MODDIR_ENV, ""))
        except (RuntimeError, OSError) as e:
            log.write(f"{e}\n".encode())
            rc = 1
            steps = []
        for step in steps:
            t0 = time.monotonic()
            log.write(f"$ {' '.join(step)}\n".encode())
            log.flush()
            rc = subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
            doc["steps"].append({"argv": step, "rc": rc, "wall_s": time.monotonic() - t0})
            if rc != 0:
                break
        if steps:  # iowall has exited (a point failed or not): its WAL is checkpointed into the file
            for suffix in ("", "-wal"):
                if os.path.exists(db_file + suffix):
                    shutil.copyfile(db_file + suffix, os.path.join(shared, STORE + suffix))
    doc["rc"] = rc
    write_text(os.path.join(shared, FACTS), json.dumps(doc, indent=1), what="guest facts")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
