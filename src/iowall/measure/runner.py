"""Execute points: repeated in interleaved rounds (A B A B …, never all of A then all of B, so
that drift does not become a difference), each stored as a Run the moment it ends.

With ``--repeat auto`` a round runs every point not yet decided (see ``iowall.measure.repeat``), and
a point's last run carries a note saying why it stopped."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..analysis.explain.kernel_paths import attribute, decode_folded, path_metrics
from ..analysis.regress.repeat_rule import DecisionState
from ..bundle.spool import Spool
from ..model import PROFILE_ARTIFACT, Artifact, Metric, Point, Run, Series, Status, primary_metric
from ..probes import ProbeSet
from ..probes.base import Probe, ProbeContext
from ..store import Store
from ..store.faults import failure_text
from ..vocab.errors import Interrupted, IowallError, StoreFailed, WorkloadError
from ..vocab.progress import Progress
from .repeat import Decider, KeyMetric, RepeatPolicy, as_policy


@dataclass(frozen=True)
class Outcome:
    """What one execution of a point produced."""

    status: Status = "ok"
    metrics: tuple[Metric, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    series: tuple[Series, ...] = ()
    notes: tuple[str, ...] = ()
    error: str = ""


@dataclass
class Partial:
    """What an execution has gathered so far, so an interrupted run keeps its data."""

    metrics: list[Metric] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: wall-clock time the probes' series count from (None: no probes); a workload's own
    #: series (fio's logs) are placed on the same axis by passing it on
    origin_s: float | None = None


@dataclass(frozen=True)
class Task:
    """A point and how to execute it once; ``weight`` is its expected share of the time."""

    point: Point
    execute: Callable[[Partial], Outcome]
    weight: float = 1.0
    title: str = ""
    #: whether the schedule's probes watch this task (not for e.g. memory-copy ceilings)
    probed: bool = True
    #: work of the task that is not the point's, done before the probes start and after
    #: they stop (removing a tree of files): outside the window, it is nobody's CPU time
    prepare: Callable[[], None] | None = None
    cleanup: Callable[[], None] | None = None


@dataclass
class Schedule:
    """Runs ``tasks`` in interleaved rounds by a RepeatPolicy and stores every run: a fixed
    number of rounds, or ``auto`` rounds over the points still undecided."""

    store: Store
    label: str
    env: Callable[[], dict[str, Any]]
    bed: Callable[[], dict[str, Any]]
    progress: Progress = field(default_factory=Progress)
    batch: str = field(default_factory=lambda: str(uuid.uuid4()))
    shuffle_seed: int | None = None
    runs: list[Run] = field(default_factory=list)
    #: probe classes to run around every probed task, and their context
    probes: Sequence[type[Probe]] = ()
    probe_ctx: ProbeContext | None = None
    #: the value that decides a point under ``--repeat auto`` (see iowall.measure.repeat)
    key_metric: KeyMetric = primary_metric
    #: per-point bookkeeping of the policy in force (set by ``start``/``execute``)
    decider: Decider | None = None
    #: where each run waits, fsynced, until the store has committed it (made on first use)
    spool: Spool | None = field(default=None, repr=False)

    @property
    def decisions(self) -> dict[str, DecisionState]:
        """The latest DecisionState of every point run so far, by ``Point.key()``."""
        return dict(self.decider.decisions) if self.decider is not None else {}

    @property
    def policy(self) -> RepeatPolicy | None:
        return self.decider.policy if self.decider is not None else None

    def start(self, repeats: RepeatPolicy | int) -> RepeatPolicy:
        """Begin bookkeeping for ``repeats``; callers that order runs themselves (plans) call
        this, then ``run_one`` while ``pending`` says which points still need runs."""
        policy = as_policy(repeats)
        self.decider = Decider(policy, self.key_metric)
        return policy

    def pending(self, tasks: Sequence[Task]) -> list[Task]:
        """The tasks whose point needs more runs, in the order given."""
        d = self.decider
        return [t for t in tasks if d is None or not d.done(t.point.key())]

    def order(self, tasks: Sequence[Task], repeats: int) -> list[tuple[int, Task]]:
        """Round-robin order; within each round optionally shuffled with the recorded seed."""
        rng = random.Random(self.shuffle_seed)
        out: list[tuple[int, Task]] = []
        for r in range(repeats):
            round_ = list(tasks)
            if self.shuffle_seed is not None:
                rng.shuffle(round_)
            out += [(r, t) for t in round_]
        return out

    def execute(self, tasks: Sequence[Task], repeats: RepeatPolicy | int) -> list[Run]:
        """Execute all rounds; on Ctrl-C/SIGTERM store the run in flight as ``interrupted``
        and re-raise so that the caller tears the bed down. Under ``auto``, round r runs
        every point not yet decided once (shuffled with the recorded seed, if any)."""
        policy = self.start(repeats)
        self.progress.begin(sum(t.weight for t in tasks) * policy.max_runs)
        try:
            if policy.auto:
                rng = random.Random(self.shuffle_seed)
                for r in range(policy.max_runs):
                    round_ = self.pending(tasks)
                    if not round_:
                        break
                    if self.shuffle_seed is not None:
                        rng.shuffle(round_)
                    for task in round_:
                        self.run_one(task, r)
            else:
                for r, task in self.order(tasks, policy.count):
                    self.run_one(task, r)
        finally:
            self.progress.end()
        return self.runs

    def run_one(self, task: Task, r: int, repeats: RepeatPolicy | int | None = None) -> Run:
        """Execute one task once and store its run, whatever happens."""
        policy = as_policy(repeats) if repeats is not None else self.policy
        of = "" if policy is None else (f"/≤{policy.max_runs}" if policy.auto else f"/{policy.count}")
        self.progress.step(f"{task.title or task.point.describe()}  [{r + 1}{of}]")
        partial = Partial()
        if task.prepare is not None:
            task.prepare()
        started = time.time()
        try:
            if task.probed and self.probes:
                outcome = self._probed(task, partial)
            else:
                outcome = task.execute(partial)
                outcome = replace(outcome, notes=outcome.notes + tuple(partial.notes))
            if task.cleanup is not None:
                task.cleanup()
        except Interrupted as e:
            self._store(task.point, r, started, _from_partial(partial, "interrupted", str(e)))
            raise
        except KeyboardInterrupt:
            self._store(task.point, r, started, _from_partial(partial, "interrupted", "SIGINT"))
            raise
        except WorkloadError as e:
            outcome = _from_partial(partial, "failed", str(e))
        run = self._store(task.point, r, started, outcome)
        self.progress.advance(task.weight)
        d = self.decider
        if d is not None and d.policy.auto and d.done(task.point.key()):
            # the rounds this point will not need: keep the bar's total honest
            self.progress.advance(task.weight * max(0, d.policy.max_runs - d.runs_of(task.point.key())))
        return run

    def _probed(self, task: Task, partial: Partial) -> Outcome:
        """Run the task inside a ProbeSet; probe data joins the outcome (or the partial run,
        when the task is interrupted)."""
        ps = ProbeSet(self.probes, self.probe_ctx or ProbeContext())
        ps.start()
        partial.origin_s = ps.origin_s
        try:
            outcome = task.execute(partial)
        finally:
            results = ps.stop()
            for r in results:
                partial.metrics.extend(r.metrics)
                partial.series.extend(r.series)
                partial.artifacts.extend(r.artifacts)
                partial.metrics.extend(derived_metrics(r.artifacts))
                partial.notes.extend(r.notes)
                if r.skipped:
                    partial.notes.append(f"probe {r.probe} skipped: {r.skipped}")
        return replace(
            outcome,
            metrics=outcome.metrics + tuple(partial.metrics),
            series=outcome.series + tuple(partial.series),
            artifacts=outcome.artifacts + tuple(partial.artifacts),
            notes=outcome.notes + tuple(partial.notes),
        )

    def _store(self, point: Point, r: int, started: float, o: Outcome) -> Run:
        d = self.decider
        env = self.env() if d is None else {**self.env(), "repeat": d.policy.to_json()}
        run = Run(
            point=point,
            label=self.label,
            status=o.status,
            started_at=started,
            finished_at=time.time(),
            metrics=o.metrics,
            env=env,
            bed=self.bed(),
            artifacts=o.artifacts,
            series=o.series,
            batch=self.batch,
            repeat_index=r,
            error=o.error,
            notes=o.notes,
        )
        if d is not None and run.status != "interrupted":
            if d.observe(run).stop and d.policy.auto:
                run = replace(run, notes=run.notes + (d.note(point.key()),))
        rid, run = self._keep(run)
        run = replace(run, id=rid)
        self.runs.append(run)
        return run

    def _keep(self, run: Run) -> tuple[int, Run]:
        """Spool ``run`` (fsynced), then store it, then drop it from the spool: a run the store
        cannot take is never lost. A store failure stops the job with one line naming what
        failed and the spool file (StoreFailed); a spool that cannot write (its disk full
        too) does not keep the store from being tried."""
        if self.spool is None:
            self.spool = Spool(self.store.url, self.batch)
        try:
            run = self.spool.keep(run)
            spooled: str | None = None
        except OSError as e:
            spooled = e.strerror or str(e)
        try:
            rid = self.store.add_run(run, waiting=self.progress.step)  # an import may hold the store
        except IowallError:
            raise
        except Exception as e:  # the database's own errors: disk full, server gone, locked
            kept = (
                f"the next iowall command on this store imports the run, which waits in {self.spool.path}"
                if spooled is None
                else f"the spool could not keep it either ({spooled}): the run is lost"
            )
            raise StoreFailed(
                f"the store {self.store.shown} could not keep the run of {run.point.describe()} "
                f"({failure_text(e)}): {kept}"
            ) from e
        if spooled is None:
            try:
                self.spool.stored(run)
            except OSError:
                pass  # left in the spool: the next import skips it by its uuid
        return rid, run


def derived_metrics(artifacts: Sequence[Artifact]) -> list[Metric]:
    """Metrics computed from a probe's raw data: the share of CPU time of every kernel path
    (``analysis.paths``) from the profile's folded stacks, so compare and history see them."""
    out: list[Metric] = []
    for a in artifacts:
        if a.name == PROFILE_ARTIFACT:
            stacks = decode_folded(a.body)
            if stacks:
                out += path_metrics(attribute(stacks))
    return out


def _from_partial(p: Partial, status: Status, error: str) -> Outcome:
    return Outcome(
        status=status,
        metrics=tuple(p.metrics),
        artifacts=tuple(p.artifacts),
        series=tuple(p.series),
        notes=tuple(p.notes),
        error=error,
    )
