"""The shape of a plan file, checked with pydantic at the edge, and errors that name the file,
the line and the key of every mistake (``PlanError``, ``Where``, ``key_line``)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

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

from ..measure.repeat import parse_repeat
from ..vocab.errors import PlanError, UserError
from ..vocab.units import parse_size

# ------------------------------------------------------------------------------------------
# Edge models (pydantic): the shape of a plan file


def _flag(v: bool | int) -> int:
    if v not in (0, 1):
        raise ValueError("use 0 or 1 (or true/false)")
    return int(v)


#: The largest size fio takes (an unsigned 64-bit byte count), and the largest count (jobs,
#: iodepth, files: fio's unsigned int; repeats): beyond them a plan fails later, in arithmetic.
MAX_BYTES = 2**63 - 1
MAX_COUNT = 2**31 - 1


def _size(v: int | str) -> int | str:
    n = v
    if isinstance(v, str) and not v.strip().endswith("%"):
        try:
            n = parse_size(v)
        except UserError:
            raise ValueError(f"cannot read {v!r} as a size (examples: 4k, 1M, 256M, 2G)") from None
    elif isinstance(v, int) and v < 0:
        raise ValueError("a size must not be negative")
    if isinstance(n, int) and n > MAX_BYTES:
        raise ValueError(f"a size must be below 8 EiB ({MAX_BYTES} bytes)")
    return v


def _positive(v: int) -> int:
    if v < 1:
        raise ValueError("must be at least 1")
    if v > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT}")
    return v


def _nonneg(v: int) -> int:
    if v < 0:
        raise ValueError("must not be negative")
    if v > MAX_BYTES:
        raise ValueError(f"must be at most {MAX_BYTES}")
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
RW = Literal[
    "read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite"
]

WORKLOAD_KINDS = ("fio",)
#: Axes that change the bed: points are grouped by the bed shape they need.
BED_AXES = ("fs", "mkfs", "mount", "bed_size", "fs_block")


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
    #: buffered, uncached (RWF_DONTCACHE) or direct: sets direct (and uncached) for fio, or
    #: runs the point with iowall-engine where fio cannot pass RWF_DONTCACHE
    mode: Literal["buffered", "uncached", "direct"] | None = None
    options: dict[str, Scalar] = Field(default_factory=dict)


#: Workload parameters an axis (or ``--set``) may name; ``numjobs`` is spelled ``jobs``.
WORKLOAD_PARAMS: tuple[str, ...] = tuple(
    k for k in FioModel.model_fields if k not in ("kind", "jobfile", "options", "numjobs")
)


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
_FLAGS = (
    "direct",
    "time_based",
    "end_fsync",
    "create_on_open",
    "invalidate",
    "randrepeat",
    "norandommap",
    "thread",
)
_EXPECT: dict[str, str] = {
    **{k: "0 or 1 (or true/false)" for k in _FLAGS},
    **{k: "a size such as 4k, 256M or 2G" for k in ("size", "filesize", "bed_size")},
    **{k: "a number or a string" for k in ("bs", "runtime", "ramp_time")},
    **{k: "a whole number, at least 1" for k in ("iodepth", "jobs", "numjobs", "nrfiles", "openfiles")},
    "repeat": 'a whole number, at least 1, or "auto" / "auto:MAX"',
    **{k: "a whole number, 0 or more" for k in ("fsync", "fdatasync")},
    **{k: "a whole number from 0 to 100" for k in ("rwmixwrite", "rwmixread")},
    **{
        k: "a string"
        for k in (
            "ioengine",
            "file_service_type",
            "fallocate",
            "jobfile",
            "label",
            "kind",
            "fs",
            "mkfs_opts",
            "mount_opts",
            "mkfs",
            "mount",
        )
    },
    "mode": "buffered, uncached or direct",
    "fs_block": "an XFS block size such as 4k, 16k or 64k",
    "shuffle": "a seed (a whole number, 0 or more) or true",
    "workload": "a table: [workload]",
    "bed": "a table: [bed]",
    "axes": "a table: [axes]",
    "probes": 'a list of probe names, e.g. ["cpu", "vmstat"]',
    "options": "a table of fio options",
}


# ------------------------------------------------------------------------------------------
# Errors that name the file, the line and the key


def _fmt_key(loc: Sequence[str | int]) -> str:
    parts = []
    for p in loc:
        if isinstance(p, int):
            continue
        # quoted as TOML writes it, escapes included: a key with a newline stays one line
        parts.append(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else json.dumps(p, ensure_ascii=False))
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


def _first_error(
    e: ValidationError, prefix: Loc, known: Mapping[tuple[str, ...], tuple[str, ...]]
) -> tuple[Loc, str]:
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
        more = "; other fio options go in [workload.options]" if parent == ("workload",) else ""
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
