"""``df``: the bed's filesystems' free space and inodes during the run (``statvfs``, as df).

A space wall (a create that cannot reserve its blocks, an allocator searching a nearly full
filesystem) is a state of the filesystem as much as of the workload: explain says how full
it got beside the wait. Free space is ``f_bavail`` (what an unprivileged writer may still
take), so XFS's delayed-allocation reservations and ext4's reserved blocks count as used, as
df shows them. The fullest of the bed's filesystems at its fullest look is reported; a
filesystem without an inode count (btrfs: ``f_files`` 0) reports none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..model import Metric, Series
from .sampling import SampledProbe, metric, series

#: per mount point: (capacity bytes, free bytes, inodes, free inodes)
Snapshot = dict[str, tuple[int, int, int, int]]


def space(path: str) -> tuple[int, int, int, int]:
    """One filesystem's capacity and free bytes, its inodes and free inodes."""
    sv = os.statvfs(path)
    return sv.f_blocks * sv.f_frsize, sv.f_bavail * sv.f_frsize, sv.f_files, sv.f_favail


def _used(v: tuple[int, int, int, int]) -> float:
    cap, free, _, _ = v
    return 1.0 - free / cap if cap > 0 else 0.0


def summarize(samples: Sequence[tuple[float, Snapshot]]) -> tuple[list[Series], list[Metric]]:
    """The fullest filesystem at its fullest look: its capacity, least free bytes and used
    share, its free bytes at the last look, and its inodes' least free and used share; a
    series of its free bytes."""
    looks = [(t, m, v) for t, snap in samples for m, v in snap.items()]
    if not looks:
        return [], []
    _, mnt, full = max(looks, key=lambda x: _used(x[2]))
    cap, least, files, _ = full
    mine = [(t, v) for t, m, v in looks if m == mnt]
    last = mine[-1][1]
    metrics = [
        metric("df_capacity_bytes", cap, "bytes"),
        metric("df_free_bytes", last[1], "bytes"),
        metric("df_free_bytes_min", least, "bytes"),
        metric("df_used_share_max", _used(full), "share"),
    ]
    if files > 0:
        ifree = min(v[3] for _, v in mine)
        metrics += [
            metric("df_inodes_free_min", ifree, "inodes"),
            metric("df_inodes_used_share_max", 1.0 - ifree / files, "share"),
        ]
    return [series("df", "free_bytes", "bytes", [(t, v[1]) for t, v in mine])], metrics


class DfProbe(SampledProbe[Snapshot]):
    """Free space and inodes of the bed's filesystems."""

    name = "df"
    summarize = staticmethod(summarize)

    def unavailable(self) -> str | None:
        return None if self.ctx.mounts else "no bed filesystem to watch"

    def read(self) -> Snapshot:
        return {m: space(m) for m in self.ctx.mounts}
