"""`iowall runs` (list stored runs) and `iowall show RUN` (one run, whole)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from ..errors import UserError
from ..model import Run, primary_metric
from ..report.emit import emit, write
from ..report.run import RunList, run_json
from ..store import RunFilter, Store
from ..units import fmt_rate
from .options import DbOpt, ListFormat, ListFormatOpt, OutputOpt, RecordFormat, RecordFormatOpt, RunIdArg

__all__ = ["run_json", "runs", "show"]


class Status(str, Enum):
    """A run's status, as stored."""

    ok = "ok"
    failed = "failed"
    interrupted = "interrupted"
    filled = "filled"


def _headline(r: Run) -> str:
    """The run's primary metric (``model.primary_metric``: what ``--repeat auto`` decides
    on), e.g. ``write 7758MiB/s``, ``memcopy 21.3GiB/s``, ``create 24,310 files/s``."""
    m = primary_metric(r)
    if m is None:
        return ""
    if m.unit == "B/s":
        return f"{m.name.removesuffix('_bytes_per_s').removesuffix('_bw')} {fmt_rate(m.value)}"
    return f"{m.name.removesuffix('_files_per_s').removesuffix('_per_s')} {m.value:,.0f} {m.unit}"


def runs(
    label: Annotated[str | None, typer.Option(help="only this label")] = None,
    recipe: Annotated[str | None, typer.Option(help="only this recipe")] = None,
    batch: Annotated[str | None, typer.Option(help="only this batch (one invocation)")] = None,
    status: Annotated[Status | None, typer.Option(help="only runs with this status")] = None,
    host: Annotated[str | None, typer.Option(help="only this host")] = None,
    kernel: Annotated[str | None, typer.Option(
        metavar="RELEASE", help="only kernels whose release starts with this, e.g. 6.18 or "
        "6.18.44")] = None,
    last: Annotated[int | None, typer.Option(
        min=0, metavar="N", help="only the last N runs (0: none; a negative N is refused)")
    ] = None,
    fmt: ListFormatOpt = ListFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """List stored runs, oldest first."""
    found = Store(db).runs(RunFilter(
        label=label, recipe=recipe, batch=batch, status=status.value if status else None,
        host=host, kernel=kernel, limit=last))
    emit(RunList(tuple(found), tuple(_headline(r) for r in found)), fmt, output)


def show(
    run_id: RunIdArg,
    fmt: RecordFormatOpt = RecordFormat.text,
    raw: Annotated[str | None, typer.Option(
        metavar="NAME", help="print one raw artifact (e.g. fio.json, job.fio)")] = None,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Show one run: point, metrics, environment, bed, raw artifacts and series."""
    r = Store(db).get_run(run_id)
    if raw is None:
        emit(r, fmt, output)
        return
    a = next((a for a in r.artifacts if a.name == raw), None)
    if a is None:
        names = ", ".join(a.name for a in r.artifacts) or "none"
        raise UserError(f"run {run_id} has no artifact {raw!r} (it has: {names})")
    # exactly the stored bytes into a file; on a terminal, ending in a newline
    newline = "" if output or a.body.endswith("\n") else "\n"
    write(a.body + newline, output, what="artifact")
