"""`iowall limits`: the limits recipe with the options that command's own flags give, checked as
``actions.target.prepare`` checks a recipe, then run as every recipe is, by
``actions.target.execute``. Its own module: the limits package brings numpy (the summary's
knee), which `iowall run`, importing ``actions.target``, must not load."""

from __future__ import annotations

from ..beds import BedSpec, check_fs
from ..measure.repeat import RepeatPolicy
from ..recipes.limits.options import RECIPE, limits_options
from ..recipes.options import RecipeOptions
from ..recipes.registry import get
from .target import Target


def prepare_limits(
    *,
    bed: str = "ram",
    fs: str = "xfs",
    size: str | None = None,
    jobs: str | None = None,
    fs_block: str | None = None,
    repeat: RepeatPolicy | None = None,
    quick: bool = False,
    label: str = RECIPE,
    mkfs_opts: str = "",
    mount_opts: str = "",
    probes: str = "default",
) -> Target:
    """The limits recipe as a Target, its ``LimitsOptions`` built from the flags (``size``,
    ``jobs`` and ``fs_block`` as typed, read here, the messages naming those flags, not
    ``--set``) and carried in its RecipeOptions; checked, the bed's filesystem with it, before
    any store, lock or guest memory is touched. Whether guest memory is held is
    ``execute``'s to say, as for `run`; the machine lock's holder line says ``limits``."""
    own = limits_options(
        bed=bed,
        fs=fs,
        size=size,
        jobs=jobs,
        fs_block=fs_block,
        repeat=repeat,
        quick=quick,
        label=label,
        mkfs_opts=mkfs_opts,
        mount_opts=mount_opts,
        probes=probes,
    )
    recipe = get(RECIPE)
    opts = RecipeOptions(quick=quick, label=label, repeat=repeat, bed=bed, probes=probes, limits=own)
    recipe.checked(opts)
    check_fs(BedSpec.parse(bed), fs)  # before the store, the lock, guest memory
    return Target(RECIPE, recipe.name, None, recipe, opts, command=RECIPE)
