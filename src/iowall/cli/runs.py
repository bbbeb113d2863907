"""`iowall runs` (list stored runs) and `iowall show RUN` (one run, whole)."""

from __future__ import annotations

import csv
import json
import sys
from enum import Enum
from typing import Annotated

import typer

from ..machine.atomic import open_atomic
from ..report.emit import emit, json_text, write, wrote
from ..report.run import RUN_CSV_FIELDS, RunList, csv_row, run_json
from ..store import RunFilter, Store
from ..store.db import COUNTED
from ..vocab.errors import UserError
from .options import DbOpt, ListFormat, ListFormatOpt, OutputOpt, RecordFormat, RecordFormatOpt, RunIdArg


class Status(str, Enum):
    """A run's status, as stored."""

    ok = "ok"
    failed = "failed"
    interrupted = "interrupted"
    filled = "filled"


#: Runs on a page of `iowall runs` in text when no --limit is given.
PAGE_SIZE = 50


def runs(
    label: Annotated[str | None, typer.Option(help="only this label")] = None,
    recipe: Annotated[str | None, typer.Option(help="only this recipe")] = None,
    batch: Annotated[str | None, typer.Option(help="only this batch (one invocation)")] = None,
    status: Annotated[Status | None, typer.Option(help="only runs with this status")] = None,
    host: Annotated[str | None, typer.Option(help="only this host")] = None,
    kernel: Annotated[
        str | None,
        typer.Option(
            metavar="RELEASE", help="only kernels whose release starts with this, e.g. 6.18 or 6.18.44"
        ),
    ] = None,
    last: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="only the last N runs (0: none; a negative N is refused)"),
    ] = None,
    page: Annotated[
        int | None,
        typer.Option(min=1, metavar="P", help="page P of the list, newest first (1: the newest runs)"),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help=f"runs per page (text shows the newest {PAGE_SIZE} unless "
            "told; json and csv stream every run unless --page or --limit is given)",
        ),
    ] = None,
    before: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="ID",
            help="only runs with an id below ID: the page after one whose oldest run is ID "
            "(keyset: as fast at the millionth run as at the first)",
        ),
    ] = None,
    fmt: ListFormatOpt = ListFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """List stored runs, oldest first (in text, a page of the newest; json and csv stream)."""
    if last is not None and (page is not None or limit is not None or before is not None):
        raise UserError("give --last N, or --page/--limit/--before, not both")
    store = Store.existing(db)
    flt = RunFilter(
        label=label,
        recipe=recipe,
        batch=batch,
        status=status.value if status else None,
        host=host,
        kernel=kernel,
        limit=last,
    )
    if last is not None:
        found = store.runs(flt)
    elif fmt != ListFormat.text and page is None and limit is None and before is None:
        stream_runs(store, flt, fmt, output)
        return
    else:
        number, size = page or 1, limit or PAGE_SIZE
        found, total = store.page(
            flt, number=number, size=size, before=before, at_most=number * size + COUNTED
        )
        older = max(0, total - number * size)
        if older and fmt == ListFormat.text and found:
            many = f"more than {COUNTED:,}" if older > COUNTED else str(older)
            print(
                f"{many} older run{'' if older == 1 else 's'} not shown: --before "
                f"{found[0].id} (or --page {number + 1}) for the next page, --limit N for "
                "longer pages, --format csv or json for every run",
                file=sys.stderr,
            )
    emit(RunList.of(found), fmt, output)


def stream_runs(store: Store, flt: RunFilter, fmt: ListFormat, output: str | None) -> None:
    """Every run ``flt`` selects as json or csv, written as it is read (keyset pages), in
    bounded memory; the same bytes as the RunList renderers give for the whole list."""
    with open_atomic(output or "-", what="report") as f:
        if fmt == ListFormat.csv:
            names = store.metric_names(flt)
            w = csv.writer(f, lineterminator="\n")
            w.writerow([*RUN_CSV_FIELDS, *names])
            for r in store.iter_runs(flt):
                w.writerow(csv_row(r, names))
        else:
            head, tail = json_text({"runs": []}).split("[]", 1)  # the one "[]" of that head
            f.write(head + "[")
            for n, r in enumerate(store.iter_runs(flt)):
                f.write(("," if n else "") + json.dumps(run_json(r), separators=(",", ":"), default=str))
            f.write("]" + tail)
    if output not in (None, "-"):
        wrote(output)


def show(
    run_id: RunIdArg,
    fmt: RecordFormatOpt = RecordFormat.text,
    raw: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="print one raw artifact (e.g. fio.json, job.fio; a compressed "
            "one, such as profile.folded.gz, as its text)",
        ),
    ] = None,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Show one run: point, metrics, environment, bed, raw artifacts and series."""
    r = Store.existing(db).get_run(run_id)
    if raw is None:
        emit(r, fmt, output)
        return
    a = next((a for a in r.artifacts if a.name == raw), None)
    if a is None:
        names = ", ".join(a.name for a in r.artifacts) or "none"
        raise UserError(f"run {run_id} has no artifact {raw!r} (it has: {names})")
    # the artifact's text (a compressed one unpacked): exactly that into a file; on a
    # terminal, ending in a newline
    text = a.text()
    newline = "" if output or text.endswith("\n") else "\n"
    write(text + newline, output, what="artifact")
