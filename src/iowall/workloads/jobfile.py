"""fio job files: a user's own job file checked and pointed at the bed, and the job of a
plan point built from its parameters (plan names, ``jobs`` is fio's ``numjobs``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..vocab.errors import PlanError, UserError
from ..vocab.units import parse_size
from .fio import JobFile, JobSection

#: Plan parameter name → fio option name, where they differ.
FIO_NAMES = {"jobs": "numjobs"}


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
        if key.strip() == "filename" and any(x.strip().startswith("/dev/") for x in value.split(":")):
            raise PlanError(
                path,
                n,
                "filename",
                f"{value.strip()} is a device: a plan's job "
                "file runs on the bed; name a file (it is created in the bed)",
            )
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
        out = ["[global]", f"directory={directory}", *[_opt_line(k, v) for k, v in ov.items()], ""] + out
    return "\n".join(out) + "\n"


def build_job(
    fio: Mapping[str, Any], directory: str, *, options: Mapping[str, Any] = {}, jobfile_text: str = ""
) -> JobFile | str:
    """The fio job of a point: a JobFile from its parameters (plan names) and verbatim
    ``options``, or the retargeted text of the user's job file with them as overrides."""
    params = {FIO_NAMES.get(k, k): _fio_value(v) for k, v in mode_options(fio).items()}
    if jobfile_text:
        return retarget_jobfile(jobfile_text, directory, {**params, **dict(options)})
    g: dict[str, Any] = {"directory": directory}
    g.update(params)
    g["group_reporting"] = 1
    g.update({k: _fio_value(v) for k, v in options.items()})
    return JobFile(g, [JobSection("plan", {})])


def mode_options(fio: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters with ``mode`` turned into fio's options: direct=1 for direct, direct=0
    for buffered, direct=0 and uncached=1 for uncached (only for a fio that passes
    RWF_DONTCACHE; plan/stream.py runs the others with iowall-engine)."""
    out = {k: v for k, v in fio.items() if k != "mode"}
    mode = fio.get("mode")
    if mode is not None:
        out["direct"] = 1 if mode == "direct" else 0
        if mode == "uncached":
            out["uncached"] = 1
    return out


def point_bytes(fio: Mapping[str, Any]) -> int | None:
    """Bytes a built fio point lays down in the bed (size per job × jobs), if known."""
    try:
        jobs = int(fio.get("jobs", 1))
        if "size" in fio:
            return parse_size(fio["size"]) * jobs
        if "filesize" in fio:
            return parse_size(fio["filesize"]) * int(fio.get("nrfiles", 1)) * jobs
    except (UserError, ValueError):
        return None
    return None
