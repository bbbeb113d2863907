"""What the kernel says about block devices, read from sysfs and /proc: kernel names, the byte
ranges of the storage under a device (through partitions, loop devices and dm/md slaves), and
which devices are mounted or used as swap. The device guard (``guard.py``) reasons from these."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

SYS = Path("/sys")
#: Mount points whose device is the running system: refused even when allow-listed.
SYSTEM_MOUNTS = ("/", "/boot", "/boot/efi")


@dataclass(frozen=True)
class Extent:
    """A byte range ``[start, end)`` of some storage: a whole disk (``disk:vda``) or a file a
    loop device is backed by (``file:DEV:INO``). ``exact`` is False when the range is the whole
    of a dm/md slave (the mapping inside is not read), so it is not shifted further."""

    base: str
    start: int
    end: int
    exact: bool = True

    def overlaps(self, other: Extent) -> bool:
        return self.base == other.base and self.start < other.end and other.start < self.end


def kernel_name(path: str, sys: Path = SYS) -> str | None:
    """The kernel name (``loop3``, ``vda1``) of a block device node, or None if it is not one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return name_of_devno(os.major(st.st_rdev), os.minor(st.st_rdev), sys)


def name_of_devno(major: int, minor: int, sys: Path = SYS) -> str | None:
    """The kernel name of device ``major:minor`` from /sys/dev/block, or None."""
    p = sys / "dev" / "block" / f"{major}:{minor}"
    return p.resolve().name if p.exists() else None


def block_dir(name: str, sys: Path = SYS) -> Path:
    return sys / "class" / "block" / name


def read(p: Path, default: str = "") -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return default


def size_bytes(name: str, sys: Path = SYS) -> int:
    """Size of a block device in bytes (sysfs ``size`` is in 512-byte sectors)."""
    return int(read(block_dir(name, sys) / "size", "0") or 0) * 512


def parent(name: str, sys: Path = SYS) -> str | None:
    """The whole disk a partition belongs to, or None for a whole device."""
    d = block_dir(name, sys)
    return d.resolve().parent.name if (d / "partition").exists() else None


def partitions(name: str, sys: Path = SYS) -> list[str]:
    """The partitions of a whole device (``vda1``, ``loop0p1``)."""
    d = block_dir(name, sys).resolve()
    return sorted(p.name for p in d.iterdir() if (p / "partition").exists()) if d.is_dir() else []


def listing(name: str, what: str, sys: Path = SYS) -> list[str]:
    """Entries of ``holders`` or ``slaves`` of a device."""
    d = block_dir(name, sys) / what
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def extents(name: str, sys: Path = SYS, depth: int = 0) -> list[Extent]:
    """The storage under device ``name`` as byte ranges: a partition is its parent's range
    shifted by its start, a loop device its backing file's (or block device's) range at its
    offset, a dm/md device the whole of each slave, anything else the whole disk."""
    d = block_dir(name, sys)
    size = size_bytes(name, sys)
    if depth > 16:  # a loop of loops this deep is not real
        return [Extent(f"disk:{name}", 0, size)]
    par = parent(name, sys)
    if par is not None:
        start = int(read(d / "start", "0") or 0) * 512
        return [shift(e, start, size) for e in extents(par, sys, depth + 1)]
    slaves = listing(name, "slaves", sys)
    if slaves:
        return [
            Extent(e.base, e.start, e.end, exact=False) for s in slaves for e in extents(s, sys, depth + 1)
        ]
    backing = read(d / "loop" / "backing_file")
    if backing:
        offset = int(read(d / "loop" / "offset", "0") or 0)
        try:
            st = os.stat(backing)
        except OSError:  # deleted or unreachable: the path is all there is
            return [Extent(f"file:{backing}", offset, offset + size)]
        if stat.S_ISBLK(st.st_mode):
            under = name_of_devno(os.major(st.st_rdev), os.minor(st.st_rdev), sys)
            if under:
                return [shift(e, offset, size) for e in extents(under, sys, depth + 1)]
        return [Extent(f"file:{st.st_dev}:{st.st_ino}", offset, offset + size)]
    return [Extent(f"disk:{name}", 0, size)]


def shift(e: Extent, start: int, size: int) -> Extent:
    """The range ``size`` bytes long at ``start`` inside ``e`` (``e`` itself if not exact)."""
    return Extent(e.base, e.start + start, e.start + start + size) if e.exact else e


def overlap(a: list[Extent], b: list[Extent]) -> bool:
    return any(x.overlaps(y) for x in a for y in b)


def mounts(mountinfo: str = "/proc/self/mountinfo", sys: Path = SYS) -> list[tuple[str, str]]:
    """(mount point, kernel name) for every mount backed by a block device: by the mount's
    device number and by its source (btrfs reports an anonymous number), plus every member
    device of a mounted btrfs (``/sys/fs/btrfs/UUID/devices``)."""
    out: list[tuple[str, str]] = []
    with open(mountinfo) as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            point = fields[4].replace("\\040", " ")
            major, minor = (int(x) for x in fields[2].split(":"))
            names = {name_of_devno(major, minor, sys) if major else None}
            source = right.split()[1] if len(right.split()) > 1 else ""
            if source.startswith("/dev/"):
                names.add(kernel_name(source, sys))
            out += [(point, n) for n in sorted(x for x in names if x)]
    for dev in sorted((sys / "fs" / "btrfs").glob("*/devices/*")):
        out.append((f"a mounted btrfs ({dev.parent.parent.name})", dev.resolve().name))
    return out


def swaps(path: str = "/proc/swaps", sys: Path = SYS) -> list[str]:
    """Kernel names of block devices in use as swap (swap files live on a mounted filesystem,
    which the mount check covers)."""
    out = []
    with open(path) as f:
        for line in f.readlines()[1:]:
            name = kernel_name(line.split()[0].replace("\\040", " "), sys) if line.split() else None
            if name:
                out.append(name)
    return out
