"""A filesystem on a loop device whose image is a sparse file on disk (the data directory),
attached with direct I/O so the image's own page cache does not double-cache the data."""

from __future__ import annotations

import os

from ..errors import UserError
from ..paths import data_dir
from ..units import fmt_bytes
from .base import Bed
from .ram import make_image


def provision_loop(bed: Bed, fs: str, size: int, mkfs_opts: str, mount_opts: str) -> None:
    """Image in ``<data>/beds`` → loop device (dio=on) → mkfs → mount."""
    d = data_dir() / "beds"
    d.mkdir(parents=True, exist_ok=True)
    sv = os.statvfs(d)
    free = sv.f_bavail * sv.f_frsize
    if size > free * 0.9:
        raise UserError(f"loop bed of {fmt_bytes(size)} does not fit in {d} "
                        f"({fmt_bytes(free)} free): pass a smaller --size")
    image = make_image(str(d), size, bed)
    dev = bed.attach_loop(image, direct_io=True)
    bed.record_device(dev)
    bed.format_and_mount(dev, fs, mkfs_opts, mount_opts)
    bed.facts.update(image=image, image_bytes=size, backing=f"disk:{d}")
