"""The points of `limits` and the tasks that run them (impure: they touch the bed): the read
pool, fio points (buffered, direct, uncached when fio passes RWF_DONTCACHE), the engine's
stream points (uncached where fio cannot, and the engine's buffered double of one fio point),
and the memory-copy ceiling. A point's files are named in one place (``job_files``) so that
fio and the engine move the same bytes through the same files."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace

from ...beds import Bed
from ...machine.proc import run
from ...machine.sysinfo import meminfo
from ...measure.runner import Outcome, Partial, Task
from ...measure.session import Session
from ...model import Artifact, Metric, Point
from ...vocab.units import GIB, MIB, fio_size, plural
from ...workloads.engine import engine_path, run_memcopy
from ...workloads.fio import FioFailure, JobFile, JobSection, distribute, run_fio
from ...workloads.stream import StreamSpec, run_stream
from .options import RECIPE
from .sizing import BS, FILES_PER_JOB, Sizing

#: Every data point submits with pwritev2/preadv2 (fio's pvsync2, the engine's stream): the
#: one path on which buffered, uncached (RWF_DONTCACHE) and direct differ only in the flag,
#: and on which fio and iowall-engine can be held against each other (docs/design-notes.md).
IOENGINE = "pvsync2"
#: fio's iomem_align for every data point: its buffer starts on a page, as the engine's does
FIO_BUF_ALIGN = 4096


@dataclass
class LimitsBed:
    """The bed plus the directories the points use."""

    bed: Bed
    session: Session

    @property
    def write_dir(self) -> str:
        return os.path.join(self.bed.path, "w")

    @property
    def read_dir(self) -> str:
        return os.path.join(self.bed.path, "r")

    def pool_files(self, sizing: Sizing) -> list[str]:
        """Names of the read pool: enough files for the largest job count."""
        n = max(max(sizing.jobs), min(max(sizing.jobs) * FILES_PER_JOB, sizing.read_bytes // (8 * MIB)))
        return [f"pool.{i:05d}" for i in range(n)]

    def pool_file_size(self, sizing: Sizing) -> int:
        n = len(self.pool_files(sizing))
        return max(BS, sizing.read_bytes // n // BS * BS)


def layout_read_pool(lb: LimitsBed, sizing: Sizing, cpus: int) -> None:
    """Write the read pool once with direct I/O (not measured, not stored)."""
    os.makedirs(lb.read_dir, exist_ok=True)
    files = lb.pool_files(sizing)
    groups = distribute(files, min(cpus, len(files)))
    fsize = lb.pool_file_size(sizing)
    job = JobFile(
        {
            "ioengine": "io_uring",
            "bs": fio_size(BS),
            "rw": "write",
            "direct": 1,
            "directory": lb.read_dir,
            "fallocate": "none",
            "group_reporting": 1,
        },
        [
            JobSection(
                f"layout{i}", {"filename": g, "filesize": fio_size(fsize), "size": fio_size(fsize * len(g))}
            )
            for i, g in enumerate(groups)
        ],
    )
    run_fio(job)


def io_point(
    rw: str, mode: str, jobs: int, sizing: Sizing, *, fs_block: str = "", generator: str = "fio"
) -> Point:
    """The parameters of one data point (they are its identity in the store). ``mode`` is
    buffered, uncached or direct; ``generator`` fio or engine (kind ``stream``)."""
    direct = 1 if mode == "direct" else 0
    params: dict[str, object] = {
        "kind": "fio" if generator == "fio" else "stream",
        "rw": rw,
        "direct": direct,
        "jobs": jobs,
        "bs": fio_size(BS),
        "ioengine": IOENGINE,
        "bytes": sizing.write_bytes if rw == "write" else sizing.read_bytes,
        "files_per_job": FILES_PER_JOB if rw == "write" else 0,
        "end_fsync": 1 if (rw == "write" and not direct) else 0,
    }
    if mode == "uncached":
        params["uncached"] = 1
    runtime = sizing.write_runtime_s if rw == "write" else sizing.read_runtime_s
    if runtime:
        params["runtime_s"] = runtime
    if fs_block:
        params["fs_block"] = fs_block
    return Point(RECIPE, params)


def job_files(point: Point, lb: LimitsBed, sizing: Sizing) -> tuple[list[list[str]], int]:
    """The files of every job of a point (names relative to its directory) and their size."""
    p = point.params
    jobs = int(p["jobs"])
    if p["rw"] == "write":
        fsize = sizing.write_bytes // (jobs * FILES_PER_JOB) // BS * BS
        return [[f"j{j:03d}.f{k}" for k in range(FILES_PER_JOB)] for j in range(jobs)], fsize
    return distribute(lb.pool_files(sizing), jobs), lb.pool_file_size(sizing)


def io_job(point: Point, lb: LimitsBed, sizing: Sizing) -> JobFile:
    """The fio job file of a point: one section per job with its own files."""
    p = point.params
    g: dict[str, object] = {
        "ioengine": p["ioengine"],
        "bs": p["bs"],
        "rw": p["rw"],
        "direct": p["direct"],
        "group_reporting": 1,
        # as the engine does (docs/engine.md, "fio and the engine on one buffered point"):
        # a page-aligned buffer (fio aligns it only for O_DIRECT or iomem_align, else it is
        # malloc's, 16 bytes past a page, and the kernel's rep movsb out of the page cache
        # into it took 3-4x the CPU per byte here), and no POSIX_FADV_SEQUENTIAL (it doubles
        # readahead: 20% more kernel CPU per byte and 2-8% more device reads on cold reads)
        "iomem_align": FIO_BUF_ALIGN,
        "fadvise_hint": 0,
    }
    if p.get("uncached"):
        g["uncached"] = 1
    if p.get("runtime_s"):
        # pass after pass: fio's invalidate=1 drops a read's pages before each pass, so every
        # pass reads the device; a write pass overwrites the last one's pages instead (with
        # invalidate=1 each writer would write them back itself in fadvise, before each pass)
        g.update(time_based=1, runtime=f"{p['runtime_s']}s")
        if p["rw"] == "write":
            g["invalidate"] = 0
    files, fsize = job_files(point, lb, sizing)
    if p["rw"] == "write":
        g.update(directory=lb.write_dir, fallocate="none", create_on_open=1, end_fsync=p["end_fsync"])
    else:
        g.update(directory=lb.read_dir)
    prefix = "w" if p["rw"] == "write" else "r"
    return JobFile(
        g,
        [
            JobSection(
                f"{prefix}{j}",
                {"filename": names, "filesize": fio_size(fsize), "size": fio_size(fsize * len(names))},
            )
            for j, names in enumerate(files)
        ],
    )


def stream_spec(point: Point, lb: LimitsBed, sizing: Sizing) -> StreamSpec:
    """The engine's stream of a point: the same files, sizes, block size and jobs as fio's."""
    p = point.params
    files, fsize = job_files(point, lb, sizing)
    base = lb.write_dir if p["rw"] == "write" else lb.read_dir
    mode = "direct" if p["direct"] else ("uncached" if p.get("uncached") else "buffered")
    return StreamSpec(
        rw=str(p["rw"]),
        mode=mode,
        bs=BS,
        file_size=fsize,
        jobs=tuple(tuple(os.path.join(base, f) for f in names) for names in files),
        end_fsync=bool(p["end_fsync"]),
        runtime_ms=int(float(p.get("runtime_s") or 0) * 1000),
    )


def page_cache_bytes() -> int:
    """File pages in the page cache now: Cached less Shmem (a ram bed's image and tmpfs are
    shmem, counted in Cached but not page cache of the filesystem under test)."""
    mi = meminfo()
    return mi.get("Cached", 0) - mi.get("Shmem", 0)


def warm_generator(kind: object) -> None:
    """Load the generator's binary and libraries into the page cache again after a drop, so
    that the page cache a point leaves behind counts its data only (fio's libraries alone
    are tens of MiB)."""
    argv = [engine_path(), "version"] if kind == "stream" else ["fio", "--version"]
    run(argv, check=False)


def make_io_task(point: Point, lb: LimitsBed, sizing: Sizing) -> Task:
    """A task that prepares (clean write dir, drop caches) and runs one data point, with fio
    or with the engine as the point says."""
    write = point.params["rw"] == "write"

    def execute(partial: Partial) -> Outcome:
        if write:
            shutil.rmtree(lb.write_dir, ignore_errors=True)
            os.makedirs(lb.write_dir)
        lb.session.drop_caches(partial)
        warm_generator(point.params["kind"])
        before = page_cache_bytes()
        try:
            if point.params["kind"] == "stream":
                res = run_stream(stream_spec(point, lb, sizing), origin_s=partial.origin_s)
                out = Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series)
            else:
                try:
                    fio = run_fio(io_job(point, lb, sizing), origin_s=partial.origin_s)
                except FioFailure as e:
                    partial.artifacts.extend(e.result.artifacts())
                    raise
                out = Outcome(metrics=fio.metrics, artifacts=fio.artifacts(), series=fio.series)
            grew = Metric("page_cache_growth_bytes", float(page_cache_bytes() - before), "B", "lower")
            return replace(out, metrics=out.metrics + (grew,))
        finally:
            if write:
                shutil.rmtree(lb.write_dir, ignore_errors=True)

    p = point.params
    mode = "direct" if p["direct"] else ("uncached" if p.get("uncached") else "buffered")
    weight = float(p["bytes"]) / (GIB if p["direct"] else GIB / 4)
    gen = " (engine)" if p["kind"] == "stream" else ""
    block = f" {p['fs_block']}" if p.get("fs_block") else ""
    return Task(
        point, execute, weight=weight, title=f"{p['rw']} {mode}{gen} {plural(int(p['jobs']), 'job')}{block}"
    )


def make_memcopy_task(threads: int, sizing: Sizing) -> Task:
    """A task that measures the memory-copy ceiling at ``threads`` threads with the engine."""
    point = Point(
        RECIPE, {"kind": "memcopy", "threads": threads, "bytes_per_thread": sizing.memcopy_bytes_per_thread}
    )

    def execute(partial: Partial) -> Outcome:
        doc = run_memcopy(threads, sizing.memcopy_bytes_per_thread)
        metrics = [Metric("memcopy_bytes_per_s", float(doc["total_bytes_per_s"]), "B/s")]
        for meth, d in sorted(doc.get("methods", {}).items()):
            if isinstance(d, dict) and "total_bytes_per_s" in d:
                metrics.append(Metric(f"memcopy_{meth}_bytes_per_s", float(d["total_bytes_per_s"]), "B/s"))
        return Outcome(
            metrics=tuple(metrics), artifacts=(Artifact("engine.json", "application/json", json.dumps(doc)),)
        )

    return Task(point, execute, weight=0.3, title=f"memory copy {plural(threads, 'thread')}", probed=False)
