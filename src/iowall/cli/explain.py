"""`iowall explain RUN`: which kernel path holds a run at its wall, with the evidence."""

from __future__ import annotations

import json

from ..analysis.context import explain_context, skipped_probes
from ..analysis.explain import explain as explain_rules
from ..model import Run
from ..report.emit import emit
from ..report.run import Explanation
from ..store import RunFilter, Store
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt, RunIdArg


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
    run_id: RunIdArg,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Say why a run's throughput is where it is: the rules that fire, with their numbers."""
    store = Store(db)
    run = store.get_run(run_id)
    verdicts, ctx = verdicts_for(run, store)
    emit(Explanation(run, tuple(verdicts), ctx.get("throughput_bytes_per_s"),
                     tuple(skipped_probes(run))), fmt, output)
