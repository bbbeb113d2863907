"""`iowall limits`: the ceilings (memory copy, direct I/O) and buffered vs direct sequential
write and read at rising job counts, on a bed provisioned for the purpose.

Method (after seed 002): bs 2M, io_uring, 10 files per job. Unlike the seed, every write point
moves the same total amount of data whatever the job count (strong scaling), so that each point
is measured against the same dirty-page thresholds, and the total is sized from the kernel's
dirty threshold so that buffered writes cross it: a buffered write that fits under the
threshold measures memcpy into the page cache, not I/O. Buffered writes end with fsync
(end_fsync=1), so fio's time covers the writeback of everything written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..beds import Bed
from ..errors import UserError
from ..model import Metric, Point
from ..repeat import RepeatPolicy, as_policy
from ..runner import Outcome, Partial, Task
from ..sysinfo import drop_caches
from ..units import fio_size, fmt_bytes
from ..workloads.fio import FioFailure, JobFile, JobSection, distribute, run_fio

if TYPE_CHECKING:
    from ..analysis.limits import LimitsSummary
    from ..model import Run
    from ..runner import Progress as ProgressT
    from ..store import Store

RECIPE = "limits"
BS = 2 << 20
FILES_PER_JOB = 10
#: Buffered writes should move at least this multiple of the dirty threshold.
DIRTY_MULTIPLE = 2.0
MIB = 1 << 20
GIB = 1 << 30


def default_jobs(cpus: int) -> list[int]:
    """1, 2, 4 … up to the CPU count, the CPU count itself, and twice it."""
    out, j = [], 1
    while j < cpus:
        out.append(j)
        j *= 2
    return sorted(set(out + [cpus, 2 * cpus]))


def parse_jobs(text: str) -> list[int]:
    """``1,2,4`` → [1, 2, 4]; every count a positive whole number."""
    try:
        jobs = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UserError(f"--jobs {text!r}: give whole numbers separated by commas, e.g. 1,2,4") from None
    if not jobs or jobs[0] < 1:
        raise UserError(f"--jobs {text!r}: job counts must be at least 1")
    return jobs


@dataclass(frozen=True)
class Sizing:
    """How much data each point moves and why; ``notes`` say what was scaled."""

    bed_bytes: int
    write_bytes: int
    read_bytes: int
    jobs: tuple[int, ...]
    memcopy_threads: tuple[int, ...]
    memcopy_bytes_per_thread: int
    quick: bool
    notes: tuple[str, ...] = field(default_factory=tuple)


def plan_bed_size(*, bed_kind: str, mem_available: int, dirty_ratio: int, dirty_bytes: int,
                  quick: bool, size_override: int | None) -> int:
    """Size of the bed to provision: big enough for the write set (2x the dirty threshold the
    kernel will have once the bed exists) plus the read set, within half of free memory for a
    RAM-backed bed. Pure arithmetic; the threshold is re-read after provisioning."""
    if size_override:
        return size_override
    if quick:
        return 5 * GIB
    read = 4 * GIB
    if dirty_bytes:
        need = int((DIRTY_MULTIPLE * dirty_bytes + read) * 1.15) + 256 * MIB
    elif bed_kind == "ram":  # the image itself is not dirtyable memory: it lowers the threshold
        r = dirty_ratio / 100.0
        need = int((1.15 * (DIRTY_MULTIPLE * r * mem_available + read) + 256 * MIB)
                   / (1 + 1.15 * DIRTY_MULTIPLE * r))
    else:
        need = int((DIRTY_MULTIPLE * dirty_ratio / 100.0 * mem_available + read) * 1.15) + 256 * MIB
    need = max(need, 4 * GIB)
    if bed_kind == "ram":
        need = min(need, mem_available // 2)
    return need >> 20 << 20


def size_points(*, free_bytes: int, dirty_threshold: int, cpus: int, mem_total: int,
                jobs: Sequence[int], quick: bool) -> Sizing:
    """Data per write and read point from the bed's free space and the dirty threshold now in
    force; every number it picks is explained in ``notes``."""
    notes: list[str] = []
    max_jobs = max(jobs)
    usable = int(free_bytes * 0.85)
    read = min((2 * GIB) if quick else (4 * GIB), int(usable * 0.4)) // BS * BS
    read = max(read, max_jobs * 4 * BS)
    if quick:
        write = 2 * GIB
    else:
        write = int(DIRTY_MULTIPLE * dirty_threshold)
    write = max(write, max_jobs * FILES_PER_JOB * BS)
    if write + read > usable:
        write = usable - read
    if write < max_jobs * FILES_PER_JOB * BS:
        raise UserError(f"the bed has {fmt_bytes(free_bytes)} free: too little for {max_jobs} jobs "
                        f"x {FILES_PER_JOB} files of 2 MiB blocks; pass a larger --size or fewer --jobs")
    ratio = write / dirty_threshold if dirty_threshold else float("inf")
    notes.append(
        f"each write point writes {fmt_bytes(write)} in all ({FILES_PER_JOB} files per job), "
        f"{ratio:.1f}x the dirty threshold in force ({fmt_bytes(dirty_threshold)}); "
        "buffered writes end with fsync, so their time includes writeback")
    if ratio < 1.0:
        notes.append("the write set is smaller than the dirty threshold: buffered writes are "
                     "absorbed by the page cache before any throttling, and their figure is "
                     "mostly memory copy plus the final fsync" + (" (--quick)" if quick else ""))
    elif ratio < DIRTY_MULTIPLE * 0.95:
        notes.append(f"the bed could not hold {DIRTY_MULTIPLE:.0f}x the dirty threshold: "
                     "pass a larger --size for a longer throttled phase")
    notes.append(f"each read point reads {fmt_bytes(read)} from a pool of files laid out once, "
                 "after dropping caches")
    mc_threads = tuple(sorted({min(j, cpus) for j in jobs}))
    mc_bytes = min(512 * MIB, max(64 * MIB, (mem_total // 16) // (2 * max(mc_threads)))) >> 20 << 20
    return Sizing(bed_bytes=0, write_bytes=write, read_bytes=read, jobs=tuple(jobs),
                  memcopy_threads=mc_threads, memcopy_bytes_per_thread=mc_bytes, quick=quick,
                  notes=tuple(notes))


# ------------------------------------------------------------------------------------------
# Tasks (impure: they touch the bed)


@dataclass
class LimitsBed:
    """The bed plus the directories the points use."""

    bed: Bed
    can_drop: bool = True

    @property
    def write_dir(self) -> str:
        return os.path.join(self.bed.path, "w")

    @property
    def read_dir(self) -> str:
        return os.path.join(self.bed.path, "r")

    def pool_files(self, sizing: Sizing) -> list[str]:
        """Names of the read pool: enough files for the largest job count."""
        n = max(max(sizing.jobs), min(max(sizing.jobs) * FILES_PER_JOB,
                                      sizing.read_bytes // (8 * MIB)))
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
        {"ioengine": "io_uring", "bs": fio_size(BS), "rw": "write", "direct": 1,
         "directory": lb.read_dir, "fallocate": "none", "group_reporting": 1},
        [JobSection(f"layout{i}", {"filename": g, "filesize": fio_size(fsize),
                                   "size": fio_size(fsize * len(g))})
         for i, g in enumerate(groups)])
    run_fio(job)


def io_point(rw: str, direct: int, jobs: int, sizing: Sizing) -> Point:
    """The parameters of one fio point (they are its identity in the store)."""
    return Point(RECIPE, {
        "kind": "fio", "rw": rw, "direct": direct, "jobs": jobs, "bs": fio_size(BS),
        "ioengine": "io_uring",
        "bytes": sizing.write_bytes if rw == "write" else sizing.read_bytes,
        "files_per_job": FILES_PER_JOB if rw == "write" else 0,
        "end_fsync": 1 if (rw == "write" and not direct) else 0,
    })


def io_job(point: Point, lb: LimitsBed, sizing: Sizing) -> JobFile:
    """The fio job file of a point: one section per job with its own files."""
    p = point.params
    jobs = int(p["jobs"])
    g: dict[str, object] = {"ioengine": "io_uring", "bs": p["bs"], "rw": p["rw"],
                            "direct": p["direct"], "group_reporting": 1}
    sections = []
    if p["rw"] == "write":
        fsize = sizing.write_bytes // (jobs * FILES_PER_JOB) // BS * BS
        g.update(directory=lb.write_dir, fallocate="none", create_on_open=1,
                 end_fsync=p["end_fsync"])
        for j in range(jobs):
            names = [f"j{j:03d}.f{k}" for k in range(FILES_PER_JOB)]
            sections.append(JobSection(f"w{j}", {"filename": names, "filesize": fio_size(fsize),
                                                 "size": fio_size(fsize * FILES_PER_JOB)}))
    else:
        fsize = lb.pool_file_size(sizing)
        g.update(directory=lb.read_dir)
        for j, names in enumerate(distribute(lb.pool_files(sizing), jobs)):
            sections.append(JobSection(f"r{j}", {"filename": names, "filesize": fio_size(fsize),
                                                 "size": fio_size(fsize * len(names))}))
    return JobFile(g, sections)


def make_io_task(point: Point, lb: LimitsBed, sizing: Sizing) -> Task:
    """A task that prepares (clean write dir, drop caches) and runs one fio point."""

    def execute(partial: Partial) -> Outcome:
        if point.params["rw"] == "write":
            shutil.rmtree(lb.write_dir, ignore_errors=True)
            os.makedirs(lb.write_dir)
        notes: list[str] = []
        if lb.can_drop and not drop_caches():
            lb.can_drop = False
        if not lb.can_drop:
            notes.append("caches not dropped (needs root); fio invalidates its own files only")
        job = io_job(point, lb, sizing)
        try:
            res = run_fio(job)
        except FioFailure as e:
            partial.artifacts.extend(e.result.artifacts())
            raise
        if point.params["rw"] == "write":
            shutil.rmtree(lb.write_dir, ignore_errors=True)
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series,
                       notes=tuple(notes))

    weight = float(point.params["bytes"]) / (GIB if point.params["direct"] else GIB / 4)
    mode = "direct" if point.params["direct"] else "buffered"
    return Task(point, execute, weight=weight,
                title=f"{point.params['rw']} {mode} {point.params['jobs']} jobs")


def make_memcopy_task(threads: int, sizing: Sizing) -> Task:
    """A task that measures the memory-copy ceiling at ``threads`` threads with the engine."""
    point = Point(RECIPE, {"kind": "memcopy", "threads": threads,
                           "bytes_per_thread": sizing.memcopy_bytes_per_thread})

    def execute(partial: Partial) -> Outcome:
        import json

        from ..model import Artifact
        from ..workloads.engine import run_memcopy

        doc = run_memcopy(threads, sizing.memcopy_bytes_per_thread)
        metrics = [Metric("memcopy_bytes_per_s", float(doc["total_bytes_per_s"]), "B/s")]
        for meth, d in sorted(doc.get("methods", {}).items()):
            if isinstance(d, dict) and "total_bytes_per_s" in d:
                metrics.append(Metric(f"memcopy_{meth}_bytes_per_s",
                                      float(d["total_bytes_per_s"]), "B/s"))
        return Outcome(metrics=tuple(metrics),
                       artifacts=(Artifact("engine.json", "application/json", json.dumps(doc)),))

    return Task(point, execute, weight=0.3, title=f"memory copy {threads} threads", probed=False)


# ------------------------------------------------------------------------------------------
# The whole job


@dataclass(frozen=True)
class LimitsOptions:
    """What the user asked for on the command line."""

    bed: str = "ram"
    fs: str = "xfs"
    size: int | None = None
    jobs: tuple[int, ...] | None = None
    #: fixed rounds (a count) or ``auto`` (see iowall.repeat)
    repeat: RepeatPolicy | int = 3
    quick: bool = False
    label: str = "limits"
    mkfs_opts: str = ""
    mount_opts: str = ""
    probes: str = "default"


def run_limits(opts: LimitsOptions, store: Store, progress: ProgressT) -> tuple[
        LimitsSummary, dict[str, object]]:
    """Provision the bed, size the points, run everything interleaved, store every run, and
    return the summary with its context (bed facts, notes). The bed is always torn down."""
    from ..analysis.limits import summarise
    from ..beds import BedSpec, provision
    from ..probes import ProbeContext
    from ..probes import resolve as resolve_probes
    from ..repeat import summary as summary_lines
    from ..repeat import to_json as repeat_json
    from ..runner import Schedule
    from ..sysinfo import (
        cpu_count,
        dirty_thresholds_bytes,
        environment,
        host_facts,
        loadavg,
        meminfo,
        sysctl,
    )
    from ..workloads.fio import fio_version

    spec = BedSpec.parse(opts.bed)
    probe_classes = resolve_probes(opts.probes)
    fio_ver = ".".join(map(str, fio_version()))
    cpus = cpu_count()
    jobs = list(opts.jobs) if opts.jobs else default_jobs(cpus)
    policy = as_policy(opts.repeat)
    mi = meminfo()
    bed_size = plan_bed_size(bed_kind=spec.kind, mem_available=mi.get("MemAvailable", 0),
                             dirty_ratio=int(sysctl("vm.dirty_ratio") or 20),
                             dirty_bytes=int(sysctl("vm.dirty_bytes") or 0), quick=opts.quick,
                             size_override=opts.size)
    notes: list[str] = []
    load = loadavg()
    if load > cpus * 0.5:
        notes.append(f"the machine was busy when the job started (load {load:.1f} on {cpus} "
                     "CPUs): other work shares the CPUs and widens the spread; rerun when idle")
    if os.geteuid() != 0:
        notes.append("not root: caches are not dropped between points (fio still invalidates "
                     "the cache of its own files) and nothing is formatted")
    with provision(spec, fs=opts.fs, size_bytes=bed_size, mkfs_opts=opts.mkfs_opts,
                   mount_opts=opts.mount_opts) as bed:
        threshold, _bg = dirty_thresholds_bytes()
        # On a dir bed --size bounds the data iowall writes; on the others it is the bed.
        budget = min(bed.free_bytes(), opts.size) if opts.size else bed.free_bytes()
        sizing = size_points(free_bytes=budget, dirty_threshold=threshold, cpus=cpus,
                             mem_total=mi.get("MemTotal", 0), jobs=jobs, quick=opts.quick)
        if spec.kind in ("ram", "loop") and not opts.size:
            notes.append(f"bed sized to {fmt_bytes(bed_size)} for this machine "
                         f"({fmt_bytes(mi.get('MemTotal', 0))} RAM, {cpus} CPUs)")
        if not opts.jobs:
            notes.append(f"job counts {', '.join(map(str, jobs))}: powers of two up to the "
                         f"{cpus} CPUs and twice that")
        notes += list(sizing.notes) + bed.notes
        notes.append("caches are dropped (sync; drop_caches=3) before every I/O point; points "
                     "run interleaved, one round after another")
        lb = LimitsBed(bed, can_drop=os.geteuid() == 0)
        layout_read_pool(lb, sizing, cpus)
        tasks: list[Task] = [make_memcopy_task(t, sizing) for t in sizing.memcopy_threads]
        for j in jobs:
            for rw in ("write", "read"):
                for direct in (0, 1):
                    tasks.append(make_io_task(io_point(rw, direct, j, sizing), lb, sizing))
        extra = {"fio_version": fio_ver}
        probe_dir = bed.private_dir("probe-") if os.geteuid() == 0 else bed.path
        sched = Schedule(store=store, label=opts.label, env=lambda: environment(extra),
                         bed=lambda: dict(bed.facts), progress=progress,
                         probes=probe_classes,
                         probe_ctx=ProbeContext(devices=tuple(bed.devices),
                                                devnos=(bed.devno,) if bed.devno else (),
                                                workdir=probe_dir))
        runs = sched.execute(tasks, policy)
        assert sched.decider is not None
        names = {t.point.key(): t.title for t in tasks}
        notes += summary_lines(policy, sched.decider, names)
        ctx: dict[str, object] = {"bed": dict(bed.facts), "kernel": os.uname().release,
                                  "host": host_facts(), "fio_version": fio_ver,
                                  "batch": sched.batch, "notes": notes,
                                  "sizing": {"write_bytes": sizing.write_bytes,
                                             "read_bytes": sizing.read_bytes,
                                             "dirty_threshold_bytes": threshold},
                                  "repeat": repeat_json(policy, sched.decider, names)}
    summary = summarise(runs, cpus)
    ctx["why"] = why(summary, runs)
    return summary, ctx


def limits_json(summary: LimitsSummary, ctx: dict[str, Any]) -> dict[str, Any]:
    """``--format json`` of limits: the report's JSON plus ``"repeat"`` (policy, decisions)."""
    from ..report.limits import render_json

    doc = render_json(summary, ctx)
    if "repeat" in ctx:
        doc["repeat"] = ctx["repeat"]
    return doc


def why(summary: LimitsSummary, runs: Sequence[Run]) -> list[dict[str, object]]:
    """Explain the buffered peak of each direction: the rules that fire on its median run."""
    from ..analysis.context import representative
    from ..analysis.why import why_run

    out: list[dict[str, object]] = []
    by_id = {r.id: r for r in runs}
    for direction in ("write", "read"):
        rows = [r for r in summary.rows if r.direction == direction and r.buffered]
        if not rows:
            continue
        peak = max(rows, key=lambda r: r.buffered.median if r.buffered else 0.0)
        assert peak.buffered is not None
        group = [by_id[i] for i in peak.buffered.run_ids if i in by_id]
        run = representative(group, f"{direction}_bw_bytes_per_s")
        if run is None:
            continue
        w = why_run(run, runs)
        out.append({"direction": direction, "jobs": peak.jobs, "run": run.id,
                    "sentences": w["sentences"], "verdicts": w["verdicts"],
                    "skipped_probes": w["skipped_probes"]})
    return out
