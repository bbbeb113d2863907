"""`iowall explain RUN`: which kernel path holds a run at its wall, with the evidence."""

from __future__ import annotations

from ..actions.explain import explain_run
from ..report.emit import emit
from ..store import Store
from .options import DbOpt, OutputOpt, RecordFormat, RecordFormatOpt, RunIdArg


def explain(
    run_id: RunIdArg,
    fmt: RecordFormatOpt = RecordFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Say why a run's throughput is where it is: where its threads' wall-clock time went,
    the wall down to its mechanism (the device's side, the cost of each I/O, the kernel
    function), and the nearest misses."""
    emit(explain_run(Store.existing(db), run_id), fmt, output)
