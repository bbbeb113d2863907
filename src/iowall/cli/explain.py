"""`iowall explain RUN`: which kernel path holds a run at its wall, with the evidence."""

from __future__ import annotations

from ..analysis.context import explain_context
from ..analysis.why import why_run
from ..report.emit import emit
from ..report.explanation import Explanation
from ..store import RunFilter, Store
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt, RunIdArg


def explain(
    run_id: RunIdArg,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Say why a run's throughput is where it is: the rules that fire, the nearest misses,
    and where the CPU time went."""
    store = Store.existing(db)
    run = store.get_run(run_id)
    batch = store.runs(RunFilter(batch=run.batch)) if run.batch else [run]
    ctx = explain_context(run, batch)
    emit(Explanation(run, why_run(run, batch), ctx.get("throughput_bytes_per_s")), fmt, output)
