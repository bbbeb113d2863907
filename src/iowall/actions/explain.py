"""`explain`, on the command line and on a run's page: why a run is where it is, judged in the
context of its batch (the ceilings and the memory copy measured beside it)."""

from __future__ import annotations

from ..analysis.explain.facts import Explanation
from ..analysis.explain.run import explain
from ..model import Run
from ..store import RunFilter, Store


def batch_runs(store: Store, run: Run) -> list[Run]:
    """The runs of a run's batch (the context its Why is judged in), or the run alone."""
    return store.runs(RunFilter(batch=run.batch)) if run.batch else [run]


def explain_run(store: Store, run: Run | int, batch: list[Run] | None = None) -> Explanation:
    """The Explanation of ``run`` (a Run, or a run id: a NotFound when there is none) in its
    ``batch`` (read here when not given): `iowall explain RUN` prints it, the dashboard's run
    page shows its Why."""
    if isinstance(run, int):
        run = store.get_run(run)
    if batch is None:
        batch = batch_runs(store, run)
    return explain(run, batch)
