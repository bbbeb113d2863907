"""The plan inside iowall (frozen dataclasses): a workload, a bed shape, axes and repeats, and
the points they expand to (bed axes outermost, so points sharing a bed are neighbours)."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Any

from ..beds import BedSpec, bed_with_wipe
from ..beds.xfs_blocks import fmt_block
from ..measure.repeat import RepeatPolicy, as_policy
from ..model import RECIPE_MAX, Point, check_label
from ..vocab.errors import UserError
from ..vocab.knob import Knob, parse_knob
from ..vocab.units import fmt_bytes, parse_size
from ..workloads.fio import JobFile
from ..workloads.jobfile import build_job
from .axes import Axis, check_axis
from .spec import BED_AXES, WORKLOAD_PARAMS, Where

#: The most points one plan may expand to (each runs for seconds, every repeat).
MAX_POINTS = 100_000

# ------------------------------------------------------------------------------------------
# The plan inside iowall (frozen dataclasses)


@dataclass(frozen=True)
class BedShape:
    """What a bed is made of: kind (``ram``, ``dir:PATH``…), filesystem, size, options."""

    kind: str = "ram"
    fs: str = "xfs"
    size: int | None = None
    mkfs_opts: str = ""
    mount_opts: str = ""
    #: XFS block size in bytes (the ``fs_block`` axis); 0: mkfs's default
    fs_block: int = 0

    @property
    def mkfs_argv(self) -> str:
        """The mkfs options the bed is made with: the plan's, then the block size."""
        return " ".join(x for x in (self.mkfs_opts, f"-b size={self.fs_block}" if self.fs_block else "") if x)

    def describe(self) -> str:
        out = [self.kind]
        if self.kind in ("ram", "loop") or self.kind.startswith("device"):
            out.append(self.fs)
        if self.size:
            out.append(fmt_bytes(self.size))
        if self.fs_block:
            out.append(f"{fmt_block(self.fs_block)} blocks")
        if self.mkfs_opts:
            out.append(f"mkfs '{self.mkfs_opts}'")
        if self.mount_opts:
            out.append(f"mount '{self.mount_opts}'")
        return " ".join(out)


@dataclass(frozen=True)
class Workload:
    """A fio workload: its fixed parameters (plan names), verbatim fio options, or a job file."""

    kind: str = "fio"
    params: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    jobfile: str = ""
    jobfile_text: str = ""

    def describe(self) -> str:
        if self.jobfile:
            extra = " ".join(f"{k}={v}" for k, v in self.params.items())
            return f"fio {os.path.basename(self.jobfile)} {extra}".strip()
        return "fio " + " ".join(f"{k}={v}" for k, v in self.params.items())


@dataclass(frozen=True)
class PlanPoint:
    """One expanded point: its stored identity, fio parameters, bed shape and knobs."""

    point: Point
    values: Mapping[str, Any]  # this point's value on every axis
    fio: Mapping[str, Any]  # fixed workload parameters with axis values applied
    shape: BedShape
    knobs: tuple[tuple[Knob, Any], ...] = ()

    def title(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values.items()) or "(fixed)"


