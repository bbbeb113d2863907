"""Plans: TOML files (or recipe-built dicts) naming a workload, a bed, axes and repeats.

Parsing validates with pydantic at the edge and turns every mistake into ONE UserError naming
the file, the line and the key. Axes expand as a cartesian product into points; points run
interleaved (a b a b …), one round after another, grouped by the bed shape they need. See
docs/plans.md for every key and the knob syntax.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import random
import re
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from .errors import UserError
from .knobs import Knob, KnobSession, check_exists, looks_like_knob, parse_knob
from .model import Point, Run
from .repeat import RepeatPolicy, as_policy, parse_repeat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from .beds import Bed
    from .repeat import Decider
    from .runner import Outcome, Partial, Progress, Task
    from .store import Store

MIB = 1 << 20
GIB = 1 << 30

# ------------------------------------------------------------------------------------------
# Edge models (pydantic): the shape of a plan file


def _flag(v: bool | int) -> int:
    if v not in (0, 1):
        raise ValueError("use 0 or 1 (or true/false)")
    return int(v)


def _size(v: int | str) -> int | str:
    from .units import parse_size

    if isinstance(v, str) and not v.strip().endswith("%"):
        try:
            parse_size(v)
        except UserError:
            raise ValueError(f"cannot read {v!r} as a size (examples: 4k, 1M, 256M, 2G)") from None
    elif isinstance(v, int) and v < 0:
        raise ValueError("a size must not be negative")
    return v


def _positive(v: int) -> int:
    if v < 1:
        raise ValueError("must be at least 1")
    return v


def _nonneg(v: int) -> int:
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _pct(v: int) -> int:
    if not 0 <= v <= 100:
        raise ValueError("is a percentage: 0 to 100")
    return v


def _repeat_text(v: str) -> str:
    try:
        parse_repeat(v)
    except UserError:
        raise ValueError('use a whole number, at least 1, or "auto" / "auto:MAX"') from None
    return v


def _nonempty(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be empty")
    return v


Flag = Annotated[StrictBool | StrictInt, AfterValidator(_flag)]
Size = Annotated[StrictInt | StrictStr, AfterValidator(_size)]
Text = StrictInt | StrictStr  # fio takes "10s" or 10; bs may be a range "4k-16k"
Positive = Annotated[StrictInt, AfterValidator(_positive)]
NonNeg = Annotated[StrictInt, AfterValidator(_nonneg)]
Pct = Annotated[StrictInt, AfterValidator(_pct)]
Name = Annotated[StrictStr, AfterValidator(_nonempty)]
RepeatText = Annotated[StrictStr, AfterValidator(_repeat_text)]  # "auto", "auto:12"
Scalar = StrictBool | StrictInt | StrictFloat | StrictStr
RW = Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim",
             "randtrim", "trimwrite"]

WORKLOAD_KINDS = ("fio",)
#: Axes that change the bed: points are grouped by the bed shape they need.
BED_AXES = ("fs", "mkfs", "mount", "bed_size")


class FioModel(BaseModel):
    """``[workload]`` with ``kind = "fio"``: fio parameters by fio's own names (``jobs`` is
    ``numjobs``), or ``jobfile``, plus ``options`` passed to fio verbatim."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Literal["fio"] = "fio"
    jobfile: Name | None = None
    rw: RW | None = None
    bs: Text | None = None
    size: Size | None = None
    filesize: Size | None = None
    direct: Flag | None = None
    ioengine: Name | None = None
    iodepth: Positive | None = None
    jobs: Positive | None = None
    numjobs: Positive | None = None
    nrfiles: Positive | None = None
    openfiles: Positive | None = None
    file_service_type: Name | None = None
    runtime: Text | None = None
    time_based: Flag | None = None
    ramp_time: Text | None = None
    rwmixwrite: Pct | None = None
    rwmixread: Pct | None = None
    end_fsync: Flag | None = None
    fsync: NonNeg | None = None
    fdatasync: NonNeg | None = None
    fallocate: Name | None = None
    create_on_open: Flag | None = None
    invalidate: Flag | None = None
    randrepeat: Flag | None = None
    norandommap: Flag | None = None
    thread: Flag | None = None
    options: dict[str, Scalar] = Field(default_factory=dict)


#: Workload parameters an axis (or ``--set``) may name; ``numjobs`` is spelled ``jobs``.
WORKLOAD_PARAMS: tuple[str, ...] = tuple(
    k for k in FioModel.model_fields if k not in ("kind", "jobfile", "options", "numjobs"))
#: Plan parameter name → fio option name, where they differ.
FIO_NAMES = {"jobs": "numjobs"}


class BedModel(BaseModel):
    """``[bed]``: where the I/O lands."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Name = "ram"
    fs: Name = "xfs"
    size: Size | None = None
    mkfs_opts: StrictStr = ""
    mount_opts: StrictStr = ""


class PlanModel(BaseModel):
    """The top level of a plan file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    label: Name | None = None
    repeat: Positive | RepeatText = 3
    shuffle: StrictBool | NonNeg | None = None
    workload: dict[str, Any]
    bed: BedModel = Field(default_factory=BedModel)
    axes: dict[str, Any] = Field(default_factory=dict)
    probes: list[StrictStr] = Field(default_factory=list)


