"""The default bed: a filesystem on a loop device whose image is a sparse file in /dev/shm,
the pmem-like setup of seed 002 (no drive variance, no GC: only the kernel's own paths)."""

from __future__ import annotations

import os
import tempfile

from ..errors import UserError
from ..units import fmt_bytes
from .base import Bed


def make_image(directory: str, size: int, bed: Bed, *, preallocate: bool = False) -> str:
    """An image file of ``size`` bytes in ``directory`` (sparse, or fully allocated), journaled
    for deletion."""
    fd, image = tempfile.mkstemp(prefix="iowall-", suffix=".img", dir=directory)
    bed.remember({"undo": "unlink", "path": image})
    with os.fdopen(fd, "wb") as f:
        if preallocate:
            os.posix_fallocate(f.fileno(), 0, size)
        else:
            f.truncate(size)
    return image


def provision_ram(bed: Bed, fs: str, size: int, mkfs_opts: str, mount_opts: str) -> None:
    """Image in /dev/shm → loop device (buffered: tmpfs has no O_DIRECT path) → mkfs → mount."""
    sv = os.statvfs("/dev/shm")
    free = sv.f_bavail * sv.f_frsize
    if size > free:
        raise UserError(f"ram bed of {fmt_bytes(size)} does not fit in /dev/shm "
                        f"({fmt_bytes(free)} free): pass a smaller --size")
    # Preallocated: the first write to a block of a sparse tmpfs image pays for page
    # allocation and zeroing (measured here: 4x slower first pass), which is the bed's cost,
    # not the kernel path under test. pmem, which this bed stands in for, is memory up front.
    image = make_image("/dev/shm", size, bed, preallocate=True)
    dev = bed.attach_loop(image, direct_io=False)
    bed.record_device(dev)
    bed.format_and_mount(dev, fs, mkfs_opts, mount_opts)
    bed.facts.update(image=image, image_bytes=size, backing="tmpfs:/dev/shm", preallocated=True)
