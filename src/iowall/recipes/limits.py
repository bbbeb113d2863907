"""`iowall limits`: the ceilings (memory copy, direct I/O) and buffered vs uncached vs direct
sequential write and read at rising job counts, on a bed provisioned for the purpose (one per
XFS block size with ``--fs-block``).

Method (after seed 002): bs 2M, 10 files per job, pwritev2/preadv2 (fio's pvsync2; the seed's
io_uring stays in the buffered_wall recipe), so that buffered, uncached and direct differ only
in their flag and fio and iowall-engine can be held against each other. Unlike the seed, every write point
moves the same total amount of data whatever the job count (strong scaling), so that each point
is measured against the same dirty-page thresholds, and the total is sized from the kernel's
dirty threshold so that buffered writes cross it: a buffered write that fits under the
threshold measures memcpy into the page cache, not I/O. Buffered and uncached writes end with
fsync (end_fsync=1), so their time covers the writeback of everything written. Uncached points
use RWF_DONTCACHE (0x80): fio when the installed fio passes that flag, else iowall-engine.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.context import representative
from ..analysis.dirty import applied_threshold_note
from ..analysis.limits import LimitsSummary, summarise
from ..analysis.why import why_run
from ..beds import BedSpec, check_fs, provision
from ..beds.xfs_blocks import check_fs_blocks, fmt_block, parse_fs_blocks
from ..errors import UserError
from ..guestmem import hold_guest_memory
from ..knobs import KnobSession
from ..model import Run
from ..repeat import AUTO_MAX, RepeatPolicy, as_policy
from ..repeat import summary as summary_lines
from ..repeat import to_json as repeat_json
from ..results import Report
from ..runner import Progress, Task
from ..session import Session
from ..store import Store
from ..sysinfo import cpu_count, dirty_thresholds_bytes, host_facts, loadavg, meminfo, sysctl
from ..units import fmt_bytes, parse_size
from ..workloads.dontcache import dontcache_support, fio_dontcache_ok
from .limits_report import limits_report
from .limits_sizing import Sizing, default_jobs, describe_jobs, plan_bed_size, size_points
from .limits_tasks import (
    LimitsBed,
    io_point,
    layout_read_pool,
    make_io_task,
    make_memcopy_task,
)
from .options import RecipeOptions, one
from .registry import Recipe, register

RECIPE = "limits"



# ------------------------------------------------------------------------------------------
# The whole job


@dataclass(frozen=True)
class LimitsOptions:
    """What the user asked for on the command line."""

    bed: str = "ram"
    fs: str = "xfs"
    size: int | None = None
    jobs: tuple[int, ...] | None = None
    #: fixed rounds (a count), ``auto``, or None: auto to ±5% (at most 10), 3 with --quick
    repeat: RepeatPolicy | int | None = None
    quick: bool = False
    label: str = "limits"
    mkfs_opts: str = ""
    mount_opts: str = ""
    probes: str = "default"
    #: knobs held for the whole run (name → value read back)
    knobs: tuple[tuple[str, str], ...] = ()
    #: XFS block sizes in bytes, one bed each (``--fs-block 4k,16k``); empty: mkfs's default
    fs_blocks: tuple[int, ...] = ()

    def policy(self) -> RepeatPolicy:
        """``--repeat`` as given; else each cell until its 95% interval is within ±5% or 10
        runs (a full run), or 3 rounds (--quick)."""
        if self.repeat is not None:
            return as_policy(self.repeat)
        return RepeatPolicy(3) if self.quick else RepeatPolicy.until_decided(AUTO_MAX, FULL_TARGET)


#: A full run repeats each cell until the 95% interval of its median is within this.
FULL_TARGET = 0.05


def _uncached_choice(lb: LimitsBed) -> tuple[str | None, str]:
    """Who generates the uncached points on this bed: ``fio``, ``engine``, or None (not
    supported here), and the sentence that says why."""
    ok, why_not = dontcache_support(lb.bed.path)
    if not ok:
        return None, f"uncached not measured: {why_not}"
    fio_ok, fio_why = fio_dontcache_ok()
    if fio_ok:
        return "fio", ("uncached points: fio pvsync2 with uncached=1, which passes "
                       "RWF_DONTCACHE (0x80), checked")
    return "engine", (f"uncached points: iowall-engine (pwritev2/preadv2 with RWF_DONTCACHE, "
                      f"0x80), same files, block size and jobs as the fio points; {fio_why}")


def _bed_tasks(lb: LimitsBed, sizing: Sizing, jobs: Sequence[int], cpus: int, block: str,
               uncached: str | None) -> list[Task]:
    """The data points of one bed: buffered, uncached (when supported) and direct at every job
    count, plus the engine's double of the buffered point at the CPU count, so the report can
    hold the two generators against each other."""
    tasks = []
    for j in jobs:
        for rw in ("write", "read"):
            for mode in ("buffered", "uncached", "direct"):
                if mode == "uncached" and uncached is None:
                    continue
                gen = uncached if mode == "uncached" else "fio"
                tasks.append(make_io_task(io_point(rw, mode, j, sizing, fs_block=block,
                                                   generator=gen or "fio"), lb, sizing))
    double = max((j for j in jobs if j <= cpus), default=min(jobs))
    for rw in ("write", "read"):
        tasks.append(make_io_task(io_point(rw, "buffered", double, sizing, fs_block=block,
                                           generator="engine"), lb, sizing))
    return tasks


@dataclass
class _BedRuns:
    """What the beds of one limits run gathered, bed by bed (one per filesystem block size)."""

    policy: RepeatPolicy
    jobs: list[int]
    cpus: int
    mem_total: int
    quick: bool
    budget: int | None
    beds: list[dict[str, Any]] = field(default_factory=list)
    sizing_notes: list[str] = field(default_factory=list)
    sizing_doc: dict[str, Any] = field(default_factory=dict)
    uncached_notes: list[tuple[str, str]] = field(default_factory=list)
    uncached_missing: str = "-"
    repeat_lines: list[str] = field(default_factory=list)
    repeat_docs: dict[str, Any] = field(default_factory=dict)

    def on_bed(self, lb: LimitsBed, block: str, *, first: bool) -> None:
        """Size the points for this bed, lay out its read pool, run its points interleaved
        (the memory-copy ceiling on the first bed only)."""
        session, bed = lb.session, lb.bed
        session.use_beds(bed)
        self.beds.append(dict(bed.facts))
        threshold, _bg = dirty_thresholds_bytes()
        # On a dir bed --size bounds the data iowall writes; on the others it is the bed.
        free = min(bed.free_bytes(), self.budget) if self.budget else bed.free_bytes()
        sizing = size_points(free_bytes=free, dirty_threshold=threshold, cpus=self.cpus,
                             mem_total=self.mem_total, jobs=self.jobs, quick=self.quick)
        if first:
            self.sizing_notes = list(sizing.notes)
            self.sizing_doc = {"write_bytes": sizing.write_bytes,
                               "read_bytes": sizing.read_bytes,
                               "dirty_threshold_bytes": threshold}
        os.makedirs(lb.write_dir, exist_ok=True)
        gen, why_uncached = _uncached_choice(lb)
        if gen is None:
            self.uncached_missing = "n/a"
        self.uncached_notes.append((why_uncached, block))
        layout_read_pool(lb, sizing, self.cpus)
        tasks: list[Task] = ([make_memcopy_task(t, sizing) for t in sizing.memcopy_threads]
                             if first else [])
        tasks += _bed_tasks(lb, sizing, self.jobs, self.cpus, block, gen)
        session.execute(tasks, self.policy)
        assert session.decider is not None
        names = {t.point.key(): t.title for t in tasks}
        self.repeat_lines += [x for x in summary_lines(self.policy, session.decider, names)
                              if x not in self.repeat_lines]
        self.repeat_docs.update(repeat_json(self.policy, session.decider, names)["decisions"])


def run_limits(opts: LimitsOptions, store: Store, progress: Progress) -> Report:
    """Provision the bed (one per filesystem block size), size the points, run everything
    interleaved, store every run, and return the Report (ceilings, tables, the wall in
    sentences, Why). Every bed is always torn down."""
    spec = BedSpec.parse(opts.bed)
    cpus = cpu_count()
    jobs = list(opts.jobs) if opts.jobs else default_jobs(cpus)
    policy = opts.policy()
    blocks = [fmt_block(b) for b in opts.fs_blocks] or [""]
    check_fs(spec, opts.fs)
    if opts.fs_blocks:
        check_fs_blocks(spec, opts.fs, opts.fs_blocks, opts.mkfs_opts)
    mi = meminfo()
    bed_size = plan_bed_size(bed_kind=spec.kind, mem_available=mi.get("MemAvailable", 0),
                             dirty_ratio=int(sysctl("vm.dirty_ratio") or 20),
                             dirty_bytes=int(sysctl("vm.dirty_bytes") or 0), quick=opts.quick,
                             size_override=opts.size)
    session = Session(store=store, label=opts.label, progress=progress, probes=opts.probes,
                      knobs=dict(opts.knobs), memory_note=False)
    notes: list[str] = []
    load = loadavg()
    if load > cpus * 0.5:
        notes.append(f"the machine was busy when the job started (load {load:.1f} on {cpus} "
                     "CPUs): other work shares the CPUs and widens the spread; rerun when idle")
    if spec.kind in ("ram", "loop") and not opts.size:
        notes.append(f"bed sized to {fmt_bytes(bed_size)} for this machine "
                     f"({fmt_bytes(mi.get('MemTotal', 0))} RAM, {cpus} CPUs)")
    if not opts.jobs:
        notes.append(f"job counts {', '.join(map(str, jobs))}: {describe_jobs(cpus)}")
    if len(blocks) > 1:
        notes.append(f"XFS block sizes {', '.join(blocks)}: one bed each, one after another "
                     "(points interleave within a bed); memory copy measured on the first")
    run = _BedRuns(policy=policy, jobs=jobs, cpus=cpus, mem_total=mi.get("MemTotal", 0),
                   quick=opts.quick, budget=opts.size)
    with KnobSession() as ks:
        progress.begin(1.0)
        progress.step("guest memory: touching the free memory once")
        gm = hold_guest_memory(ks)
        progress.end()
        if gm is not None:
            notes.append(gm.note())
        for i, block in enumerate(blocks):
            mkfs = " ".join(x for x in (opts.mkfs_opts, f"-b size={block}" if block else "") if x)
            with provision(spec, fs=opts.fs, size_bytes=bed_size, mkfs_opts=mkfs,
                           mount_opts=opts.mount_opts) as bed:
                run.on_bed(LimitsBed(bed, session), block, first=i == 0)
    notes += run.sizing_notes
    runs = session.runs
    notes += _one_per_reason(run.uncached_notes) + session.notes
    notes.append("caches are dropped (sync; drop_caches=3) before every data point; points "
                 "run interleaved, one round after another")
    notes += run.repeat_lines
    applied = applied_threshold_note(runs, sized_from=run.sizing_doc.get("dirty_threshold_bytes"))
    if applied is not None:
        notes.append(applied)
    ctx: dict[str, Any] = {"bed": run.beds[0], "beds": run.beds, "kernel": os.uname().release,
                           "host": host_facts(), "fio_version": session.fio_version,
                           "batch": session.batch, "notes": notes, "sizing": run.sizing_doc,
                           "uncached_missing": run.uncached_missing, "auto": policy.auto,
                           "uncached": _one_per_reason(run.uncached_notes),
                           "repeat": {"policy": policy.to_json(), "decisions": run.repeat_docs}}
    summary = summarise(runs, cpus)
    ctx["why"] = why(summary, runs)
    return limits_report(summary, ctx)


def _one_per_reason(notes: Sequence[tuple[str, str]]) -> list[str]:
    """(reason, block) pairs as notes: one per reason, naming the block sizes only when the
    reason differs between them."""
    reasons = list(dict.fromkeys(r for r, _ in notes))
    if len(reasons) <= 1:
        return reasons
    return [r + f" ({', '.join(b for x, b in notes if x == r)} blocks)" for r in reasons]


def why(summary: LimitsSummary, runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Explain every buffered point (its median run): the rules that fire, the nearest misses,
    where the CPU time went; the peak of each direction first."""
    out: list[dict[str, Any]] = []
    by_id = {r.id: r for r in runs}
    for block in summary.blocks:
        for direction in ("write", "read"):
            rows = [r for r in summary.rows
                    if r.direction == direction and r.buffered and r.block == block]
            peak = max(rows, key=lambda r: r.buffered.median if r.buffered else 0.0,
                       default=None)
            for row in sorted(rows, key=lambda r: (r is not peak, r.jobs)):
                assert row.buffered is not None
                group = [by_id[i] for i in row.buffered.run_ids if i in by_id]
                run = representative(group, f"{direction}_bw_bytes_per_s")
                if run is None:
                    continue
                w = why_run(run, runs)
                tag = ", the peak" if row is peak else ""
                jobs = f"{row.jobs} job" + ("" if row.jobs == 1 else "s")
                where = f" ({block} blocks)" if block else ""
                out.append({**w, "point": f"buffered {direction} at {jobs}{where}{tag}",
                            "direction": direction, "jobs": row.jobs})
    return out


