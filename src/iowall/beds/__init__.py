"""Beds: where the I/O lands. ``provision`` sets one up and always tears it down."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ..machine.sysinfo import mem_total_bytes
from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes
from .base import FILESYSTEMS, KINDS, Bed, BedSpec, bed_with_wipe
from .device import ONE_DEVICE, provision_device
from .directory import check_dir, provision_dir
from .guard import check_all
from .loop import provision_loop
from .ram import provision_ram
from .room import check_memory_room
from .tmpfs import provision_tmpfs

__all__ = [
    "Bed",
    "BedSpec",
    "FILESYSTEMS",
    "KINDS",
    "bed_with_wipe",
    "default_size",
    "provision",
    "check_dir",
    "check_fs",
    "check_fs_name",
]

#: Smallest image each filesystem formats (btrfs refuses below ~114 MiB).
MIN_SIZE = 256 << 20
#: The smallest image each filesystem's mkfs formats, when more than ``MIN_SIZE``: mkfs.xfs
#: refuses under 300 MiB since xfsprogs 5.19 (6.1.0 here: 299 MiB refused, 300 formatted).
FS_MIN_SIZE = {"xfs": 300 << 20}


def default_size() -> int:
    """25% of RAM, as a whole number of MiB."""
    return (mem_total_bytes() // 4) >> 20 << 20


def check_fs(spec: BedSpec, fs: str) -> None:
    """A UserError for a bed that cannot be used here: a filesystem iowall cannot format on
    this bed kind, a dir bed's missing or read-only directory, a device bed's refusal by the
    guard (the commands call this first, so a bed is refused before anything else runs; the
    guard runs again, with the bed's real size, when provisioning)."""
    if spec.kind == "device" and len(spec.paths) != 1:
        raise UserError(ONE_DEVICE.format(spec=spec))
    check_place(spec)
    check_fs_name(spec, fs)


def check_place(spec: BedSpec) -> None:
    """A UserError for a bed whose place cannot be used: a dir bed's missing or read-only
    directory, a device bed without root or refused by the guard (recipes that take several
    raw devices call this before the machine lock, not only when provisioning)."""
    if spec.kind == "device":
        if os.geteuid() != 0:
            raise UserError("a device bed needs root (it writes the device): run as root")
        check_all(spec.paths, need_bytes=MIN_SIZE, wipe=spec.wipe)
    if spec.kind == "dir":
        check_dir(spec.path)


def check_fs_name(spec: BedSpec, fs: str) -> None:
    """A UserError for a filesystem iowall cannot format on this bed kind (the part of
    ``check_fs`` that needs no machine: a plan file's bed, before the command line's)."""
    if spec.kind in ("ram", "loop", "device") and fs not in FILESYSTEMS:
        raise UserError(f"unknown filesystem {fs!r}: use xfs (default), ext4 or btrfs")
    if spec.kind in ("tmpfs", "dir") and fs not in ("xfs", spec.kind, "") and fs is not None:
        raise UserError(f"--fs {fs} does not apply to a {spec.kind} bed (nothing is formatted)")


@contextlib.contextmanager
def provision(
    spec: BedSpec,
    *,
    fs: str = "xfs",
    size_bytes: int | None = None,
    mkfs_opts: str = "",
    mount_opts: str = "",
) -> Iterator[Bed]:
    """Provision the bed, yield it ready (``bed.path`` mounted), and tear it down on any exit:
    success, error, Ctrl-C or SIGTERM (with ``signals.interruptible``)."""
    check_fs(spec, fs)
    if spec.kind != "dir" and os.geteuid() != 0:
        raise UserError(
            f"the {spec.kind} bed needs root (losetup, mkfs, mount): run as root, or use --bed dir:PATH"
        )
    size = size_bytes or default_size()
    least = max(MIN_SIZE, FS_MIN_SIZE.get(fs, 0))
    if spec.kind in ("ram", "loop") and size < least:
        raise UserError(
            f"--size {fmt_bytes(size)} is too small for an image of {fs} (at least {fmt_bytes(least)})"
        )
    check_memory_room(spec.kind, size, MIN_SIZE if spec.kind == "ram" else 0)
    bed = Bed(spec)
    try:
        if spec.kind == "device":  # the device's size is given; size_bytes is what it needs
            provision_device(bed, spec, fs, max(size_bytes or 0, MIN_SIZE), mkfs_opts, mount_opts)
        elif spec.kind == "ram":
            provision_ram(bed, fs, size, mkfs_opts, mount_opts)
        elif spec.kind == "loop":
            provision_loop(bed, fs, size, mkfs_opts, mount_opts)
        elif spec.kind == "tmpfs":
            provision_tmpfs(bed, size, mount_opts)
        elif spec.kind == "dir":
            provision_dir(bed, spec.path)
        else:  # pragma: no cover - BedSpec.parse guards this
            raise UserError(f"unknown bed {spec}")
        bed.record_space()
        yield bed
    finally:
        bed.teardown()
