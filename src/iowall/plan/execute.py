"""Running a plan: points grouped by the bed shape they need, interleaved round after round,
each with its knobs applied and restored, all through one Session."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..beds import Bed, BedSpec, check_fs, default_size, provision
from ..beds.xfs_blocks import check_fs_blocks
from ..machine.signals import shielded
from ..measure.repeat import Decider, pct, replay, summary
from ..measure.runner import Outcome, Partial, Task
from ..measure.session import Session
from ..model import Run
from ..store import Store
from ..tuning.knob_session import KnobSession
from ..vocab.errors import UserError, WorkloadError
from ..vocab.progress import Progress
from ..vocab.units import GIB, MIB
from ..workloads.dontcache import dontcache_support, fio_dontcache_ok
from ..workloads.fio import FioFailure, FioResult, run_fio
from ..workloads.jobfile import point_bytes
from ..workloads.stream import StreamResult
from .caveats import fio_caveats
from .model import BedShape, Plan, PlanPoint, Workload
from .stream import check_engine_point, run_engine_point, uses_engine


def auto_bed_size(points: Sequence[PlanPoint], workload: Workload) -> int:
    """A bed big enough for the largest point: 1.5x its bytes + 256 MiB, at least 1 GiB; for a
    job file or a size iowall cannot compute, the beds' default (25% of RAM)."""
    sizes = [None if workload.jobfile else point_bytes(pp.fio) for pp in points]
    if not sizes or any(s is None for s in sizes):
        return default_size()
    need = int(max(s or 0 for s in sizes) * 1.5) + 256 * MIB
    return max(GIB, (need + MIB - 1) // MIB * MIB)


def bed_sizes(points: Sequence[PlanPoint], workload: Workload) -> dict[BedShape, int]:
    """Each bed shape's size: the plan's, else ``auto_bed_size`` of the points on it."""
    return {
        shape: shape.size or auto_bed_size([pp for pp in points if pp.shape == shape], workload)
        for shape in dict.fromkeys(pp.shape for pp in points)
    }


def memory_need(plan: Plan) -> int | None:
    """The most memory a run of ``plan`` can allocate, what the guest-memory hold touches (as
    `limits`' ``sizing.memory_need``); None where iowall cannot bound it (a job file, verbatim
    fio options, a point's bytes unknown, a knob that reserves huge pages): all free memory
    then. Beds exist one at a time and each point drops its bed's cache first, so the bound is
    the largest point's: on a ram or loop bed twice the bed (its image, and the page cache of
    the files in it, which cannot exceed the bed), elsewhere the bytes the point lays down;
    and 1 GiB for fio, the engine and the probes."""
    if plan.workload.jobfile or plan.workload.options:
        return None
    points = plan.expand()
    sizes = bed_sizes(points, plan.workload)
    most = 0
    for pp in points:
        data = point_bytes(pp.fio)
        if data is None or any("hugepages" in knob.name for knob, _ in pp.knobs):
            return None
        held = 2 * sizes[pp.shape] if BedSpec.parse(pp.shape.kind).kind in ("ram", "loop") else data
        most = max(most, held)
    return most + GIB


# ------------------------------------------------------------------------------------------
# Order


def interleave(points: Sequence[PlanPoint], repeat: int, seed: int | None = None) -> list[tuple[int, int]]:
    """``(round, point index)`` in execution order: every round runs every point once (a b a b
    …, never all of a then all of b); points needing the same bed shape run together within a
    round so that each bed is provisioned at most once per round. With a seed, the order of
    the bed groups and of the points within each group is shuffled every round (recorded)."""
    return list(rounds(points, repeat, seed))


def rounds(
    points: Sequence[PlanPoint],
    repeat: int,
    seed: int | None = None,
    pending: Callable[[int], bool] | None = None,
) -> Iterator[tuple[int, int]]:
    """``interleave`` as a generator: each round is formed when the one before has been run,
    of the points for which ``pending(index)`` is then true (``--repeat auto``: the points
    not yet decided); it ends early when no point is pending."""
    groups: dict[BedShape, list[int]] = {}
    for i, pp in enumerate(points):
        groups.setdefault(pp.shape, []).append(i)
    rng = random.Random(seed)
    for r in range(repeat):
        gs = [[i for i in g if pending is None or pending(i)] for g in groups.values()]
        gs = [g for g in gs if g]
        if not gs:
            return
        if seed is not None:
            rng.shuffle(gs)
            for g in gs:
                rng.shuffle(g)
        for g in gs:
            for i in g:
                yield r, i


# ------------------------------------------------------------------------------------------
# Execution


@dataclass(frozen=True)
class PlanResult:
    """What a plan run produced: its points, every stored run, the beds, notes."""

    plan: Plan
    points: tuple[PlanPoint, ...]
    runs: tuple[Run, ...]
    batch: str
    beds: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    kernel: str = ""
    #: how each point's repeats went (``Schedule.decider``): run counts and decisions
    decider: Decider | None = None

    def repeat_lines(self) -> list[str]:
        """``3 repeats per point`` or ``repeat auto (…): 6–10 runs per point`` and the points
        that hit the maximum undecided, named as in the table."""
        d = self.decider or replay(self.runs, self.plan.repeats)
        return summary(self.plan.repeats, d, {pp.point.key(): pp.title() for pp in self.points})


@dataclass
class _Beds:
    """The bed in use (one at a time) while a plan runs."""

    bed: Bed | None = None


def _make_task(pp: PlanPoint, plan: Plan, beds: _Beds, session: Session, engine: bool = False) -> Task:
    def execute(partial: Partial) -> Outcome:
        bed = beds.bed
        assert bed is not None
        with KnobSession(bed) as ks:
            for knob, value in pp.knobs:
                ks.set(knob, value)
            in_force = dict(ks.in_force)
            if "mkfs" in pp.values:
                in_force["mkfs"] = str(bed.facts.get("mkfs_opts", ""))
            if "mount" in pp.values:
                in_force["mount"] = str(bed.facts.get("mount_opts", ""))
            workdir = os.path.join(bed.path, "iowall-plan")
            with shielded():
                shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir)
            session.drop_caches(partial)
            session.point_environment(in_force)  # read while the knobs are in force
            if pp.fio.get("mode") == "uncached":
                ok, why_not = dontcache_support(workdir)
                if not ok:
                    raise WorkloadError(f"uncached not possible on this bed: {why_not}")
            try:
                res: FioResult | StreamResult = (
                    run_engine_point(
                        pp.fio, workdir, lambda: session.drop_caches(partial), origin_s=partial.origin_s
                    )
                    if engine
                    else run_fio(plan.job(pp, workdir), origin_s=partial.origin_s)
                )
            except FioFailure as e:
                partial.artifacts.extend(e.result.artifacts())
                raise
            with shielded():
                shutil.rmtree(workdir, ignore_errors=True)
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series)

    weight = float(point_bytes(pp.fio) or GIB) / GIB + 0.2
    return Task(pp.point, execute, weight=weight, title=pp.title())


