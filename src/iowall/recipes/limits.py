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

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.context import representative
from ..analysis.dirty import applied_threshold_note
from ..analysis.limits import Cell, LimitsSummary, summarise
from ..analysis.why import why_run
from ..beds import Bed, BedSpec, provision
from ..errors import UserError
from ..model import Artifact, Metric, Point, Run
from ..repeat import RepeatPolicy, as_policy
from ..repeat import summary as summary_lines
from ..repeat import to_json as repeat_json
from ..results import Report, Section, Table
from ..runner import Outcome, Partial, Progress, Task
from ..session import Session
from ..store import Store
from ..sysinfo import cpu_count, dirty_thresholds_bytes, host_facts, loadavg, meminfo, sysctl
from ..units import GIB, MIB, fio_size, fmt_bytes, fmt_rate, parse_size
from ..workloads.engine import run_memcopy
from ..workloads.fio import FioFailure, JobFile, JobSection, distribute, run_fio
from .limits_sizing import (
    BS,
    FILES_PER_JOB,
    Sizing,
    default_jobs,
    plan_bed_size,
    size_points,
)
from .options import RecipeOptions, one
from .registry import Recipe, register

RECIPE = "limits"


# ------------------------------------------------------------------------------------------
# Tasks (impure: they touch the bed)


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
        lb.session.drop_caches(partial)
        job = io_job(point, lb, sizing)
        try:
            res = run_fio(job)
        except FioFailure as e:
            partial.artifacts.extend(e.result.artifacts())
            raise
        if point.params["rw"] == "write":
            shutil.rmtree(lb.write_dir, ignore_errors=True)
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series)

    weight = float(point.params["bytes"]) / (GIB if point.params["direct"] else GIB / 4)
    mode = "direct" if point.params["direct"] else "buffered"
    return Task(point, execute, weight=weight,
                title=f"{point.params['rw']} {mode} {point.params['jobs']} jobs")


def make_memcopy_task(threads: int, sizing: Sizing) -> Task:
    """A task that measures the memory-copy ceiling at ``threads`` threads with the engine."""
    point = Point(RECIPE, {"kind": "memcopy", "threads": threads,
                           "bytes_per_thread": sizing.memcopy_bytes_per_thread})

    def execute(partial: Partial) -> Outcome:
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
    #: knobs held for the whole run (name → value read back)
    knobs: tuple[tuple[str, str], ...] = ()


def run_limits(opts: LimitsOptions, store: Store, progress: Progress) -> Report:
    """Provision the bed, size the points, run everything interleaved, store every run, and
    return the Report (ceilings, tables, the wall in sentences, Why). The bed is always torn
    down."""
    spec = BedSpec.parse(opts.bed)
    cpus = cpu_count()
    jobs = list(opts.jobs) if opts.jobs else default_jobs(cpus)
    policy = as_policy(opts.repeat)
    mi = meminfo()
    bed_size = plan_bed_size(bed_kind=spec.kind, mem_available=mi.get("MemAvailable", 0),
                             dirty_ratio=int(sysctl("vm.dirty_ratio") or 20),
                             dirty_bytes=int(sysctl("vm.dirty_bytes") or 0), quick=opts.quick,
                             size_override=opts.size)
    session = Session(store=store, label=opts.label, progress=progress, probes=opts.probes,
                      knobs=dict(opts.knobs))
    notes: list[str] = []
    load = loadavg()
    if load > cpus * 0.5:
        notes.append(f"the machine was busy when the job started (load {load:.1f} on {cpus} "
                     "CPUs): other work shares the CPUs and widens the spread; rerun when idle")
    with provision(spec, fs=opts.fs, size_bytes=bed_size, mkfs_opts=opts.mkfs_opts,
                   mount_opts=opts.mount_opts) as bed:
        session.use_beds(bed)
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
        notes += list(sizing.notes) + session.notes
        notes.append("caches are dropped (sync; drop_caches=3) before every I/O point; points "
                     "run interleaved, one round after another")
        lb = LimitsBed(bed, session)
        layout_read_pool(lb, sizing, cpus)
        tasks: list[Task] = [make_memcopy_task(t, sizing) for t in sizing.memcopy_threads]
        for j in jobs:
            for rw in ("write", "read"):
                for direct in (0, 1):
                    tasks.append(make_io_task(io_point(rw, direct, j, sizing), lb, sizing))
        runs = session.execute(tasks, policy)
        assert session.decider is not None
        names = {t.point.key(): t.title for t in tasks}
        notes += summary_lines(policy, session.decider, names)
        if (applied := applied_threshold_note(runs, sized_from=threshold)) is not None:
            notes.append(applied)
        ctx: dict[str, Any] = {"bed": dict(bed.facts), "kernel": os.uname().release,
                               "host": host_facts(), "fio_version": session.fio_version,
                               "batch": session.batch, "notes": notes,
                               "sizing": {"write_bytes": sizing.write_bytes,
                                          "read_bytes": sizing.read_bytes,
                                          "dirty_threshold_bytes": threshold},
                               "repeat": repeat_json(policy, session.decider, names)}
    summary = summarise(runs, cpus)
    ctx["why"] = why(summary, runs)
    return limits_report(summary, ctx)


