"""A filesystem on a loop device whose image is a sparse file on disk (the data directory),
attached with direct I/O so the image's own page cache does not double-cache the data."""

from __future__ import annotations

import os

from ..machine.dirs import data_dir
from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes
from .base import Bed
from .ram import make_image


def disk_image(
    bed: Bed,
    size: int,
    *,
    preallocate: bool = False,
    what: str = "loop bed",
    fix: str = "pass a smaller --size",
) -> tuple[str, str]:
    """An image in ``<data>/beds`` on disk, checked against free space, attached to a loop
    device with direct I/O; returns (image, device), both journaled for removal."""
    d = data_dir() / "beds"
    d.mkdir(parents=True, exist_ok=True)
    sv = os.statvfs(d)
    free = sv.f_bavail * sv.f_frsize
    if size > free * 0.9:
        raise UserError(f"{what} of {fmt_bytes(size)} does not fit in {d} ({fmt_bytes(free)} free): {fix}")
    image = make_image(str(d), size, bed, preallocate=preallocate)
    return image, bed.attach_loop(image, direct_io=True)


def provision_loop(bed: Bed, fs: str, size: int, mkfs_opts: str, mount_opts: str) -> None:
    """Image in ``<data>/beds`` → loop device (dio=on) → mkfs → mount."""
    image, dev = disk_image(bed, size)
    d = data_dir() / "beds"
    bed.record_device(dev)
    bed.format_and_mount(dev, fs, mkfs_opts, mount_opts)
    bed.facts.update(image=image, image_bytes=size, backing=f"disk:{d}")