def check_points(points: Sequence[PlanPoint], plan: Plan | None = None, *, trial: bool = True) -> set[str]:
    """UserErrors, before anything runs, for knobs the points' beds cannot take and for modes
    nothing here can generate; the keys of the points iowall-engine runs (uncached where fio
    passes the old flag). ``trial=False`` (``--dry-run``) leaves out the two checks that touch
    the machine: observing fio's uncached flag and the trial mkfs + mount of XFS block sizes."""
    engine: set[str] = set()
    if trial and any(pp.fio.get("mode") == "uncached" for pp in points):
        fio_ok, why_not = fio_dontcache_ok()
        for pp in points:
            if uses_engine(pp.fio, fio_ok):
                check_engine_point(
                    pp.fio,
                    pp.title(),
                    jobfile=bool(plan and plan.workload.jobfile),
                    options=plan.workload.options if plan else {},
                    why_not_fio=why_not,
                )
                engine.add(pp.point.key())
    for pp in points:
        if pp.fio.get("mode") is not None and "direct" in pp.fio:
            raise UserError(f"point {pp.title()}: mode and direct both set; mode sets direct")
        spec = BedSpec.parse(pp.shape.kind)
        check_fs(spec, pp.shape.fs)
        for knob, _ in pp.knobs:
            if knob.kind == "xfs" and (spec.kind not in ("ram", "loop", "device") or pp.shape.fs != "xfs"):
                raise UserError(
                    f"knob {knob} needs an xfs bed, but point {pp.title()} runs on {pp.shape.describe()}"
                )
            if knob.needs_bed and spec.kind not in ("ram", "loop", "device"):
                raise UserError(
                    f"knob {knob} needs a bed with a block device (ram, loop or device), not {spec}"
                )
    blocks = {pp.shape.fs_block: pp.shape for pp in points if pp.shape.fs_block}
    for b, shape in blocks.items():
        check_fs_blocks(BedSpec.parse(shape.kind), shape.fs, [b] if trial else [], shape.mkfs_opts)
    if any(pp.knobs for pp in points) and os.geteuid() != 0:
        raise UserError("knobs (sysctl, sysfs, xfs) need root: run iowall as root")
    return engine