_KNOWN_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): tuple(PlanModel.model_fields),
    ("workload",): tuple(FioModel.model_fields),
    ("bed",): tuple(BedModel.model_fields),
}
_FLAGS = ("direct", "time_based", "end_fsync", "create_on_open", "invalidate", "randrepeat",
          "norandommap", "thread")
_EXPECT: dict[str, str] = {
    **{k: "0 or 1 (or true/false)" for k in _FLAGS},
    **{k: "a size such as 4k, 256M or 2G" for k in ("size", "filesize", "bed_size")},
    **{k: "a number or a string" for k in ("bs", "runtime", "ramp_time")},
    **{k: "a whole number, at least 1" for k in ("iodepth", "jobs", "numjobs", "nrfiles",
                                                  "openfiles")},
    "repeat": 'a whole number, at least 1, or "auto" / "auto:MAX"',
    **{k: "a whole number, 0 or more" for k in ("fsync", "fdatasync")},
    **{k: "a whole number from 0 to 100" for k in ("rwmixwrite", "rwmixread")},
    **{k: "a string" for k in ("ioengine", "file_service_type", "fallocate", "jobfile",
                               "label", "kind", "fs", "mkfs_opts", "mount_opts", "mkfs",
                               "mount")},
    "shuffle": "a seed (a whole number, 0 or more) or true",
    "workload": "a table: [workload]",
    "bed": "a table: [bed]",
    "axes": "a table: [axes]",
    "probes": "a list of probe names, e.g. [\"cpu\", \"vmstat\"]",
    "options": "a table of fio options",
}


# ------------------------------------------------------------------------------------------
# Errors that name the file, the line and the key


class PlanError(UserError):
    """A mistake in a plan: where (file, line, key) and what."""

    def __init__(self, where: str, line: int | None, key: str, message: str) -> None:
        self.where, self.line, self.key, self.problem = where, line, key, message
        head = f"{where}:{line}" if line else where
        super().__init__(f"{head}: key {key}: {message}" if key else f"{head}: {message}")


