"""`iowall explain RUN`: which kernel path holds a run at its wall, with the evidence."""

from __future__ import annotations

import json

import typer

from ..analysis.context import explain_context, skipped_probes
from ..analysis.explain import explain as explain_rules
from ..analysis.explain import sentences, to_json
from ..model import Run
from ..store import RunFilter, Store
from ..units import fmt_rate
from .common import check_format, open_store, print_json


def verdicts_for(run: Run, store: Store) -> tuple[list, dict[str, float]]:  # type: ignore[type-arg]
    """Explain verdicts of a stored run, with context from its batch."""
    batch = store.runs(RunFilter(batch=run.batch)) if run.batch else [run]
    ctx = explain_context(run, batch)
    lock_rows = []
    if run.id is not None:
        art = store.artifact(run.id, "lock_contention.json")
        if art is not None:
            try:
                doc = json.loads(art.body)
                lock_rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
            except json.JSONDecodeError:
                lock_rows = []
    metrics = {m.name: m.value for m in run.metrics}
    return explain_rules(metrics, ctx, lock_rows=lock_rows), ctx


def explain(
    run_id: int = typer.Argument(..., metavar="RUN", help="run id"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Say why a run's throughput is where it is: the rules that fire, with their numbers."""
    check_format(fmt, ("text", "json"))
    store = open_store(db)
    run = store.get_run(run_id)
    verdicts, ctx = verdicts_for(run, store)
    skipped = skipped_probes(run)
    if fmt == "json":
        print_json(to_json(run_id, verdicts, skipped))
        return
    tp = ctx.get("throughput_bytes_per_s")
    typer.echo(f"run {run_id}: {run.point.describe()}" + (f", {fmt_rate(tp)}" if tp else ""))
    for s in sentences(verdicts):
        typer.echo(f"  - {s}")
    for sk in skipped:
        typer.echo(f"  (probe {sk['probe']} skipped: {sk['reason']})")
