"""Axes: a name (a workload parameter, a bed axis or a knob) and its values, checked by the
type of what it sets, from a plan's ``[axes]`` or from ``--set AXIS=V1,V2``."""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from ..beds import FILESYSTEMS
from ..beds.xfs_blocks import fmt_block, parse_fs_blocks
from ..tuning.knob_session import check_exists
from ..vocab.errors import UserError
from ..vocab.knob import looks_like_knob, parse_knob
from .spec import _EXPECT, BED_AXES, WORKLOAD_PARAMS, FioModel, Where, _first_error, _size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


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
        for v in values:
            if canon == "fs_block":
                try:
                    if isinstance(v, bool):
                        raise ValueError(v)
                    (b,) = parse_fs_blocks(str(v))
                except (UserError, ValueError):
                    raise w.error(
                        loc, f"expected {_EXPECT[canon]}: a power of two from 1k to 64k (got {v!r})"
                    ) from None
                out.append(fmt_block(b))
                continue
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
        try:
            check_exists(knob, [] if knob.kind == "xfs" else out)
        except UserError as e:
            raise w.error(loc, str(e)) from None
        canon = str(knob)
    else:
        choices = list(WORKLOAD_PARAMS) + list(BED_AXES)
        close = difflib.get_close_matches(canon, choices, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise w.error(
            loc,
            f"unknown axis {name!r}: {hint}an axis is a workload parameter "
            f"({', '.join(WORKLOAD_PARAMS[:6])} …), one of {', '.join(BED_AXES)}, "
            "or a knob: sysctl:NAME, sysfs:ATTR, sysfs:/sys/PATH, xfs:extsize",
        )
    seen: list[Any] = []
    for v in out:
        if v in seen:
            raise w.error(loc, f"value {v!r} is given twice")
        seen.append(v)
    return Axis(canon, tuple(out))


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
        raise UserError(
            f"--set {text!r}: write AXIS=V1,V2, e.g. --set jobs=1,2,4 or --set sysctl:vm.dirty_ratio=5,10"
        )
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
