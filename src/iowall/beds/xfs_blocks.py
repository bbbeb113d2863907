"""``limits --fs-block``: XFS block sizes, one bed each (large block sizes, LBS). Parsed and
checked before anything is measured, so a block size the kernel or xfsprogs cannot mount is
refused in one line instead of after an hour of other beds."""

from __future__ import annotations

import os
import resource

from ..vocab.errors import IowallError, UserError
from ..vocab.units import KIB, MIB, parse_size
from . import BedSpec, provision

#: XFS block sizes mkfs.xfs accepts (v5 filesystems: 1 KiB to 64 KiB, powers of two).
XFS_MIN_BLOCK, XFS_MAX_BLOCK = 1 * KIB, 64 * KIB
#: Blocks larger than the page size mount from this kernel on (XFS large block sizes).
LBS_KERNEL = (6, 12)
#: The trial filesystem each block size is made and mounted on before the run.
TRIAL_BYTES = 512 * MIB


def parse_fs_blocks(text: str) -> list[int]:
    """``4k,16k`` → [4096, 16384] in the order given, each a power of two XFS accepts."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        b = parse_size(part, what="--fs-block")
        if b & (b - 1) or not XFS_MIN_BLOCK <= b <= XFS_MAX_BLOCK:
            raise UserError(
                f"--fs-block {part}: XFS block sizes are powers of two from 1k to 64k, e.g. 4k,16k,64k"
            )
        if b not in out:
            out.append(b)
    if not out:
        raise UserError("--fs-block: give block sizes separated by commas, e.g. 4k,16k,64k")
    return out


def fmt_block(b: int) -> str:
    """4096 → ``4k`` (the way mkfs.xfs -b size= and the report write it)."""
    return f"{b // KIB}k" if b % KIB == 0 else str(b)


def _kernel() -> tuple[int, int]:
    parts = os.uname().release.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


def check_fs_blocks(spec: BedSpec, fs: str, blocks: list[int] | tuple[int, ...], mkfs_opts: str) -> None:
    """A UserError unless every block size can be used here: XFS on a ram or loop bed, a
    kernel that mounts blocks above the page size when asked for, and a trial mkfs + mount of
    each size that works (xfsprogs and kernel agree)."""
    if fs != "xfs":
        raise UserError(f"--fs-block applies to XFS (--fs xfs), not {fs}")
    if spec.kind not in ("ram", "loop", "device"):
        raise UserError(f"--fs-block needs a bed iowall formats (ram, loop or device), not {spec.kind}")
    if "-b" in mkfs_opts.split():
        raise UserError("--fs-block and a -b in --mkfs-opts both set the block size: keep one")
    page = resource.getpagesize()
    kernel = _kernel()
    for b in blocks:
        if b > page and kernel < LBS_KERNEL:
            raise UserError(
                f"--fs-block {fmt_block(b)}: XFS blocks larger than the "
                f"{fmt_block(page)} page size need kernel "
                f"{'.'.join(map(str, LBS_KERNEL))} or later (this is "
                f"{os.uname().release})"
            )
        opts = " ".join(x for x in (mkfs_opts, f"-b size={b}") if x)
        try:
            with provision(BedSpec("ram"), fs="xfs", size_bytes=TRIAL_BYTES, mkfs_opts=opts):
                pass
        except IowallError as e:
            raise UserError(
                f"--fs-block {fmt_block(b)}: a trial XFS with {fmt_block(b)} "
                f"blocks could not be made and mounted here: {e}"
            ) from None
