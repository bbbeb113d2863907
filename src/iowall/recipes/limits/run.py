"""Running `limits`: provision the bed (one per XFS block size), size the points for it, run
them interleaved (the memory-copy ceiling on the first bed), and gather what the report says
into a ``LimitsContext``; the numbers are summarised by ``analysis.scaling.limits``, explained by
``analysis.scaling.limits_why.why_limits`` and laid out by ``report.limits_report``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...analysis.explain.dirty import applied_threshold_note
from ...analysis.scaling.limits import summarise
from ...analysis.scaling.limits_why import why_limits
from ...beds import BedSpec, check_fs, provision
from ...beds.xfs_blocks import check_fs_blocks, fmt_block
from ...machine.sysinfo import busy_cpus, cpu_count, dirty_thresholds_bytes, host_facts, meminfo, sysctl
from ...measure.repeat import RepeatPolicy
from ...measure.repeat import summary as summary_lines
from ...measure.repeat import to_json as repeat_json
from ...measure.runner import Task
from ...measure.session import Session, hold_memory_step, memory_note
from ...results import Report
from ...store import Store
from ...tuning.knob_session import KnobSession
from ...vocab.progress import Progress
from ...vocab.units import fmt_bytes
from ...workloads.dontcache import dontcache_support, fio_dontcache_ok
from .options import LimitsOptions
from .report import LimitsContext, limits_report
from .sizing import Sizing, default_jobs, describe_jobs, memory_need, plan_bed_size, size_points
from .tasks import LimitsBed, io_point, layout_read_pool, make_io_task, make_memcopy_task


def _uncached_choice(lb: LimitsBed) -> tuple[str | None, str]:
    """Who generates the uncached points on this bed: ``fio``, ``engine``, or None (not
    supported here), and the sentence that says why."""
    ok, why_not = dontcache_support(lb.bed.path)
    if not ok:
        return None, f"uncached not measured: {why_not}"
    fio_ok, fio_why = fio_dontcache_ok()
    if fio_ok:
        return "fio", (
            "uncached points: fio pvsync2 with uncached=1, which passes RWF_DONTCACHE (0x80), checked"
        )
    return "engine", (
        f"uncached points: iowall-engine (pwritev2/preadv2 with RWF_DONTCACHE, "
        f"0x80), same files, block size and jobs as the fio points; {fio_why}"
    )


def _bed_tasks(
    lb: LimitsBed, sizing: Sizing, jobs: Sequence[int], cpus: int, block: str, uncached: str | None
) -> list[Task]:
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
                tasks.append(
                    make_io_task(
                        io_point(rw, mode, j, sizing, fs_block=block, generator=gen or "fio"), lb, sizing
                    )
                )
    double = max((j for j in jobs if j <= cpus), default=min(jobs))
    for rw in ("write", "read"):
        tasks.append(
            make_io_task(
                io_point(rw, "buffered", double, sizing, fs_block=block, generator="engine"), lb, sizing
            )
        )
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
        sizing = size_points(
            free_bytes=free,
            dirty_threshold=threshold,
            cpus=self.cpus,
            mem_total=self.mem_total,
            jobs=self.jobs,
            quick=self.quick,
        )
        if first:
            self.sizing_notes = list(sizing.notes)
            self.sizing_doc = {
                "write_bytes": sizing.write_bytes,
                "read_bytes": sizing.read_bytes,
                "dirty_threshold_bytes": threshold,
            }
        os.makedirs(lb.write_dir, exist_ok=True)
        gen, why_uncached = _uncached_choice(lb)
        if gen is None:
            self.uncached_missing = "n/a"
        self.uncached_notes.append((why_uncached, block))
        layout_read_pool(lb, sizing, self.cpus)
        tasks: list[Task] = [make_memcopy_task(t, sizing) for t in sizing.memcopy_threads] if first else []
        tasks += _bed_tasks(lb, sizing, self.jobs, self.cpus, block, gen)
        session.execute(tasks, self.policy)
        assert session.decider is not None
        names = {t.point.key(): t.title for t in tasks}
        self.repeat_lines += [
            x for x in summary_lines(self.policy, session.decider, names) if x not in self.repeat_lines
        ]
        self.repeat_docs.update(repeat_json(self.policy, session.decider, names)["decisions"])


def run_limits(opts: LimitsOptions, store: Store, progress: Progress) -> Report:
    """Provision the bed (one per filesystem block size), size the points, run everything
    interleaved, store every run, and return the Report (ceilings, tables, the wall in
    sentences, Why). Every bed is always torn down."""
    spec = BedSpec.parse(opts.bed)
    cpus = cpu_count()
    jobs = list(opts.jobs) if opts.jobs else default_jobs(cpus, opts.quick)
    policy = opts.policy()
    blocks = [fmt_block(b) for b in opts.fs_blocks] or [""]
    check_fs(spec, opts.fs)
    if opts.fs_blocks:
        check_fs_blocks(spec, opts.fs, opts.fs_blocks, opts.mkfs_opts)
    mi = meminfo()
    bed_size = plan_bed_size(
        bed_kind=spec.kind,
        mem_available=mi.get("MemAvailable", 0),
        dirty_ratio=int(sysctl("vm.dirty_ratio") or 20),
        dirty_bytes=int(sysctl("vm.dirty_bytes") or 0),
        quick=opts.quick,
        size_override=opts.size,
    )
    session = Session(
        store=store,
        label=opts.label,
        progress=progress,
        probes=opts.probes,
        knobs=dict(opts.knobs),
    )
    notes: list[str] = []
    busy = busy_cpus()
    if busy >= max(0.25, 0.15 * cpus):
        notes.append(
            f"other work was using {busy:.1f} of the {cpus} CPUs when the job started "
            "(/proc/stat over 0.5 s): it shares the CPUs and widens the spread; rerun when idle"
        )
    if spec.kind in ("ram", "loop") and not opts.size:
        notes.append(
            f"bed sized to {fmt_bytes(bed_size)} for this machine "
            f"({fmt_bytes(mi.get('MemTotal', 0))} RAM, {cpus} CPUs)"
        )
    if not opts.jobs:
        notes.append(f"job counts {', '.join(map(str, jobs))}: {describe_jobs(cpus, opts.quick)}")
    if len(blocks) > 1:
        notes.append(
            f"XFS block sizes {', '.join(blocks)}: one bed each, one after another "
            "(points interleave within a bed); memory copy measured on the first"
        )
    run = _BedRuns(
        policy=policy,
        jobs=jobs,
        cpus=cpus,
        mem_total=mi.get("MemTotal", 0),
        quick=opts.quick,
        budget=opts.size,
    )
    with KnobSession() as ks:  # the hold is restored with it, however the run ends
        need = memory_need(bed_size, mi.get("MemTotal", 0))
        gm = hold_memory_step(ks, progress, need) if opts.hold_memory else None
        said = memory_note(opts.hold_memory, gm)
        if said is not None:
            notes.append(said)
        for i, block in enumerate(blocks):
            mkfs = " ".join(x for x in (opts.mkfs_opts, f"-b size={block}" if block else "") if x)
            with provision(
                spec, fs=opts.fs, size_bytes=bed_size, mkfs_opts=mkfs, mount_opts=opts.mount_opts
            ) as bed:
                run.on_bed(LimitsBed(bed, session), block, first=i == 0)
    notes += run.sizing_notes
    runs = session.runs
    notes += _one_per_reason(run.uncached_notes) + session.notes
    notes.append(
        f"{session.drop_words} before every data point; points run interleaved, one round after another"
    )
    notes += run.repeat_lines
    applied = applied_threshold_note(runs, sized_from=run.sizing_doc.get("dirty_threshold_bytes"))
    if applied is not None:
        notes.append(applied)
    summary = summarise(runs, cpus)
    ctx = LimitsContext(
        bed=run.beds[0],
        beds=run.beds,
        kernel=os.uname().release,
        host=host_facts(),
        fio_version=session.fio_version,
        batch=session.batch,
        notes=notes,
        sizing=run.sizing_doc,
        uncached_missing=run.uncached_missing,
        auto=policy.auto,
        uncached=_one_per_reason(run.uncached_notes),
        repeat={"policy": policy.to_json(), "decisions": run.repeat_docs},
        why=why_limits(summary, runs),
    )
    report = limits_report(summary, ctx)
    return report if said is None else replace(report, data={**report.data, "guest_memory": said})


def _one_per_reason(notes: Sequence[tuple[str, str]]) -> list[str]:
    """(reason, block) pairs as notes: one per reason, naming the block sizes only when the
    reason differs between them."""
    reasons = list(dict.fromkeys(r for r, _ in notes))
    if len(reasons) <= 1:
        return reasons
    return [r + f" ({', '.join(b for x, b in notes if x == r)} blocks)" for r in reasons]
