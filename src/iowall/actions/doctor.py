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
    return [
        _root(root),
        _fio(),
        _engine(),
        _tool("mkfs.xfs", "xfsprogs", "--fs xfs (the default)", root),
        _tool("mkfs.ext4", "e2fsprogs", "--fs ext4"),
        _tool("mkfs.btrfs", "btrfs-progs", "--fs btrfs"),
        _tool("losetup", "util-linux", "ram and loop beds", root),
        _tool("perf", "linux-perf", "the locks and profile probes"),
        _inferno(),
        _tool("fs_mark", "fsmark", "the engine-vs-fs_mark benchmark"),
        *_tracefs(root),
        _io_uring(),
        _loop_devices(root),
        _memory(),
        _disk(db),
    ]


def _root(root: bool) -> Check:
    """Whether iowall runs as root: what a user without it cannot measure."""
    return Check(
        "root",
        root,
        "uid 0" if root else f"uid {os.geteuid()}",
        "ram/loop/tmpfs beds, cache drops, knobs, tracefs probes",
        "run as root (or use --bed dir:PATH)",
        False,
    )


def _fio() -> Check:
    """fio on the PATH and its version; a fio too old, or whose version cannot be read, fails."""
    fio = shutil.which("fio")
    detail = "not found"
    ok = False
    if fio:
        try:
            detail = f"fio {'.'.join(map(str, fio_version()))} ({fio})"
            ok = True
        except UserError as e:
            detail = str(e)
    return Check("fio", ok, detail, "every I/O workload", "apt-get install fio", True)


def _engine() -> Check:
    """The iowall engine the package builds, or why it cannot be found."""
    try:
        eng = engine_path()
        return Check("iowall-engine", True, eng, "", "", True)
    except Exception as e:
        return Check(
            "iowall-engine",
            False,
            str(e),
            "memory-copy ceiling, metadata recipes",
            "make setup (reinstalls the package, which builds the engine)",
            True,
        )


def _inferno() -> Check:
    """The inferno tools that draw flame graphs (the collapser and the drawer both)."""
    fg = inferno_tool("inferno-flamegraph") if inferno_tool("inferno-collapse-perf") else None
    return Check(
        "inferno",
        fg is not None,
        fg or "not found",
        "the profile probe, iowall plot flame",
        "make setup (cargo install inferno)",
    )


def _tracefs(root: bool) -> list[Check]:
    """tracefs and, when it is mounted, the tracepoints that the throttle and locks probes
    read (root can mount it when needed)."""
    tp = Path("/sys/kernel/tracing/events/writeback/balance_dirty_pages")
    tracefs_mounted = Path("/sys/kernel/tracing/events").is_dir()
    out = [
        Check(
            "tracefs",
            tracefs_mounted or root,
            "mounted"
            if tracefs_mounted
            else ("not mounted; iowall mounts it when needed" if root else "not mounted"),
            "throttle probe (balance_dirty_pages)",
            "run as root",
        )
    ]
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
    return out


def _io_uring() -> Check:
    """Whether the kernel lets io_uring be used (``kernel.io_uring_disabled``)."""
    iou = Path("/proc/sys/kernel/io_uring_disabled")
    iou_ok = not iou.exists() or iou.read_text().strip() == "0"
    return Check(
        "io_uring",
        iou_ok,
        "enabled" if iou_ok else "disabled by sysctl",
        "the io_uring engine of limits and buffered-wall",
        "sysctl kernel.io_uring_disabled=0",
        True,
    )


def _loop_devices(root: bool) -> Check:
    """Whether loop devices can be made (``/dev/loop-control``), and how many are free now."""
    free_loops = [p for p in Path("/sys/block").glob("loop*") if not (p / "loop" / "backing_file").exists()]
    loop_ok = Path("/dev/loop-control").exists()
    return Check(
        "loop devices",
        loop_ok,
        f"/dev/loop-control present, {len(free_loops)} free now" if loop_ok else "no /dev/loop-control",
        "ram and loop beds",
        "modprobe loop",
        root,
    )


def _memory() -> Check:
    """Memory total and available, and the room in /dev/shm (where a ram bed's image lives):
    facts, never a failure."""
    shm = os.statvfs("/dev/shm")
    return Check(
        "memory",
        True,
        f"{fmt_bytes(mem_total_bytes())} total, "
        f"{fmt_bytes(meminfo().get('MemAvailable', 0))} available, /dev/shm "
        f"{fmt_bytes(shm.f_bavail * shm.f_frsize)} free",
        "",
        "",
    )


def doctor_checks(db: str | None = None) -> Doctor:
    """Every check (``checks``), as the report the CLI prints."""
    return Doctor(tuple(checks(db)))
