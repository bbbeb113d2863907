"""Plan points with ``mode = "uncached"`` that fio cannot run: where the installed fio's
``uncached`` passes the old flag (0x40, RWF_ATOMIC since 6.11), a sequential read or write
runs with iowall-engine instead (pwritev2/preadv2 with RWF_DONTCACHE, the same jobs, files,
block size and sizes). Anything the engine cannot reproduce is refused before the plan runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ..vocab.errors import UserError
from ..vocab.units import parse_size
from ..workloads.stream import StreamResult, StreamSpec, run_stream

#: Parameters the engine reproduces (or that do not change what it measures).
ENGINE_PARAMS = frozenset(
    {
        "rw",
        "bs",
        "size",
        "filesize",
        "nrfiles",
        "jobs",
        "end_fsync",
        "mode",
        "direct",
        "ioengine",
        "iodepth",
        "fallocate",
        "create_on_open",
        "openfiles",
        "thread",
        "invalidate",
        "kind",
    }
)


def uses_engine(fio: Mapping[str, Any], fio_ok: bool) -> bool:
    """True when a point is uncached and the installed fio cannot pass RWF_DONTCACHE."""
    return fio.get("mode") == "uncached" and not fio_ok


def check_engine_point(
    fio: Mapping[str, Any], title: str, *, jobfile: bool, options: Mapping[str, Any], why_not_fio: str
) -> None:
    """A UserError unless iowall-engine can run this point as fio would."""
    lead = f"point {title}: mode=uncached needs iowall-engine here ({why_not_fio})"
    if jobfile:
        raise UserError(f"{lead}, which cannot run a job file")
    if fio.get("rw", "read") not in ("read", "write"):
        raise UserError(f"{lead}, which streams rw=read or rw=write only, not rw={fio.get('rw')}")
    other = sorted(k for k in fio if k not in ENGINE_PARAMS) + sorted(options)
    if other:
        raise UserError(f"{lead}, which cannot honour {', '.join(other)}")
    if "size" not in fio and "filesize" not in fio:
        raise UserError(f"{lead}, which needs size or filesize")


def engine_spec(fio: Mapping[str, Any], directory: str, mode: str = "uncached") -> StreamSpec:
    """The stream of a point in ``directory``: ``jobs`` jobs of ``nrfiles`` files each, every
    file ``filesize`` (or the job's ``size`` spread over its files), fio's default bs 4k."""
    jobs = int(fio.get("jobs", 1))
    nrfiles = int(fio.get("nrfiles", 1))
    bs = parse_size(fio.get("bs", "4k"))
    fsize = parse_size(fio["filesize"]) if "filesize" in fio else parse_size(fio["size"]) // nrfiles
    fsize = max(bs, fsize // bs * bs)
    files = tuple(
        tuple(os.path.join(directory, f"stream.{j}.{k}") for k in range(nrfiles)) for j in range(jobs)
    )
    return StreamSpec(
        rw=str(fio.get("rw", "read")),
        mode=mode,
        bs=bs,
        file_size=fsize,
        jobs=files,
        end_fsync=bool(fio.get("end_fsync", 0)),
    )


def run_engine_point(
    fio: Mapping[str, Any], directory: str, drop: Callable[[], object], *, origin_s: float | None = None
) -> StreamResult:
    """Run a point with the engine; a read first lays its files out with direct writes (not
    measured), then ``drop()`` empties the page cache, as fio's layout would be read cold."""
    spec = engine_spec(fio, directory)
    if spec.rw == "read":
        lay = engine_spec({**fio, "rw": "write"}, directory, mode="direct")
        run_stream(lay)
        drop()
    return run_stream(spec, origin_s=origin_s)
