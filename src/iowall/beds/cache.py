"""Dropping a bed's caches before a point: sync, then the page cache of every file and
directory in the bed (POSIX_FADV_DONTNEED, opened O_NOATIME), of its block devices
(BLKFLSBUF) and of a loop device's backing file, then the kernel's dentries, inodes and
filesystem buffers (drop_caches=2).

Not ``drop_caches=3``: dropping the page cache machine-wide walks every page of every shmem
file, and a ram bed's image is one: 0.28-0.36 s a drop with a 5 GiB image here, 0.001 s
without, on every point of every run (docs/design-notes.md, "Dropping caches"). The pages
of other filesystems (fio's binary and libraries) stay cached, which no point should pay for.
A bed of more than ``MAX_FILES`` files falls back to the machine-wide drop."""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable, Sequence

#: Beyond this many files in a bed, opening each costs more than the machine-wide drop.
MAX_FILES = 100_000
#: ``BLKFLSBUF`` (``_IO(0x12, 97)``): write out and invalidate a block device's page cache.
BLKFLSBUF = 0x1261
#: What a report says was done, with beds and without.
BED_DROP = (
    "the bed's caches are dropped (sync; the page cache of its files, device and loop "
    "backing file; drop_caches=2 for dentries and inodes)"
)
MACHINE_DROP = "caches are dropped (sync; drop_caches=3)"


class TooManyFiles(Exception):
    """The bed holds more than MAX_FILES files."""


def _invalidate(path: str) -> None:
    """Drop the clean pages of one file or directory; one that vanished is nothing to do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOATIME | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def invalidate_tree(root: str, budget: int = MAX_FILES) -> int:
    """``_invalidate`` every file and directory under ``root`` on its filesystem (not below
    other mounts); how many. Raises TooManyFiles beyond ``budget``."""
    try:
        dev = os.stat(root).st_dev
    except OSError:
        return 0
    n = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if _same_fs(os.path.join(top, d), dev)]
        for name in (*files, "."):
            n += 1
            if n > budget:
                raise TooManyFiles(root)
            _invalidate(os.path.join(top, name))
    return n


def _same_fs(path: str, dev: int) -> bool:
    try:
        return os.lstat(path).st_dev == dev
    except OSError:
        return False


def _inodes_in_use(path: str) -> int:
    """Inodes in use on the filesystem mounted at ``path`` (statvfs), or 0 where ``path`` is
    not a mount point (a directory bed: its tree is counted as it is walked)."""
    try:
        if not os.path.ismount(path):
            return 0
        sv = os.statvfs(path)
    except OSError:
        return 0
    return max(0, sv.f_files - sv.f_ffree)


def flush_device(dev: str) -> None:
    """``BLKFLSBUF`` on a block device: its dirty pages written, its clean ones dropped."""
    try:
        if not stat.S_ISBLK(os.stat(dev).st_mode):
            return
        fd = os.open(dev, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        fcntl.ioctl(fd, BLKFLSBUF)
    except OSError:
        pass
    finally:
        os.close(fd)


def loop_backing(dev: str) -> str | None:
    """The file a loop device reads and writes (``/sys/block/loopN/loop/backing_file``)."""
    name = os.path.basename(dev)
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            path = f.read().strip()
    except OSError:
        return None
    return path if path and os.path.isfile(path) else None


def drop_caches(level: int = 3) -> None:
    """``echo LEVEL > /proc/sys/vm/drop_caches``; raises OSError where not permitted."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write(f"{level}\n")


def drop_bed_caches(paths: Sequence[str], devices: Iterable[str]) -> None:
    """Sync, then drop the caches of the beds at ``paths`` (mount points or directories) and
    on ``devices`` (/dev paths), as the module says; raises OSError where not permitted
    (not root)."""
    os.sync()
    try:
        budget = MAX_FILES
        for p in paths:
            if _inodes_in_use(p) > budget:
                raise TooManyFiles(p)
            budget -= invalidate_tree(p, budget)
    except TooManyFiles:
        drop_caches(3)
        return
    for dev in devices:
        flush_device(dev)
        backing = loop_backing(dev)
        if backing is not None:
            _invalidate(backing)
    drop_caches(2)