@dataclass(frozen=True)
class Plan:
    """A whole plan. ``label`` is stored with every run; ``recipe`` (``plan:<name>``) is the
    points' identity and does not change with ``--label``, so base and patched runs of the
    same plan are comparable."""

    label: str
    workload: Workload
    bed: BedShape = field(default_factory=BedShape)
    axes: tuple[Axis, ...] = ()
    repeats: RepeatPolicy = field(default_factory=RepeatPolicy)
    shuffle: int | None = None
    probes: tuple[str, ...] = ()
    recipe: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not self.recipe:
            object.__setattr__(self, "recipe", f"plan:{self.label}")
        check_label(self.label, "the plan's label")
        if len(self.recipe) > RECIPE_MAX:
            raise UserError(
                f"the plan's label {self.label!r} is {len(self.label)} characters "
                f"long: its runs' recipe 'plan:LABEL' holds at most {RECIPE_MAX}; "
                "give a shorter label = … in the plan"
            )

    @property
    def repeat(self) -> int:
        """Runs per point (fixed), or the most runs per point (``repeat = "auto"``)."""
        return self.repeats.max_runs

    def axis(self, name: str) -> Axis | None:
        return next((a for a in self.axes if a.name == name), None)

    def with_overrides(
        self,
        *,
        sets: Sequence[tuple[str, Sequence[Any]]] = (),
        label: str | None = None,
        repeat: RepeatPolicy | int | None = None,
        bed: str | None = None,
        wipe: bool = False,
        quick: bool = False,
        target: float | None = None,
        probes: str | None = None,
    ) -> Plan:
        """The plan with command-line overrides: ``--set`` axes replace (or add to) the plan's,
        ``--label``, ``--repeat``, ``--target`` (of auto), ``--bed``, ``--wipe`` (of the
        device bed, the plan's own when no ``--bed`` is given), ``--probes`` (replaces the
        plan's list); ``--quick`` means one repeat unless given."""
        axes = list(self.axes)
        for name, values in sets:
            text = f"--set {name}={','.join(str(v) for v in values)}"
            ax = check_axis(name, list(values), Where(text), ())
            at = next((i for i, a in enumerate(axes) if a.name == ax.name), None)
            if at is None:
                axes.append(ax)
            else:
                axes[at] = ax
        policy = as_policy(repeat) if repeat is not None else (RepeatPolicy(1) if quick else self.repeats)
        if target is not None:
            policy = policy.with_target(target)
        shape = self.bed
        if bed is not None or wipe:
            kind = bed_with_wipe(bed or shape.kind, wipe) or shape.kind
            shape = replace(shape, kind=str(BedSpec.parse(kind)))
        return replace(
            self,
            axes=tuple(axes),
            label=label or self.label,
            bed=shape,
            repeats=policy,
            probes=self.probes if probes is None else (probes,),
        )

    def job(self, pp: PlanPoint, directory: str) -> JobFile | str:
        """The fio job of point ``pp`` in ``directory`` (a JobFile, or the user's job file
        pointed at the bed)."""
        return build_job(
            pp.fio, directory, options=self.workload.options, jobfile_text=self.workload.jobfile_text
        )

    def expand(self) -> list[PlanPoint]:
        """The cartesian product of the axes, bed axes outermost (so points sharing a bed are
        neighbours), then the others in the order written, the last varying fastest."""
        axes = [a for a in self.axes if a.role == "bed"] + [a for a in self.axes if a.role != "bed"]
        n = math.prod(len(a.values) for a in axes)
        if n > MAX_POINTS:  # a typo'd range would expand (and run) for days, or exhaust memory
            raise UserError(
                f"plan {self.label}: its axes make {n} points, more than the "
                f"{MAX_POINTS} one plan may have: split it, or shorten an axis"
            )
        names = [a.name for a in axes]
        base: dict[str, Any] = {"kind": self.workload.kind, **self.workload.params}
        if self.workload.options:
            base["options"] = dict(self.workload.options)
        if self.workload.jobfile:
            base["jobfile"] = os.path.basename(self.workload.jobfile)
            base["jobfile_sha1"] = hashlib.sha1(self.workload.jobfile_text.encode()).hexdigest()[:12]
        out = []
        for combo in product(*[a.values for a in axes]):
            values = dict(zip(names, combo, strict=True))
            shape = self.bed
            if "fs" in values:
                shape = replace(shape, fs=str(values["fs"]))
            if "mkfs" in values:
                shape = replace(
                    shape, mkfs_opts=" ".join(x for x in (self.bed.mkfs_opts, str(values["mkfs"])) if x)
                )
            if "mount" in values:
                shape = replace(
                    shape, mount_opts=",".join(x for x in (self.bed.mount_opts, str(values["mount"])) if x)
                )
            if "bed_size" in values:
                shape = replace(shape, size=_bytes(values["bed_size"]))
            if "fs_block" in values:
                shape = replace(shape, fs_block=_bytes(values["fs_block"]))
            fio = {**self.workload.params, **{k: v for k, v in values.items() if k in WORKLOAD_PARAMS}}
            knobs = tuple(
                (parse_knob(k), v)
                for k, v in values.items()
                if k not in BED_AXES and k not in WORKLOAD_PARAMS
            )
            # Axis values come last so that they show in the order of the axes.
            params = {k: v for k, v in base.items() if k not in values}
            params.update(values)
            out.append(PlanPoint(Point(self.recipe, params), values, fio, shape, knobs))
        return out

    def describe(self) -> dict[str, Any]:
        """The plan as JSON (stored with every run's env and printed by ``--format json``)."""
        return {
            "label": self.label,
            "recipe": self.recipe,
            "source": self.source,
            "repeat": self.repeats.spec() if self.repeats.auto else self.repeat,
            **({"target": self.repeats.target} if self.repeats.auto else {}),
            "shuffle": self.shuffle,
            "probes": list(self.probes),
            "workload": {
                "kind": self.workload.kind,
                **self.workload.params,
                **({"options": dict(self.workload.options)} if self.workload.options else {}),
                **({"jobfile": self.workload.jobfile} if self.workload.jobfile else {}),
            },
            "bed": {
                "kind": self.bed.kind,
                "fs": self.bed.fs,
                "size": self.bed.size,
                "mkfs_opts": self.bed.mkfs_opts,
                "mount_opts": self.bed.mount_opts,
            },
            "axes": {a.name: list(a.values) for a in self.axes},
        }


def _bytes(v: Any) -> int:
    return parse_size(v if isinstance(v, (int, str)) else str(v))