def run_plan(plan: Plan, store: Store, progress: Progress) -> PlanResult:
    """Run every point of the plan by ``plan.repeats`` (fixed rounds, or ``auto`` rounds over
    the points not yet decided), interleaved, and store every run.

    Beds: points are grouped by bed shape; while consecutive points share a shape they share
    one bed (a one-shape plan provisions its bed once), otherwise the bed is torn down and the
    next shape provisioned, so at most one bed exists at a time and nothing stays mounted.
    Knobs are applied for each point and restored right after it (journaled before writing).
    """
    points = plan.expand()
    engine = check_points(points, plan)
    sizes = bed_sizes(points, plan.workload)

    batch = str(uuid.uuid4())
    session = Session(
        store=store,
        label=plan.label,
        progress=progress,
        probes=",".join(plan.probes) if plan.probes else "default",
        extra={"plan": {**plan.describe(), "batch": batch}},
        shuffle=plan.shuffle,
        batch=batch,
    )
    beds = _Beds()
    tasks = [_make_task(pp, plan, beds, session, pp.point.key() in engine) for pp in points]
    sched = session.schedule
    policy = sched.start(plan.repeats)
    decider = sched.decider
    assert decider is not None
    keys = [pp.point.key() for pp in points]
    order = rounds(points, policy.max_runs, plan.shuffle, pending=lambda i: not decider.done(keys[i]))
    facts: dict[BedShape, Mapping[str, Any]] = {}
    progress.begin(sum(t.weight for t in tasks) * policy.max_runs)
    stack = contextlib.ExitStack()
    current: BedShape | None = None
    try:
        for r, i in order:
            pp = points[i]
            if pp.shape != current:
                beds.bed, current = None, None
                stack.close()
                stack = contextlib.ExitStack()
                beds.bed = stack.enter_context(
                    provision(
                        BedSpec.parse(pp.shape.kind),
                        fs=pp.shape.fs,
                        size_bytes=sizes[pp.shape],
                        mkfs_opts=pp.shape.mkfs_argv,
                        mount_opts=pp.shape.mount_opts,
                    )
                )
                current = pp.shape
                facts[pp.shape] = dict(beds.bed.facts)
                session.use_beds(beds.bed)
            sched.run_one(tasks[i], r)
    finally:
        try:
            progress.end()
        finally:
            beds.bed = None
            stack.close()
    notes = [*session.notes, *fio_caveats(points, plan.workload)]
    if len(facts) > 1:
        notes.append(f"{len(facts)} bed shapes: each was provisioned afresh once per round")
    notes.append(
        f"{session.drop_words} before every point; points run interleaved, one round "
        "after another" + (f", shuffled with seed {plan.shuffle}" if plan.shuffle is not None else "")
    )
    if policy.auto:
        notes.append(
            f"repeat auto: each round runs the points not yet decided; a point stops "
            f"when the {policy.confidence:.0%} order-statistic interval of the median "
            f"of its throughput is within ±{pct(policy.target)} or at "
            f"{policy.max_runs} runs (why: the note on its last run)"
        )
    return PlanResult(
        plan,
        tuple(points),
        tuple(sched.runs),
        batch,
        tuple(facts.values()),
        tuple(notes),
        os.uname().release,
        decider,
    )
