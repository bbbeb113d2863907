"""Which backing-dev-info (bdi) names stand for the bed: what writeback calls the device in a
flush kworker's comm (``flush-7:0``) and in the ``bdi`` field of writeback tracepoints.

For most filesystems the bdi is the block device's (``MAJ:MIN``). btrfs registers its own
(``btrfs-N``, linked from /sys/fs/btrfs/<uuid>/bdi), whatever devices it sits on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

BTRFS_SYSFS = "/sys/fs/btrfs"


def bdi_names(devices: Sequence[str], devnos: Sequence[str], root: str = BTRFS_SYSFS) -> tuple[str, ...]:
    """``devnos`` plus the bdi of every btrfs filesystem on one of ``devices``."""
    names = [d for d in devnos if d]
    try:
        fss = os.listdir(root)
    except OSError:
        fss = []
    for fs in fss:
        try:
            members = set(os.listdir(os.path.join(root, fs, "devices")))
        except OSError:
            continue
        link = os.path.join(root, fs, "bdi")
        if members & set(devices) and os.path.exists(link):
            names.append(os.path.basename(os.path.realpath(link)))
    return tuple(dict.fromkeys(names))