def why(summary: LimitsSummary, runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Explain every buffered point (its median run): the rules that fire, the nearest misses,
    where the CPU time went; the peak of each direction first."""
    out: list[dict[str, Any]] = []
    by_id = {r.id: r for r in runs}
    for direction in ("write", "read"):
        rows = [r for r in summary.rows if r.direction == direction and r.buffered]
        peak = max(rows, key=lambda r: r.buffered.median if r.buffered else 0.0, default=None)
        for row in sorted(rows, key=lambda r: (r is not peak, r.jobs)):
            assert row.buffered is not None
            group = [by_id[i] for i in row.buffered.run_ids if i in by_id]
            run = representative(group, f"{direction}_bw_bytes_per_s")
            if run is None:
                continue
            w = why_run(run, runs)
            tag = ", the peak" if row is peak else ""
            jobs = f"{row.jobs} job" + ("" if row.jobs == 1 else "s")
            out.append({**w, "point": f"buffered {direction} at {jobs}{tag}",
                        "direction": direction, "jobs": row.jobs})
    return out


# ------------------------------------------------------------------------------------------
# The report (pure)

HEADERS = ("jobs", "buffered", "direct", "buf/direct", "buf/memcopy")
TITLES = {"write": "Sequential write", "read": "Sequential read"}


def _cell(c: Cell | None) -> str:
    if c is None:
        return "-"
    return f"{fmt_rate(c.median)} ±{c.spread:.0%}" if c.n > 1 else fmt_rate(c.median)


def _ratio(x: float | None) -> str:
    return f"{x:.2f}" if x is not None else "-"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _ceiling_rows(s: LimitsSummary) -> list[list[str]]:
    rows = [[f"memory copy, {_plural(t, 'thread')}", fmt_rate(c.median),
             "best of rep movsb and memcpy" if i == 0 else ""]
            for i, (t, c) in enumerate(sorted(s.memcopy.items()))]
    rows += [[f"direct {d} ({_plural(c.at, 'job')})", fmt_rate(c.cell.median),
              "best direct point" if i == 0 else ""]
             for i, (d, c) in enumerate(s.direct_ceiling.items())]
    return rows or [["not measured", "", ""]]


def _cell_json(c: Cell | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"median": c.median, "spread": c.spread, "n": c.n, "run_ids": list(c.run_ids)}


def limits_report(s: LimitsSummary, ctx: dict[str, Any]) -> Report:
    """The Report of a limits run: ceilings, one table per direction, the wall in sentences,
    the Why section, how it was measured; ``data`` holds every number for ``--format json``."""
    bed, host = ctx["bed"], ctx["host"]
    dev = f" on {bed.get('device')}" if bed.get("device") else ""
    img = (f", {fmt_bytes(bed['image_bytes'])} image ({bed.get('backing')})"
           if bed.get("image_bytes") else "")
    n = max((r.buffered.n for r in s.rows if r.buffered), default=0)
    sections = [Section("Ceilings", Table.of(["ceiling", "value", "how"], _ceiling_rows(s),
                                             left=3, headless=True))]
    for d in ("write", "read"):
        rows = [[str(r.jobs), _cell(r.buffered), _cell(r.direct), _ratio(r.buffered_over_direct),
                 _ratio(r.buffered_over_memcopy)] for r in s.rows if r.direction == d]
        if rows:
            sections.append(Section(f"{TITLES[d]}, bs 2M, io_uring (median of {n}, ± half-range)",
                                    Table.of(HEADERS, rows, left=0)))
    sections.append(Section("Where the wall is", bullets=tuple(s.sentences)))
    ids = s.run_ids
    data = {
        "bed": bed, "kernel": ctx["kernel"], "host": host,
        "ceilings": {
            "memcopy_bytes_per_s": {str(t): c.median for t, c in sorted(s.memcopy.items())},
            **{f"direct_{d}_bytes_per_s": c.cell.median for d, c in s.direct_ceiling.items()},
            **{f"direct_{d}_jobs": c.at for d, c in s.direct_ceiling.items()},
        },
        "points": [{"direction": r.direction, "jobs": r.jobs,
                    "buffered_bytes_per_s": r.buffered.median if r.buffered else None,
                    "direct_bytes_per_s": r.direct.median if r.direct else None,
                    "buffered_over_direct": r.buffered_over_direct,
                    "buffered_over_memcopy": r.buffered_over_memcopy,
                    "memcopy_threads": r.memcopy_threads,
                    "buffered": _cell_json(r.buffered), "direct": _cell_json(r.direct)}
                   for r in s.rows],
        "sentences": list(s.sentences), "statuses": s.statuses,
        **({"repeat": ctx["repeat"]} if "repeat" in ctx else {}),
        **({"sizing": ctx["sizing"]} if "sizing" in ctx else {}),
    }
    return Report(
        kind="limits", name=RECIPE,
        title=f"iowall limits — bed {bed.get('kind')}: {bed.get('fs')}{dev}{img}",
        head=(f"kernel {ctx['kernel']}, {host['cpu_count']} CPUs ({host['cpu_model']}), "
              f"{fmt_bytes(host['mem_total_bytes'])} RAM, fio {ctx['fio_version']}",),
        sections=tuple(sections), notes=tuple(ctx.get("notes", [])),
        notes_title="How it was measured", why=tuple(ctx.get("why", [])),
        tail=(f"runs {ids[0]}–{ids[-1]}; 'iowall show RUN' for raw data" if ids
              else "no runs stored", f"batch {ctx['batch']} ('iowall report' prints it again)"),
        label=str(ctx.get("label", "")), batch=str(ctx["batch"]), run_ids=tuple(ids), data=data)


# ------------------------------------------------------------------------------------------
# As a recipe: `iowall run limits`


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    opts.check_sets("limits", ("jobs", "fs", "bed_size", "mkfs", "mount"))
    jobs = opts.values("jobs")
    if jobs is not None and not all(isinstance(j, int) and not isinstance(j, bool) and j >= 1
                                    for j in jobs):
        raise UserError("--set jobs=…: job counts are whole numbers, at least 1")
    size = one(opts, "bed_size")
    lo = LimitsOptions(bed=opts.bed or "ram", fs=str(one(opts, "fs") or "xfs"),
                       size=parse_size(size, what="--set bed_size") if size is not None else None,
                       jobs=tuple(sorted(set(jobs))) if jobs is not None else None,
                       repeat=opts.repeats(quick_default=3), quick=opts.quick,
                       label=opts.label or "limits", mkfs_opts=str(one(opts, "mkfs") or ""),
                       mount_opts=str(one(opts, "mount") or ""), probes=opts.probes,
                       knobs=opts.knobs)
    return run_limits(lo, store, progress)


register(Recipe(name="limits", seed="002",
                description="the ceilings (memory copy, direct I/O) and buffered vs direct "
                            "sequential write and read at rising job counts",
                execute=_execute, module=__name__))
