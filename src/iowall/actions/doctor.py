"""`doctor`: what is present on this machine, what each missing piece disables, how to get
it; the CLI prints it, and exits 0 when `iowall limits` can run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..machine.dirs import db_url, default_db_url, redact_url
from ..machine.sysinfo import mem_total_bytes, meminfo
from ..probes.profile import inferno_tool
from ..report.doctor import Check, Doctor
from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes
from ..workloads.engine import engine_path
from ..workloads.fio import fio_version


def _tool(name: str, pkg: str, disables: str, limits: bool = False) -> Check:
    path = shutil.which(name)
    return Check(name, path is not None, path or "not found", disables, f"apt-get install {pkg}", limits)


def _disk(db: str | None) -> Check:
    """Free space where the store is (``--db``, else ``IOWALL_DB``, else the data directory):
    the nearest existing directory of a SQLite file; a server's store is not on this disk."""
    url = db_url(db) if db else default_db_url()
    if not url.startswith("sqlite:///"):
        return Check("disk", True, f"the store is {redact_url(url)}, not a file here", "", "")
    where = os.path.dirname(url.removeprefix("sqlite:///"))
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    d = os.statvfs(where)
    return Check(
        "disk", True, f"{fmt_bytes(d.f_bavail * d.f_frsize)} free in {where} (the store's directory)", "", ""
    )


def checks(db: str | None = None) -> list[Check]:
    """Every check, in the order a user fixes them; the disk's where the store ``db`` is."""
    root = os.geteuid() == 0
    out = [
        Check(
            "root",
            root,
            "uid 0" if root else f"uid {os.geteuid()}",
            "ram/loop/tmpfs beds, cache drops, knobs, tracefs probes",
            "run as root (or use --bed dir:PATH)",
            False,
        )
    ]
    fio = shutil.which("fio")
    detail = "not found"
    ok = False
    if fio:
        try:
            detail = f"fio {'.'.join(map(str, fio_version()))} ({fio})"
            ok = True
        except UserError as e:
            detail = str(e)
    out.append(Check("fio", ok, detail, "every I/O workload", "apt-get install fio", True))
    try:
        eng = engine_path()
        out.append(Check("iowall-engine", True, eng, "", "", True))
    except Exception as e:
        out.append(
            Check(
                "iowall-engine",
                False,
                str(e),
                "memory-copy ceiling, metadata recipes",
                "make setup (reinstalls the package, which builds the engine)",
                True,
            )
        )
    out.append(_tool("mkfs.xfs", "xfsprogs", "--fs xfs (the default)", root))
    out.append(_tool("mkfs.ext4", "e2fsprogs", "--fs ext4"))
    out.append(_tool("mkfs.btrfs", "btrfs-progs", "--fs btrfs"))
    out.append(_tool("losetup", "util-linux", "ram and loop beds", root))
    out.append(_tool("perf", "linux-perf", "the locks and profile probes"))
    fg = inferno_tool("inferno-flamegraph") if inferno_tool("inferno-collapse-perf") else None
    out.append(
        Check(
            "inferno",
            fg is not None,
            fg or "not found",
            "the profile probe, iowall plot flame",
            "make setup (cargo install inferno)",
        )
    )
    out.append(_tool("fs_mark", "fsmark", "the engine-vs-fs_mark benchmark"))
    tp = Path("/sys/kernel/tracing/events/writeback/balance_dirty_pages")
    tracefs_mounted = Path("/sys/kernel/tracing/events").is_dir()
    out.append(
        Check(
            "tracefs",
            tracefs_mounted or root,
            "mounted"
            if tracefs_mounted
            else ("not mounted; iowall mounts it when needed" if root else "not mounted"),
            "throttle probe (balance_dirty_pages)",
            "run as root",
        )
    )
    if tracefs_mounted:
        out.append(
            Check(
                "balance_dirty_pages tracepoint",
                tp.is_dir(),
                str(tp),
                "throttle probe",
                "a kernel with CONFIG_TRACING",
            )
        )
    lock_tp = Path("/sys/kernel/tracing/events/lock/contention_begin")
    if tracefs_mounted:
        out.append(
            Check(
                "lock contention tracepoints",
                lock_tp.is_dir(),
                str(lock_tp),
                "locks probe",
                "a kernel with CONFIG_LOCKDEP or lock tracepoints",
            )
        )
    iou = Path("/proc/sys/kernel/io_uring_disabled")
    iou_ok = not iou.exists() or iou.read_text().strip() == "0"
    out.append(
        Check(
            "io_uring",
            iou_ok,
            "enabled" if iou_ok else "disabled by sysctl",
            "the io_uring engine of limits and buffered-wall",
            "sysctl kernel.io_uring_disabled=0",
            True,
        )
    )
    free_loops = [p for p in Path("/sys/block").glob("loop*") if not (p / "loop" / "backing_file").exists()]
    loop_ok = Path("/dev/loop-control").exists()
    out.append(
        Check(
            "loop devices",
            loop_ok,
            f"/dev/loop-control present, {len(free_loops)} free now" if loop_ok else "no /dev/loop-control",
            "ram and loop beds",
            "modprobe loop",
            root,
        )
    )
    shm = os.statvfs("/dev/shm")
    out.append(
        Check(
            "memory",
            True,
            f"{fmt_bytes(mem_total_bytes())} total, "
            f"{fmt_bytes(meminfo().get('MemAvailable', 0))} available, /dev/shm "
            f"{fmt_bytes(shm.f_bavail * shm.f_frsize)} free",
            "",
            "",
        )
    )
    out.append(_disk(db))
    return out


def doctor_checks(db: str | None = None) -> Doctor:
    """Every check (``checks``), as the report the CLI prints."""
    return Doctor(tuple(checks(db)))
