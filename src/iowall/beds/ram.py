"""The default bed: a filesystem on a loop device whose image is a file in /dev/shm,
the pmem-like setup of seed 002 (no drive variance, no GC: only the kernel's own paths).
The image is allocated and written once before mkfs (docs/design-notes.md)."""

from __future__ import annotations

import os
import tempfile

from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes
from .base import Bed


def make_image(
    directory: str, size: int, bed: Bed, *, preallocate: bool = False, zero_fill: bool = False
) -> str:
    """An image file of ``size`` bytes in ``directory``: sparse, allocated, or allocated and
    zero-filled (no block then is written for the first time during a measurement);
    journaled for deletion."""
    fd, image = tempfile.mkstemp(prefix="iowall-", suffix=".img", dir=directory)
    bed.remember({"undo": "unlink", "path": image})
    with os.fdopen(fd, "wb") as f:
        if preallocate or zero_fill:
            os.posix_fallocate(f.fileno(), 0, size)
        else:
            f.truncate(size)
        if zero_fill:
            chunk = memoryview(bytes(64 << 20))
            for off in range(0, size, len(chunk)):
                os.pwrite(f.fileno(), chunk[: min(len(chunk), size - off)], off)
    return image


def provision_ram(bed: Bed, fs: str, size: int, mkfs_opts: str, mount_opts: str) -> None:
    """Image in /dev/shm → loop device (buffered: tmpfs has no O_DIRECT path) → mkfs → mount."""
    sv = os.statvfs("/dev/shm")
    free = sv.f_bavail * sv.f_frsize
    if size > free:
        raise UserError(
            f"ram bed of {fmt_bytes(size)} does not fit in /dev/shm "
            f"({fmt_bytes(free)} free): pass a smaller --size"
        )
    # Preallocated and written once: the first write to a block of a sparse (or only
    # fallocated) tmpfs image pays for page allocation and zeroing (measured here: 4x slower
    # first pass), which is the bed's cost, not the kernel path under test. pmem, which this
    # bed stands in for, is memory up front (docs/design-notes.md).
    image = make_image("/dev/shm", size, bed, preallocate=True, zero_fill=True)
    dev = bed.attach_loop(image, direct_io=False)
    bed.record_device(dev)
    bed.format_and_mount(dev, fs, mkfs_opts, mount_opts, discard=False)
    bed.facts.update(image=image, image_bytes=size, backing="tmpfs:/dev/shm", preallocated=True)