def _fmt_key(loc: Sequence[str | int]) -> str:
    parts = []
    for p in loc:
        if isinstance(p, int):
            continue
        parts.append(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"')
    return ".".join(parts)


_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEYPART = rf"(?:{_QUOTED}|{_BARE})"
_DOTTED = rf"{_KEYPART}(?:\s*\.\s*{_KEYPART})*"
_HEADER_RE = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_KEY_RE = re.compile(rf"^\s*({_DOTTED})\s*=")


def _split_dotted(text: str) -> tuple[str, ...]:
    out = []
    for m in re.finditer(_KEYPART, text):
        s = m.group(0)
        if s[0] in "\"'":
            s = s[1:-1]
            if m.group(0)[0] == '"':
                s = s.encode().decode("unicode_escape")
        out.append(s)
    return tuple(out)


def key_line(text: str, loc: Sequence[str | int]) -> int | None:
    """The line (1-based) where the key at ``loc`` is written in TOML ``text``: an exact
    ``key =`` line if there is one, else the line of the nearest enclosing table or key."""
    want = tuple(str(p) for p in loc if not isinstance(p, int))
    table: tuple[str, ...] = ()
    best: tuple[int, int] | None = None  # (matched depth, line)
    in_multiline = False
    for n, line in enumerate(text.splitlines(), 1):
        was_in = in_multiline
        if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
            in_multiline = not in_multiline
        if was_in:
            continue
        m = _HEADER_RE.match(line)
        if m:
            table = _split_dotted(m.group(1))
            path = table
        else:
            k = _KEY_RE.match(line)
            if not k:
                continue
            path = table + _split_dotted(k.group(1))
        if path == want:
            return n
        depth = 0
        for a, b in zip(path, want, strict=False):
            if a != b:
                break
            depth += 1
        if depth == len(path) and depth > 0 and (best is None or depth > best[0]):
            best = (depth, n)
    return best[1] if best else None


@dataclass(frozen=True)
class Where:
    """Where plan input came from, to name it in errors: a file with its text, or ``--set``."""

    name: str
    text: str = ""

    def error(self, loc: Sequence[str | int], message: str) -> PlanError:
        line = key_line(self.text, loc) if self.text else None
        return PlanError(self.name, line, _fmt_key(loc), message)


Loc = tuple[str | int, ...]


def _first_error(e: ValidationError, prefix: Loc,
                 known: Mapping[tuple[str, ...], tuple[str, ...]]) -> tuple[Loc, str]:
    """The loc and a plain message of the first problem pydantic found."""
    errs = e.errors()
    first = errs[0]
    loc = tuple(first["loc"])
    # Union members add their tag to the loc (…, "bs", "int"): cut the loc to the field.
    depth = 2 if loc[:1] in (("bed",), ("options",), ("probes",)) else 1
    field_loc = loc[:depth]
    same = [x for x in errs if tuple(x["loc"])[:depth] == field_loc]
    name = str(field_loc[-1]) if field_loc else ""
    full = prefix + field_loc
    if first["type"] == "extra_forbidden":
        parent = tuple(str(p) for p in full[:-1])
        keys = known.get(parent, ())
        close = difflib.get_close_matches(name, keys, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        more = ("; other fio options go in [workload.options]"
                if parent == ("workload",) else "")
        return full, f"unknown key: {hint}known keys: {', '.join(keys)}{more}"
    if first["type"] == "missing":
        return full, f"missing: {_EXPECT.get(name, 'required')}"
    for x in same:
        if x["type"] == "value_error":
            return full, f"{x['msg'].removeprefix('Value error, ')} (got {x['input']!r})"
    for x in same:
        if x["type"] == "literal_error":
            return full, f"{x['msg']} (got {x['input']!r})"
    expect = _EXPECT.get(name)
    if expect is None and len(full) >= 2 and full[-2] == "options":
        expect = "a number, a string or true/false"
    return full, f"expected {expect or first['msg']} (got {first['input']!r})"


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

    def describe(self) -> str:
        from .units import fmt_bytes

        out = [self.kind]
        if self.kind in ("ram", "loop"):
            out.append(self.fs)
        if self.size:
            out.append(fmt_bytes(self.size))
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
class Axis:
    """One axis: a name (workload parameter, bed axis or knob) and its values, in order."""

    name: str
    values: tuple[Any, ...]

    @property
    def role(self) -> Literal["workload", "bed", "knob"]:
        if self.name in BED_AXES:
            return "bed"
        if self.name in WORKLOAD_PARAMS:
            return "workload"
        return "knob"


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

    @property
    def repeat(self) -> int:
        """Runs per point (fixed), or the most runs per point (``repeat = "auto"``)."""
        return self.repeats.max_runs

    def axis(self, name: str) -> Axis | None:
        return next((a for a in self.axes if a.name == name), None)

    def with_overrides(self, *, sets: Sequence[tuple[str, Sequence[Any]]] = (),
                       label: str | None = None, repeat: RepeatPolicy | int | None = None,
                       bed: str | None = None, quick: bool = False,
                       target: float | None = None) -> Plan:
        """The plan with command-line overrides: ``--set`` axes replace (or add to) the plan's,
        ``--label``, ``--repeat``, ``--target`` (of auto), ``--bed``; ``--quick`` means one
        repeat unless given."""
        axes = list(self.axes)
        for name, values in sets:
            text = f"--set {name}={','.join(str(v) for v in values)}"
            ax = check_axis(name, list(values), Where(text), ())
            at = next((i for i, a in enumerate(axes) if a.name == ax.name), None)
            if at is None:
                axes.append(ax)
            else:
                axes[at] = ax
        policy = as_policy(repeat) if repeat is not None else (
            RepeatPolicy(1) if quick else self.repeats)
        if target is not None:
            policy = policy.with_target(target)
        shape = self.bed
        if bed is not None:
            from .beds import BedSpec

            shape = replace(shape, kind=str(BedSpec.parse(bed)))
        return replace(self, axes=tuple(axes), label=label or self.label, bed=shape,
                       repeats=policy)

    def expand(self) -> list[PlanPoint]:
        """The cartesian product of the axes, bed axes outermost (so points sharing a bed are
        neighbours), then the others in the order written, the last varying fastest."""
        axes = [a for a in self.axes if a.role == "bed"] + [a for a in self.axes
                                                             if a.role != "bed"]
        names = [a.name for a in axes]
        base: dict[str, Any] = {"kind": self.workload.kind, **self.workload.params}
        if self.workload.options:
            base["options"] = dict(self.workload.options)
        if self.workload.jobfile:
            base["jobfile"] = os.path.basename(self.workload.jobfile)
            base["jobfile_sha1"] = hashlib.sha1(
                self.workload.jobfile_text.encode()).hexdigest()[:12]
        out = []
        for combo in product(*[a.values for a in axes]):
            values = dict(zip(names, combo, strict=True))
            shape = self.bed
            if "fs" in values:
                shape = replace(shape, fs=str(values["fs"]))
            if "mkfs" in values:
                shape = replace(shape, mkfs_opts=" ".join(
                    x for x in (self.bed.mkfs_opts, str(values["mkfs"])) if x))
            if "mount" in values:
                shape = replace(shape, mount_opts=",".join(
                    x for x in (self.bed.mount_opts, str(values["mount"])) if x))
            if "bed_size" in values:
                shape = replace(shape, size=_bytes(values["bed_size"]))
            fio = {**self.workload.params,
                   **{k: v for k, v in values.items() if k in WORKLOAD_PARAMS}}
            knobs = tuple((parse_knob(k), v) for k, v in values.items()
                          if k not in BED_AXES and k not in WORKLOAD_PARAMS)
            # Axis values come last so that they show in the order of the axes.
            params = {k: v for k, v in base.items() if k not in values}
            params.update(values)
            out.append(PlanPoint(Point(self.recipe, params), values, fio, shape, knobs))
        return out

    def describe(self) -> dict[str, Any]:
        """The plan as JSON (stored with every run's env and printed by ``--format json``)."""
        return {"label": self.label, "recipe": self.recipe, "source": self.source,
                "repeat": self.repeats.spec() if self.repeats.auto else self.repeat,
                **({"target": self.repeats.target} if self.repeats.auto else {}),
                "shuffle": self.shuffle, "probes": list(self.probes),
                "workload": {"kind": self.workload.kind, **self.workload.params,
                             **({"options": dict(self.workload.options)}
                                if self.workload.options else {}),
                             **({"jobfile": self.workload.jobfile}
                                if self.workload.jobfile else {})},
                "bed": {"kind": self.bed.kind, "fs": self.bed.fs, "size": self.bed.size,
                        "mkfs_opts": self.bed.mkfs_opts, "mount_opts": self.bed.mount_opts},
                "axes": {a.name: list(a.values) for a in self.axes}}


def _bytes(v: Any) -> int:
    from .units import parse_size

    return parse_size(v if isinstance(v, (int, str)) else str(v))


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
    return plan_from_doc(doc, where=Where(str(path), text), base_dir=str(p.parent),
                         default_label=p.stem)


def plan_from_doc(doc: Mapping[str, Any], *, where: Where | None = None, base_dir: str = ".",
                  default_label: str = "plan", recipe: str = "") -> Plan:
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
        raise w.error(("workload", "kind"),
                      f"unknown workload kind {kind!r}: use {', '.join(WORKLOAD_KINDS)}")
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
            raise w.error(("workload", "jobfile"),
                          f"cannot read job file {jobfile}: {e.strerror or e}") from None
        check_jobfile(jobfile_text, jobfile)
    elif "size" not in params and "filesize" not in params:
        raise w.error(("workload",), "fio needs to know how much to write: add size "
                      "(per job, e.g. size = \"256M\") or filesize")
    workload = Workload("fio", params, dict(fm.options), jobfile, jobfile_text)

    bed = _bed_shape(m.bed, w)

    axes: list[Axis] = []
    for name, values in m.axes.items():
        ax = check_axis(name, values, w, ("axes", name))
        if any(a.name == ax.name for a in axes):
            raise w.error(("axes", name), f"axis {ax.name} is given twice")
        axes.append(ax)

    if m.probes:
        from .probes import resolve

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
    return Plan(label=m.label or default_label, workload=workload, bed=bed, axes=tuple(axes),
                repeats=parse_repeat(m.repeat, what="repeat"), shuffle=shuffle,
                probes=tuple(m.probes), recipe=recipe,
                source=w.name if where is not None else (f"recipe {recipe}" if recipe else ""))


def _bed_shape(b: BedModel, w: Where) -> BedShape:
    from .beds import BedSpec, check_fs

    try:
        spec = BedSpec.parse(b.kind)
    except UserError as e:
        raise w.error(("bed", "kind"), str(e).replace("--bed ", "")) from None
    try:
        check_fs(spec, b.fs)
    except UserError as e:
        raise w.error(("bed", "fs"), str(e).replace("--fs ", "")) from None
    return BedShape(kind=str(spec), fs=b.fs, size=_bytes(b.size) if b.size is not None else None,
                    mkfs_opts=b.mkfs_opts, mount_opts=b.mount_opts)


def check_axis(name: str, values: Any, w: Where, loc: tuple[str | int, ...]) -> Axis:
    """Validate one axis (from ``[axes]`` or ``--set``): its name, and every value by the type
    of what it sets. Errors name ``w`` and ``loc``."""
    if not isinstance(values, list):
        values = [values]
    if not values:
        raise w.error(loc, "empty axis: give at least one value, e.g. jobs = [1, 2]")
    canon = "jobs" if name == "numjobs" else name
    out: list[Any] = []
    for v in values:
        if isinstance(v, (dict, list)) or v is None:
            raise w.error(loc, f"axis values are numbers, strings or true/false (got {v!r})")
    if canon in WORKLOAD_PARAMS:
        for v in values:
            try:
                fm = FioModel.model_validate({canon: v})
            except ValidationError as e:
                _, msg = _first_error(e, (), {})
                raise w.error(loc, msg) from None
            out.append(getattr(fm, canon))
    elif canon in BED_AXES:
        from .beds import FILESYSTEMS

        for v in values:
            if canon == "bed_size":
                try:
                    _size(v)
                    if isinstance(v, bool) or not isinstance(v, (int, str)):
                        raise ValueError(f"expected {_EXPECT['bed_size']}")
                except ValueError as e:
                    raise w.error(loc, f"{e} (got {v!r})") from None
            elif not isinstance(v, str):
                raise w.error(loc, f"expected {_EXPECT[canon]} (got {v!r})")
            elif canon == "fs" and v not in FILESYSTEMS:
                raise w.error(loc, f"unknown filesystem {v!r}: use {', '.join(FILESYSTEMS)}")
            out.append(v)
    elif looks_like_knob(canon):
        try:
            knob = parse_knob(canon)
            check_exists(knob)
        except UserError as e:
            raise w.error(loc, str(e)) from None
        for v in values:
            if knob.kind == "xfs":
                try:
                    _size(v)
                    if isinstance(v, bool) or not isinstance(v, (int, str)):
                        raise ValueError("give a size such as 4k, 1m or 0")
                except ValueError as e:
                    raise w.error(loc, f"{e} (got {v!r})") from None
            elif isinstance(v, float):
                raise w.error(loc, f"knob values are whole numbers or strings (got {v!r})")
            out.append(int(v) if isinstance(v, bool) else v)
        canon = str(knob)
    else:
        choices = list(WORKLOAD_PARAMS) + list(BED_AXES)
        close = difflib.get_close_matches(canon, choices, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise w.error(loc, f"unknown axis {name!r}: {hint}an axis is a workload parameter "
                      f"({', '.join(WORKLOAD_PARAMS[:6])} …), one of {', '.join(BED_AXES)}, "
                      "or a knob: sysctl:NAME, sysfs:ATTR, sysfs:/sys/PATH, xfs:extsize")
    seen: list[Any] = []
    for v in out:
        if v in seen:
            raise w.error(loc, f"value {v!r} is given twice")
        seen.append(v)
    return Axis(canon, tuple(out))


# ------------------------------------------------------------------------------------------
# --set


def _scalar(s: str) -> Any:
    s = s.strip()
    if re.fullmatch(r"[+-]?\d+", s):
        return int(s)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?", s):
        return float(s)
    if s in ("true", "false"):
        return s == "true"
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``jobs=1,2,4`` → ("jobs", [1, 2, 4]); ``'mount=["noatime,lazytime", "relatime"]'``
    (a TOML array) for values that contain commas. Numbers become numbers."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise UserError(f"--set {text!r}: write AXIS=V1,V2, e.g. --set jobs=1,2,4 or "
                        "--set sysctl:vm.dirty_ratio=5,10")
    raw = raw.strip()
    if raw.startswith("["):
        try:
            values = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"--set {text!r}: not a TOML array: {e}") from None
    else:
        values = [_scalar(x) for x in raw.split(",") if x.strip()]
    if not values:
        raise UserError(f"--set {text!r}: empty axis: give at least one value")
    return name, list(values)


# ------------------------------------------------------------------------------------------
# fio job files


_SECTION_RE = re.compile(r"^\s*\[([^\]]+)\]\s*(?:[;#].*)?$")


def _opt_line(k: str, v: Any) -> str:
    if isinstance(v, bool):
        v = int(v)
    return f"{k}={v}"


def _fio_value(v: Any) -> Any:
    return int(v) if isinstance(v, bool) else v


def check_jobfile(text: str, path: str) -> None:
    """A user's .fio file must have a job section and must not name devices: a plan's
    workload runs on the bed."""
    sections = 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        m = _SECTION_RE.match(s)
        if m:
            sections += m.group(1).strip() != "global"
            continue
        key, _, value = s.partition("=")
        if key.strip() == "filename" and any(x.strip().startswith("/dev/")
                                             for x in value.split(":")):
            raise PlanError(path, n, "filename", f"{value.strip()} is a device: a plan's job "
                            "file runs on the bed; name a file (it is created in the bed)")
    if not sections:
        raise PlanError(path, None, "", "no job section: add one, e.g. [job1]")


def retarget_jobfile(text: str, directory: str, overrides: Mapping[str, Any]) -> str:
    """A user's job file pointed at the bed: ``directory`` set in [global] (and dropped from
    job sections), ``filename`` entries made relative to it, ``overrides`` (fio names) set in
    [global] and every job section, replacing the file's own lines for them."""
    ov = {k: _fio_value(v) for k, v in overrides.items()}
    out: list[str] = []
    has_global = False
    for line in text.splitlines():
        s = line.strip()
        m = _SECTION_RE.match(s)
        if m:
            out.append(s)
            if m.group(1).strip() == "global":
                has_global = True
                out.append(f"directory={directory}")
            out += [_opt_line(k, v) for k, v in ov.items()]
            continue
        if not s or s[0] in ";#":
            out.append(line)
            continue
        key, eq, value = s.partition("=")
        key = key.strip()
        if key == "directory" or key in ov:
            out.append(f"; iowall: {s}")
            continue
        if key == "filename" and eq:
            names = [os.path.basename(x.strip()) or x.strip() for x in value.split(":")]
            out.append(f"filename={':'.join(names)}")
            continue
        out.append(line)
    if not has_global:
        out = ["[global]", f"directory={directory}", *[_opt_line(k, v) for k, v in ov.items()],
               ""] + out
    return "\n".join(out) + "\n"


def fio_job(pp: PlanPoint, workload: Workload, directory: str) -> Any:
    """The fio job (a JobFile, or the retargeted text of the user's job file) of a point."""
    from .workloads.fio import JobFile, JobSection

    params = {FIO_NAMES.get(k, k): _fio_value(v) for k, v in pp.fio.items()}
    if workload.jobfile:
        return retarget_jobfile(workload.jobfile_text, directory,
                                {**params, **dict(workload.options)})
    g: dict[str, Any] = {"directory": directory}
    g.update(params)
    g["group_reporting"] = 1
    g.update({k: _fio_value(v) for k, v in workload.options.items()})
    return JobFile(g, [JobSection("plan", {})])


def point_bytes(fio: Mapping[str, Any]) -> int | None:
    """Bytes a built fio point lays down in the bed (size per job × jobs), if known."""
    try:
        jobs = int(fio.get("jobs", 1))
        if "size" in fio:
            return _bytes(fio["size"]) * jobs
        if "filesize" in fio:
            return _bytes(fio["filesize"]) * int(fio.get("nrfiles", 1)) * jobs
    except (UserError, ValueError):
        return None
    return None


def auto_bed_size(points: Sequence[PlanPoint], workload: Workload) -> int:
    """A bed big enough for the largest point: 1.5x its bytes + 256 MiB, at least 1 GiB; for a
    job file or a size iowall cannot compute, the beds' default (25% of RAM)."""
    from .beds import default_size

    sizes = [None if workload.jobfile else point_bytes(pp.fio) for pp in points]
    if not sizes or any(s is None for s in sizes):
        return default_size()
    need = int(max(s or 0 for s in sizes) * 1.5) + 256 * MIB
    return max(GIB, (need + MIB - 1) // MIB * MIB)


# ------------------------------------------------------------------------------------------
# Order


def interleave(points: Sequence[PlanPoint], repeat: int,
               seed: int | None = None) -> list[tuple[int, int]]:
    """``(round, point index)`` in execution order: every round runs every point once (a b a b
    …, never all of a then all of b); points needing the same bed shape run together within a
    round so that each bed is provisioned at most once per round. With a seed, the order of
    the bed groups and of the points within each group is shuffled every round (recorded)."""
    return list(rounds(points, repeat, seed))


def rounds(points: Sequence[PlanPoint], repeat: int, seed: int | None = None,
           pending: Callable[[int], bool] | None = None) -> Iterator[tuple[int, int]]:
    """``interleave`` as a generator: each round is formed when the one before has been run,
    of the points for which ``pending(index)`` is then true (``--repeat auto``: the points
    not yet decided); it ends early when no point is pending."""
    groups: dict[BedShape, list[int]] = {}
    for i, pp in enumerate(points):
        groups.setdefault(pp.shape, []).append(i)
    rng = random.Random(seed)
    for r in range(repeat):
        gs = [[i for i in g if pending is None or pending(i)] for g in groups.values()]
        gs = [g for g in gs if g]
        if not gs:
            return
        if seed is not None:
            rng.shuffle(gs)
            for g in gs:
                rng.shuffle(g)
        for g in gs:
            for i in g:
                yield r, i


# ------------------------------------------------------------------------------------------
# Execution


@dataclass
class _State:
    bed: Bed | None = None
    knobs: dict[str, str] = field(default_factory=dict)
    env: dict[str, Any] | None = None
    can_drop: bool = True


@dataclass(frozen=True)
class PlanResult:
    """What a plan run produced: its points, every stored run, the beds, notes."""

    plan: Plan
    points: tuple[PlanPoint, ...]
    runs: tuple[Run, ...]
    batch: str
    beds: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    kernel: str = ""
    #: how each point's repeats went (``Schedule.decider``): run counts and decisions
    decider: Decider | None = None

    def repeat_lines(self) -> list[str]:
        """``3 repeats per point`` or ``repeat auto (…): 6–10 runs per point`` and the points
        that hit the maximum undecided, named as in the table."""
        from .repeat import replay, summary

        d = self.decider or replay(self.runs, self.plan.repeats)
        return summary(self.plan.repeats, d, {pp.point.key(): pp.title() for pp in self.points})


def _make_task(pp: PlanPoint, plan: Plan, state: _State, extra: dict[str, Any]) -> Task:
    from .runner import Outcome, Task
    from .signals import shielded
    from .sysinfo import drop_caches, environment
    from .workloads.fio import FioFailure, run_fio

    def execute(partial: Partial) -> Outcome:
        state.knobs, state.env = {}, None
        bed = state.bed
        assert bed is not None
        notes: list[str] = []
        with KnobSession(bed) as ks:
            for knob, value in pp.knobs:
                ks.set(knob, value)
            in_force = dict(ks.in_force)
            if "mkfs" in pp.values:
                in_force["mkfs"] = str(bed.facts.get("mkfs_opts", ""))
            if "mount" in pp.values:
                in_force["mount"] = str(bed.facts.get("mount_opts", ""))
            state.knobs = in_force
            workdir = os.path.join(bed.path, "iowall-plan")
            with shielded():
                shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
            if state.can_drop and not drop_caches():
                state.can_drop = False
            if not state.can_drop:
                notes.append("caches not dropped before the point (needs root)")
            state.env = environment(extra)  # read while the knobs are in force
            job = fio_job(pp, plan.workload, workdir)
            try:
                res = run_fio(job)
            except FioFailure as e:
                partial.artifacts.extend(e.result.artifacts())
                raise
            with shielded():
                shutil.rmtree(workdir, ignore_errors=True)
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series,
                       notes=tuple(notes))

    weight = float(point_bytes(pp.fio) or GIB) / GIB + 0.2
    return Task(pp.point, execute, weight=weight, title=pp.title())


def run_plan(plan: Plan, store: Store, progress: Progress) -> PlanResult:
    """Run every point of the plan by ``plan.repeats`` (fixed rounds, or ``auto`` rounds over
    the points not yet decided), interleaved, and store every run.

    Beds: points are grouped by bed shape; while consecutive points share a shape they share
    one bed (a one-shape plan provisions its bed once), otherwise the bed is torn down and the
    next shape provisioned, so at most one bed exists at a time and nothing stays mounted.
    Knobs are applied for each point and restored right after it (journaled before writing).
    """
    import uuid

    from .beds import BedSpec, check_fs, provision
    from .probes import ProbeContext
    from .probes import resolve as resolve_probes
    from .runner import Schedule
    from .sysinfo import environment
    from .workloads.fio import fio_version

    fio_ver = ".".join(map(str, fio_version()))
    points = plan.expand()
    for pp in points:
        spec = BedSpec.parse(pp.shape.kind)
        check_fs(spec, pp.shape.fs)
        for knob, _ in pp.knobs:
            if knob.kind == "xfs" and (spec.kind not in ("ram", "loop") or pp.shape.fs != "xfs"):
                raise UserError(f"knob {knob} needs an xfs bed, but point {pp.title()} runs on "
                                f"{pp.shape.describe()}")
            if knob.needs_bed and spec.kind not in ("ram", "loop"):
                raise UserError(f"knob {knob} needs a bed with a block device (ram or loop), "
                                f"not {spec}")
    if any(pp.knobs for pp in points) and os.geteuid() != 0:
        raise UserError("knobs (sysctl, sysfs, xfs) need root: run iowall as root")
    sizes: dict[BedShape, int] = {}
    for shape in dict.fromkeys(pp.shape for pp in points):
        sizes[shape] = shape.size or auto_bed_size(
            [pp for pp in points if pp.shape == shape], plan.workload)

    state = _State(can_drop=os.geteuid() == 0)
    batch = str(uuid.uuid4())
    extra = {"fio_version": fio_ver, "plan": {**plan.describe(), "batch": batch}}
    tasks = [_make_task(pp, plan, state, extra) for pp in points]

    def env() -> dict[str, Any]:
        return {**(state.env or environment(extra)), "knobs": dict(state.knobs)}

    def bed_facts() -> dict[str, Any]:
        return dict(state.bed.facts) if state.bed is not None else {}

    probe_classes = resolve_probes(",".join(plan.probes)) if plan.probes else []
    sched = Schedule(store=store, label=plan.label, env=env, bed=bed_facts, progress=progress,
                     batch=batch, shuffle_seed=plan.shuffle, probes=probe_classes)
    policy = sched.start(plan.repeats)
    decider = sched.decider
    assert decider is not None
    keys = [pp.point.key() for pp in points]
    order = rounds(points, policy.max_runs, plan.shuffle,
                   pending=lambda i: not decider.done(keys[i]))
    beds: dict[BedShape, Mapping[str, Any]] = {}
    notes: list[str] = []
    progress.begin(sum(t.weight for t in tasks) * policy.max_runs)
    stack = contextlib.ExitStack()
    current: BedShape | None = None
    try:
        for r, i in order:
            pp = points[i]
            if pp.shape != current:
                state.bed, current = None, None
                stack.close()
                stack = contextlib.ExitStack()
                state.bed = stack.enter_context(provision(
                    BedSpec.parse(pp.shape.kind), fs=pp.shape.fs, size_bytes=sizes[pp.shape],
                    mkfs_opts=pp.shape.mkfs_opts, mount_opts=pp.shape.mount_opts))
                current = pp.shape
                beds[pp.shape] = dict(state.bed.facts)
                if probe_classes:
                    b = state.bed
                    sched.probe_ctx = ProbeContext(
                        devices=tuple(b.devices), devnos=(b.devno,) if b.devno else (),
                        workdir=b.private_dir("probe-") if os.geteuid() == 0 else b.path)
                notes += [n for n in state.bed.notes if n not in notes]
            sched.run_one(tasks[i], r)
    finally:
        try:
            progress.end()
        finally:
            state.bed = None
            stack.close()
    if len(beds) > 1:
        notes.append(f"{len(beds)} bed shapes: each was provisioned afresh once per round")
    notes.append("caches are dropped (sync; drop_caches=3) before every point; points run "
                 "interleaved, one round after another"
                 + (f", shuffled with seed {plan.shuffle}" if plan.shuffle is not None else ""))
    if policy.auto:
        from .repeat import pct

        notes.append(f"repeat auto: each round runs the points not yet decided; a point stops "
                     f"when the {policy.confidence:.0%} order-statistic interval of the median "
                     f"of its throughput is within ±{pct(policy.target)} or at "
                     f"{policy.max_runs} runs (why: the note on its last run)")
    return PlanResult(plan, tuple(points), tuple(sched.runs), batch, tuple(beds.values()),
                      tuple(notes), os.uname().release, decider)


# ------------------------------------------------------------------------------------------
# Summary table (pure)


@dataclass(frozen=True)
class Row:
    """One point's runs and the median of each metric over its ok runs."""

    pp: PlanPoint
    runs: tuple[Run, ...]
    medians: Mapping[str, float]
    units: Mapping[str, str]
    rel_range: Mapping[str, float]

    @property
    def ok(self) -> int:
        return sum(r.status == "ok" for r in self.runs)


def summarise(points: Sequence[PlanPoint], runs: Sequence[Run]) -> list[Row]:
    """Per point (in plan order): its runs, medians and relative range over the ok runs."""
    rows = []
    for pp in points:
        mine = tuple(r for r in runs if r.point.key() == pp.point.key())
        ok = [r for r in mine if r.status == "ok"]
        vals: dict[str, list[float]] = {}
        units: dict[str, str] = {}
        for r in ok:
            for m in r.metrics:
                vals.setdefault(m.name, []).append(m.value)
                units[m.name] = m.unit
        med = {k: statistics.median(v) for k, v in vals.items()}
        rng = {k: (max(v) - min(v)) / med[k] if med[k] else 0.0
               for k, v in vals.items() if len(v) > 1}
        rows.append(Row(pp, mine, med, units, rng))
    return rows


def _fmt_iops(v: float) -> str:
    return f"{v:.0f}" if v < 10000 else f"{v / 1000:.1f}k"


def _fmt_lat(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def id_ranges(ids: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` → ``1-3, 7``."""
    out: list[str] = []
    xs = sorted(set(ids))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ", ".join(out)


def table(rows: Sequence[Row], axes: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells: one column per axis, then per direction with data the median
    bandwidth (± relative range over repeats), IOPS and p99 completion latency; ok runs."""
    from .units import fmt_rate

    dirs = [d for d in ("read", "write", "trim")
            if any(f"{d}_bw_bytes_per_s" in r.medians for r in rows)]
    spread = any(r.rel_range for r in rows)
    headers = list(axes) or ["point"]
    for d in dirs:
        headers += [f"{d} bw"] + (["±"] if spread else []) + [f"{d} IOPS", f"{d} p99"]
    headers.append("ok")
    cells = []
    for r in rows:
        line = [str(r.pp.values.get(a, "")) for a in axes] or [r.pp.title()]
        for d in dirs:
            bw = r.medians.get(f"{d}_bw_bytes_per_s")
            line.append(fmt_rate(bw) if bw is not None else "-")
            if spread:
                rr = r.rel_range.get(f"{d}_bw_bytes_per_s")
                line.append(f"{rr * 50:.0f}%" if rr is not None else "")
            io = r.medians.get(f"{d}_iops")
            line.append(_fmt_iops(io) if io is not None else "-")
            p99 = r.medians.get(f"{d}_clat_p99_s")
            line.append(_fmt_lat(p99) if p99 is not None else "-")
        line.append(f"{r.ok}/{len(r.runs)}")
        cells.append(line)
    return headers, cells


def render_text(res: PlanResult, *, markdown: bool = False) -> str:
    """The plan's table (medians over repeats), run ids and notes, ready for a mail."""
    from .report.table import md_table, text_table
    from .units import fmt_bytes

    rows = summarise(res.points, res.runs)
    headers, cells = table(rows, [a.name for a in res.plan.axes])
    repeat = res.repeat_lines()
    left = max(1, len(res.plan.axes))
    bed = res.beds[0] if res.beds else {}
    bed_desc = " ".join(str(x) for x in (bed.get("kind", res.plan.bed.kind), bed.get("fs", ""),
                                          fmt_bytes(bed.get("image_bytes", 0))
                                          if bed.get("image_bytes") else "") if x)
    name = res.plan.recipe + (f"  label {res.plan.label}"
                              if res.plan.recipe != f"plan:{res.plan.label}" else "")
    head = [f"{name}  ({res.plan.source})" if res.plan.source else name,
            f"{res.plan.workload.describe()}  on {bed_desc}  kernel {res.kernel}",
            f"{repeat[0]}, interleaved; medians over the ok runs"
            + ("; ± is half the range over repeats" if "±" in headers else ""), *repeat[1:]]
    ids = [r.id for r in res.runs if r.id is not None]
    tail = [f"runs {id_ranges(ids)}  (iowall show RUN)  batch {res.batch}"]
    bad = [r for r in res.runs if r.status != "ok"]
    for r in bad[:5]:
        tail.append(f"run {r.id} {r.status}: {r.point.describe()}: {r.error}")
    if markdown:
        body = md_table(headers, cells, left=left)
        notes = "\n".join(f"- {n}" for n in res.notes)
        return "\n".join([f"**{head[0]}**", "", *head[1:], "", body, "", *tail, "",
                          notes]).rstrip() + "\n"
    body = text_table(headers, cells, left=left)
    out = head + ["", body, ""] + tail
    if res.notes:
        out += ["", "notes"] + [f"  - {n}" for n in res.notes]
    return "\n".join(out) + "\n"


def table_json(res: PlanResult) -> list[dict[str, Any]]:
    """The table as JSON: per point its axis values, params, run ids and medians."""
    out = []
    for r in summarise(res.points, res.runs):
        out.append({"point": dict(r.pp.values), "params": dict(r.pp.point.params),
                    "run_ids": [x.id for x in r.runs], "ok": r.ok, "runs": len(r.runs),
                    "median": {k: {"value": v, "unit": r.units.get(k, "")}
                               for k, v in sorted(r.medians.items())}})
    return out
