"""What the user asked of `limits` (``LimitsOptions``), built in one place from the command
line (`iowall limits --size 8G --jobs 1,2`) or from a recipe's ``--set`` values
(`iowall run limits --set bed_size=8G --set jobs=1,2`); ``RECIPE`` names its points."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...beds.xfs_blocks import parse_fs_blocks
from ...measure.repeat import RepeatPolicy, as_policy
from ...vocab.units import parse_size
from .sizing import parse_jobs

#: The recipe name every point of `limits` is stored under.
RECIPE = "limits"
#: A full run repeats each cell until the 95% interval of its median is within this.
FULL_TARGET = 0.05
#: ... or until this many runs: on this VM almost no cell decides at ±5% (26 of 26 ran 9-10
#: runs), so the maximum sets the full run's length: 10 runs of 3 s points took 26 min, 8 took
#: 14 min 50 s with the cache drop of the bed alone (docs/explain.md, the main job whole)
FULL_MAX = 8
#: --quick runs every point this many times, in interleaved rounds: 2, not 3, so that with
#: 3 s points it stays under 200 s here (docs/usage.md, "How long it takes")
QUICK_ROUNDS = 2
#: How the user spells each sized option, for messages: on `iowall limits` …
CLI_NAMES: Mapping[str, str] = {"size": "--size", "jobs": "--jobs"}
#: … and on `iowall run limits` (the recipe's ``--set`` axes).
SET_NAMES: Mapping[str, str] = {"size": "--set bed_size", "jobs": "--set jobs"}


@dataclass(frozen=True)
class LimitsOptions:
    """What the user asked for on the command line."""

    bed: str = "ram"
    fs: str = "xfs"
    size: int | None = None
    jobs: tuple[int, ...] | None = None
    #: fixed rounds (a count), ``auto``, or None: auto to ±5% (at most FULL_MAX), QUICK_ROUNDS with --quick
    repeat: RepeatPolicy | int | None = None
    quick: bool = False
    label: str = RECIPE
    mkfs_opts: str = ""
    mount_opts: str = ""
    probes: str = "default"
    #: knobs held for the whole run (name → value read back)
    knobs: tuple[tuple[str, str], ...] = ()
    #: XFS block sizes in bytes, one bed each (``--fs-block 4k,16k``); empty: mkfs's default
    fs_blocks: tuple[int, ...] = ()
    #: hold guest memory first (free page reporting off, the free memory touched, restored
    #: after); False: --no-hold-memory
    hold_memory: bool = True

    def policy(self) -> RepeatPolicy:
        """``--repeat`` as given; else each cell until its 95% interval is within ±5% or
        ``FULL_MAX`` runs (a full run), or ``QUICK_ROUNDS`` rounds (--quick)."""
        if self.repeat is not None:
            return as_policy(self.repeat)
        return RepeatPolicy(QUICK_ROUNDS) if self.quick else RepeatPolicy.until_decided(FULL_MAX, FULL_TARGET)


def limits_options(
    *,
    bed: str = "ram",
    fs: str = "xfs",
    size: str | int | None = None,
    jobs: str | None = None,
    fs_block: str | None = None,
    repeat: RepeatPolicy | int | None = None,
    quick: bool = False,
    label: str = RECIPE,
    mkfs_opts: str = "",
    mount_opts: str = "",
    probes: str = "default",
    knobs: tuple[tuple[str, str], ...] = (),
    hold_memory: bool = True,
    names: Mapping[str, str] = CLI_NAMES,
) -> LimitsOptions:
    """LimitsOptions from what the user typed: ``size`` (``8G``), ``jobs`` (``1,2,4``) and
    ``fs_block`` (``4k,16k``) as text, read here; ``names`` say how the user spelled the
    sized options (``CLI_NAMES`` or ``SET_NAMES``), for the error messages."""
    return LimitsOptions(
        bed=bed,
        fs=fs,
        size=parse_size(size, what=names["size"]) if size else None,
        jobs=tuple(parse_jobs(jobs, what=names["jobs"])) if jobs is not None else None,
        repeat=repeat,
        quick=quick,
        label=label,
        mkfs_opts=mkfs_opts,
        mount_opts=mount_opts,
        probes=probes,
        knobs=knobs,
        fs_blocks=tuple(parse_fs_blocks(fs_block)) if fs_block is not None else (),
        hold_memory=hold_memory,
    )