# ------------------------------------------------------------------------------------------
# As a recipe: `iowall run limits`


def _check(opts: RecipeOptions) -> None:
    opts.check_sets("limits", ("jobs", "fs", "bed_size", "mkfs", "mount", "fs_block"))
    jobs = opts.values("jobs")
    if jobs is not None and not all(isinstance(j, int) and not isinstance(j, bool) and j >= 1
                                    for j in jobs):
        raise UserError("--set jobs=…: job counts are whole numbers, at least 1")


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    jobs = opts.values("jobs")
    size = one(opts, "bed_size")
    lo = LimitsOptions(bed=opts.bed or "ram", fs=str(one(opts, "fs") or "xfs"),
                       size=parse_size(size, what="--set bed_size") if size is not None else None,
                       jobs=tuple(sorted(set(jobs))) if jobs is not None else None,
                       repeat=opts.repeat, quick=opts.quick,
                       label=opts.label or "limits", mkfs_opts=str(one(opts, "mkfs") or ""),
                       mount_opts=str(one(opts, "mount") or ""), probes=opts.probes,
                       knobs=opts.knobs,
                       fs_blocks=tuple(parse_fs_blocks(",".join(map(str, blocks))))
                       if (blocks := opts.values("fs_block")) else ())
    return run_limits(lo, store, progress)


register(Recipe(name="limits", seed="002",
                description="the ceilings (memory copy, direct I/O) and buffered vs uncached "
                            "vs direct "
                            "sequential write and read at rising job counts",
                execute=_execute, check=_check, module=__name__))
