"""Plans: TOML files (or recipe-built dicts) that name a workload, a bed, axes and repeats.

Parsing validates with pydantic at the edge and turns every mistake into ONE UserError naming
the file, the line and the key. Axes expand as a cartesian product into points; points run
interleaved (a b a b …), one round after another, grouped by the bed they need. See
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
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictFloat,
                      StrictInt, StrictStr, ValidationError)

from .errors import UserError
from .knobs import Knob, KnobSession, check_exists, looks_like_knob, parse_knob
from .model import Point, Run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    from .beds import Bed
    from .runner import Outcome, Partial, Progress, Task
    from .store import Store

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


Flag = Annotated[Union[StrictBool, StrictInt], AfterValidator(_flag)]
Size = Annotated[Union[StrictInt, StrictStr], AfterValidator(_size)]
Text = Union[StrictInt, StrictStr]  # fio takes "10s" or 10 for times; any string for bs ranges
Positive = Annotated[StrictInt, AfterValidator(_positive)]
NonNeg = Annotated[StrictInt, AfterValidator(_nonneg)]
Pct = Annotated[StrictInt, AfterValidator(_pct)]
Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr]
RW = Literal["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim",
             "randtrim", "trimwrite"]

WORKLOAD_KINDS = ("fio",)
BED_AXES = ("fs", "mkfs", "mount", "bed_size")


class FioModel(BaseModel):
    """``[workload]`` with ``kind = "fio"``: fio parameters by fio's own names (``jobs`` is
    ``numjobs``), or ``jobfile``, plus ``options`` passed to fio verbatim."""

    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Literal["fio"] = "fio"
    jobfile: StrictStr | None = None
    rw: RW | None = None
    bs: Text | None = None
    size: Size | None = None
    filesize: Size | None = None
    direct: Flag | None = None
    ioengine: StrictStr | None = None
    iodepth: Positive | None = None
    jobs: Positive | None = None
    numjobs: Positive | None = None
    nrfiles: Positive | None = None
    openfiles: Positive | None = None
    file_service_type: StrictStr | None = None
    runtime: Text | None = None
    time_based: Flag | None = None
    ramp_time: Text | None = None
    rwmixwrite: Pct | None = None
    rwmixread: Pct | None = None
    end_fsync: Flag | None = None
    fsync: NonNeg | None = None
    fdatasync: NonNeg | None = None
    fallocate: StrictStr | None = None
    create_on_open: Flag | None = None
    invalidate: Flag | None = None
    randrepeat: Flag | None = None
    norandommap: Flag | None = None
    thread: Flag | None = None
    options: dict[str, Scalar] = Field(default_factory=dict)


#: Workload parameters an axis may name (``numjobs`` is spelled ``jobs`` in points).
WORKLOAD_PARAMS = tuple(k for k in FioModel.model fields_placeholder) if False else ()  # noqa
