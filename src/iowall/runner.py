"""Execute points: repeated in interleaved rounds (A B A B …, never all of A then all of B, so
that drift does not become a difference), each stored as a Run the moment it ends."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import Interrupted, UserError, WorkloadError
from .model import Artifact, Metric, Point, Run, Series, Status
from .probes.base import Probe, ProbeContext
from .store import Store


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


@dataclass(frozen=True)
class Task:
    """A point and how to execute it once; ``weight`` is its expected share of the time."""

    point: Point
    execute: Callable[[Partial], Outcome]
    weight: float = 1.0
    title: str = ""
    #: whether the schedule's probes watch this task (not for e.g. memory-copy ceilings)
    probed: bool = True


class Progress:
    """Protocol of a progress display (rich bar on a terminal, or nothing)."""

    def begin(self, total: float) -> None: ...
    def step(self, description: str) -> None: ...
    def advance(self, amount: float) -> None: ...
    def end(self) -> None: ...


@dataclass
class Schedule:
    """Runs ``tasks`` ``repeats`` times in interleaved rounds and stores every run."""

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

    def execute(self, tasks: Sequence[Task], repeats: int) -> list[Run]:
        """Execute all rounds; on Ctrl-C/SIGTERM store the run in flight as ``interrupted``
        and re-raise so that the caller tears the bed down."""
        if repeats < 1:
            raise UserError("--repeat must be at least 1")
        order = self.order(tasks, repeats)
        self.progress.begin(sum(t.weight for _, t in order))
        try:
            for r, task in order:
                self.run_one(task, r, repeats)
        finally:
            self.progress.end()
        return self.runs

    def run_one(self, task: Task, r: int, repeats: int) -> Run:
        """Execute one task once and store its run, whatever happens."""
        self.progress.step(f"{task.title or task.point.describe()}  [{r + 1}/{repeats}]")
        partial = Partial()
        started = time.time()
        try:
            outcome = self._probed(task, partial) if (task.probed and self.probes) \
                else task.execute(partial)
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
        return run

    def _probed(self, task: Task, partial: Partial) -> Outcome:
        """Run the task inside a ProbeSet; probe data joins the outcome (or the partial run,
        when the task is interrupted)."""
        from .probes import ProbeSet

        ps = ProbeSet(self.probes, self.probe_ctx or ProbeContext())
        ps.start()
        try:
            outcome = task.execute(partial)
        finally:
            results = ps.stop()
            for r in results:
                partial.metrics.extend(r.metrics)
                partial.series.extend(r.series)
                partial.artifacts.extend(r.artifacts)
                partial.notes.extend(r.notes)
                if r.skipped:
                    partial.notes.append(f"probe {r.probe} skipped: {r.skipped}")
        return replace(outcome, metrics=outcome.metrics + tuple(partial.metrics),
                       series=outcome.series + tuple(partial.series),
                       artifacts=outcome.artifacts + tuple(partial.artifacts),
                       notes=outcome.notes + tuple(partial.notes))

    def _store(self, point: Point, r: int, started: float, o: Outcome) -> Run:
        run = Run(point=point, label=self.label, status=o.status, started_at=started,
                  finished_at=time.time(), metrics=o.metrics, env=self.env(), bed=self.bed(),
                  artifacts=o.artifacts, series=o.series, batch=self.batch, repeat_index=r,
                  error=o.error, notes=o.notes)
        rid = self.store.add_run(run)
        run = replace(run, id=rid)
        self.runs.append(run)
        return run


def _from_partial(p: Partial, status: Status, error: str) -> Outcome:
    return Outcome(status=status, metrics=tuple(p.metrics), artifacts=tuple(p.artifacts),
                   series=tuple(p.series), notes=tuple(p.notes), error=error)
