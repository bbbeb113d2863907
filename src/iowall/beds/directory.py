"""An existing directory: nothing is formatted or mounted; iowall works in a subdirectory
it creates and removes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..vocab.errors import UserError
from .base import Bed, device_kind_facts, queue_facts


def check_dir(path: str) -> None:
    """A UserError unless ``path`` is a directory this user can write."""
    if not os.path.isdir(path):
        raise UserError(f"--bed dir:{path}: no such directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--bed dir:{path}: not writable by this user")


def provision_dir(bed: Bed, path: str) -> None:
    """Check the directory, make ``iowall-XXXX`` inside it, record the filesystem under it."""
    check_dir(path)
    work = tempfile.mkdtemp(prefix="iowall-", dir=path)
    bed.remember({"undo": "rmtree", "path": work})
    bed.path = work
    fs, opts, source = _mount_of(work)
    bed.facts.update(fs=fs, mount_opts=opts, mkfs_opts="", backing=f"dir:{path}", source=source)
    st = os.stat(work)
    devno = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    uevent = Path(f"/sys/dev/block/{devno}/uevent")
    if uevent.exists():
        name = dict(line.split("=", 1) for line in uevent.read_text().split() if "=" in line).get("DEVNAME")
        if name:
            bed.device, bed.devno, bed.devices = f"/dev/{name}", devno, [name]
            bed.facts.update(
                device=bed.device, devno=devno, queue=queue_facts(bed.device), **device_kind_facts(bed.device)
            )
    bed.notes.append(f"dir bed: nothing formatted; files go to {work} on {fs} ({source})")


def _mount_of(path: str) -> tuple[str, str, str]:
    """Filesystem type, options and source of the mount holding ``path`` (longest prefix)."""
    real = os.path.realpath(path)
    best = ("", "", "", "")
    with open("/proc/self/mounts") as f:
        for line in f:
            src, mnt, fs, opts = line.split()[:4]
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[1]):
                best = (src, mnt, fs, opts)
    return best[2], best[3], best[0]
