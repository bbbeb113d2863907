"""A private tmpfs mount: the page cache with no block device under it."""

from __future__ import annotations

from ..machine.proc import run
from .base import Bed, mount_options


def provision_tmpfs(bed: Bed, size: int, mount_opts: str) -> None:
    """mount -t tmpfs -o size=N on a private mount point."""
    mnt = bed.private_dir("tmpfs-")
    opts = f"size={size}" + (f",{mount_opts}" if mount_opts else "")
    bed.remember({"undo": "umount", "path": mnt})
    run(["mount", "-t", "tmpfs", "-o", opts, "iowall", mnt])
    bed.path = mnt
    bed.facts.update(fs="tmpfs", mkfs_opts="", mount_opts=mount_options(mnt), backing="ram")
