"""Reading plans: a TOML file or a recipe's dict into a Plan, every axis (from ``[axes]`` or
``--set``) checked by the type of what it sets; every mistake is one PlanError."""

from __future__ import annotations

import os
import random
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..beds import BedSpec, check_fs_name
from ..measure.repeat import parse_repeat
from ..probes import resolve
from ..vocab.errors import PlanError, UserError
from ..workloads.jobfile import check_jobfile
from .axes import Axis, check_axis
from .model import BedShape, Plan, Workload, _bytes
from .spec import (
    _KNOWN_KEYS,
    WORKLOAD_KINDS,
    BedModel,
    FioModel,
    PlanModel,
    Where,
    _first_error,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# ------------------------------------------------------------------------------------------
# Parsing


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """Read and validate a plan file; every mistake is one PlanError naming file, line, key."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise UserError(f"plan {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read plan {str(path)!r}: {e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = int(m.group(1)) if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
        if not m and "end of document" in msg:
            line = text.count("\n") + 1
        raise PlanError(str(path), line, "", f"not valid TOML: {msg}") from None
    return plan_from_doc(doc, where=Where(str(path), text), base_dir=str(p.parent), default_label=p.stem)


def load_jobfile(path: str | os.PathLike[str]) -> Plan:
    """A fio job file as a plan of one point (``iowall run FILE.fio``): the file is the
    workload, pointed at the plan's bed as a plan's ``jobfile`` is; label = the file's stem."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"job file {str(path)!r} not found")
    return plan_from_doc(
        {"workload": {"kind": "fio", "jobfile": p.name}},
        where=Where(str(path)),
        base_dir=str(p.parent),
        default_label=p.stem,
    )


def plan_from_doc(
    doc: Mapping[str, Any],
    *,
    where: Where | None = None,
    base_dir: str = ".",
    default_label: str = "plan",
    recipe: str = "",
) -> Plan:
    """Validate a plan given as a dict (a parsed TOML file, or a recipe's own plan)."""
    w = where or Where("<plan>")
    try:
        m = PlanModel.model_validate(dict(doc))
    except ValidationError as e:
        loc, msg = _first_error(e, (), _KNOWN_KEYS)
        raise w.error(loc, msg) from None

    wl = dict(m.workload)
    kind = wl.get("kind", "fio")
    if kind not in WORKLOAD_KINDS:
        raise w.error(
            ("workload", "kind"), f"unknown workload kind {kind!r}: use {', '.join(WORKLOAD_KINDS)}"
        )
    try:
        fm = FioModel.model_validate(wl)
    except ValidationError as e:
        loc, msg = _first_error(e, ("workload",), _KNOWN_KEYS)
        raise w.error(loc, msg) from None
    if fm.jobs is not None and fm.numjobs is not None:
        raise w.error(("workload", "numjobs"), "give jobs or numjobs, not both")
    params: dict[str, Any] = {}
    for k in wl:  # in the order written
        if k in ("kind", "jobfile", "options"):
            continue
        params["jobs" if k == "numjobs" else k] = getattr(fm, k)
    jobfile, jobfile_text = "", ""
    if fm.jobfile:
        jobfile = os.path.normpath(os.path.join(base_dir, fm.jobfile))
        try:
            jobfile_text = Path(jobfile).read_text()
        except OSError as e:
            raise w.error(
                ("workload", "jobfile"), f"cannot read job file {_shown(jobfile)}: {e.strerror or e}"
            ) from None
        check_jobfile(jobfile_text, jobfile)
    elif "size" not in params and "filesize" not in params:
        raise w.error(
            ("workload",),
            'fio needs to know how much to write: add size (per job, e.g. size = "256M") or filesize',
        )
    workload = Workload("fio", params, dict(fm.options), jobfile, jobfile_text)

    bed = _bed_shape(m.bed, w)

    axes: list[Axis] = []
    for name, values in m.axes.items():
        ax = check_axis(name, values, w, ("axes", name))
        if any(a.name == ax.name for a in axes):
            raise w.error(("axes", name), f"axis {ax.name} is given twice")
        axes.append(ax)

    if m.probes:
        for i, pname in enumerate(m.probes):
            try:
                resolve(pname)
            except UserError as e:
                raise w.error(("probes", i), str(e)) from None
    shuffle: int | None
    if m.shuffle is True:
        shuffle = random.SystemRandom().randrange(1 << 31)
    elif m.shuffle is False:
        shuffle = None
    else:
        shuffle = m.shuffle
    return Plan(
        label=m.label or default_label,
        workload=workload,
        bed=bed,
        axes=tuple(axes),
        repeats=parse_repeat(m.repeat, what="repeat"),
        shuffle=shuffle,
        probes=tuple(m.probes),
        recipe=recipe,
        source=w.name if where is not None else (f"recipe {recipe}" if recipe else ""),
    )


def _bed_shape(b: BedModel, w: Where) -> BedShape:
    try:
        spec = BedSpec.parse(b.kind)
    except UserError as e:
        raise w.error(("bed", "kind"), str(e).replace("--bed ", "")) from None
    if spec.wipe:  # erasing what a device holds is asked for here, never by a file
        raise w.error(
            ("bed", "kind"),
            "a plan file cannot wipe a device: name it "
            f"device:{spec.path} and pass --wipe on the command line",
        )
    try:  # the guard and a dir's existence: for the bed the run uses (``--bed`` may replace it)
        check_fs_name(spec, b.fs)
    except UserError as e:
        raise w.error(("bed", "fs"), str(e).replace("--fs ", "")) from None
    return BedShape(
        kind=str(spec),
        fs=b.fs,
        size=_bytes(b.size) if b.size is not None else None,
        mkfs_opts=b.mkfs_opts,
        mount_opts=b.mount_opts,
    )


def _shown(path: str) -> str:
    """A path as one line of an error: quoted with escapes when it holds control characters."""
    return repr(path) if any(ord(c) < 32 for c in path) else path
