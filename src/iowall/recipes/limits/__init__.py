"""`iowall limits`: the ceilings (memory copy, direct I/O) and buffered vs uncached vs direct
sequential write and read at rising job counts, on a bed provisioned for the purpose (one per
XFS block size with ``--fs-block``).

Method (after seed 002): bs 2M, 10 files per job, pwritev2/preadv2 (fio's pvsync2; the seed's
io_uring stays in the buffered_wall recipe), so that buffered, uncached and direct differ only
in their flag and fio and iowall-engine can be held against each other. Unlike the seed, every write point
moves the same total amount of data whatever the job count (strong scaling), so that each point
is measured against the same dirty-page thresholds, and the total is sized from the kernel's
dirty threshold so that buffered writes cross it: a buffered write that fits under the
threshold measures memcpy into the page cache, not I/O. Buffered and uncached writes end with
fsync (end_fsync=1), so their time covers the writeback of everything written. Uncached points
use RWF_DONTCACHE (0x80): fio when the installed fio passes that flag, else iowall-engine.

The package, one concern per module: ``options`` (what the user asked: ``LimitsOptions``, built
by ``limits_options`` from the command line or a recipe's ``--set``), ``sizing`` (pure: job
counts, bed and point sizes for this machine), ``tasks`` (the points and what runs them),
``run`` (``run_limits``: beds, the guest memory held, everything interleaved) and ``report``
(pure: the Report from ``analysis.scaling.limits``' summary and a ``LimitsContext``). Importing the
package registers the recipe (`iowall run limits`).
"""

from __future__ import annotations

from dataclasses import replace

from ...results import Report
from ...store import Store
from ...vocab.progress import Progress
from ..options import RecipeOptions, one
from ..registry import Recipe, register
from .options import RECIPE, SET_NAMES, LimitsOptions, limits_options
from .run import run_limits

#: The ``--set`` axes of `iowall run limits` (the options of `iowall limits`).
AXES = ("jobs", "fs", "bed_size", "mkfs", "mount", "fs_block")


def _joined(opts: RecipeOptions, axis: str) -> str | None:
    """An axis's ``--set`` values as the command line's text (``1,2,4``), or None."""
    values = opts.values(axis)
    return ",".join(map(str, values)) if values is not None else None


def _options(opts: RecipeOptions) -> LimitsOptions:
    """The recipe's ``--set`` axes as LimitsOptions, checked (unknown axes, job counts, sizes,
    block sizes): no machine is touched. From `iowall limits` they come built from its flags
    (``opts.limits``), with the knobs and the hold on guest memory still ``opts``'."""
    if opts.limits is not None:
        return replace(opts.limits, knobs=opts.knobs, hold_memory=opts.hold_memory)
    opts.check_sets(RECIPE, AXES)
    size = one(opts, "bed_size")
    return limits_options(
        bed=opts.bed or "ram",
        fs=str(one(opts, "fs") or "xfs"),
        size=str(size) if size is not None else None,
        jobs=_joined(opts, "jobs"),
        fs_block=_joined(opts, "fs_block"),
        repeat=opts.repeat,
        quick=opts.quick,
        label=opts.label or RECIPE,
        mkfs_opts=str(one(opts, "mkfs") or ""),
        mount_opts=str(one(opts, "mount") or ""),
        probes=opts.probes,
        knobs=opts.knobs,
        hold_memory=opts.hold_memory,
        names=SET_NAMES,
    )


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    return run_limits(_options(opts), store, progress)


register(
    Recipe(
        name=RECIPE,
        seed="002",
        description="the ceilings (memory copy, direct I/O) and buffered vs uncached "
        "vs direct sequential write and read at rising job counts",
        execute=_execute,
        check=_options,
        module=__name__,
        holds_memory=True,
    )
)
