"""`iowall export` (runs → a bundle file) and `iowall import` (bundle files → the store)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import closing
from typing import Annotated

import typer

from ..actions.selection import collect_runs, parse_selection
from ..bundle.files import Item, as_run, read_models, write_bundle
from ..bundle.pool import Present, file_bytes, packed_parts, plan_import, stored_uuids
from ..machine.dirs import db_url, default_db_url
from ..model import MEASURED_STATUSES, Run
from ..report.emit import write, wrote
from ..report.table import text_table
from ..store import RunFilter, Store
from ..store.db import none_left_if_failed
from ..store.gcpause import gc_paused
from ..store.packing import Packed
from ..vocab.errors import UserError
from .options import DbOpt
from .progress import RichProgress

#: From this many bytes of bundle files on, a progress bar (about a second of importing).
BAR_MIN_BYTES = 8 << 20


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _kernel(r: Run) -> str:
    return str(r.env.get("kernel", "")) or "?"


def export(
    output: Annotated[
        str,
        typer.Option(
            "-o", "--output", metavar="FILE.json", help="bundle file to write, atomically (- for stdout)"
        ),
    ],
    selections: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SELECTION",
            help="runs to export: a label, FIELD=V[,…], ids=3-9 or FILE.json[:…]; none = every run",
            show_default=False,
        ),
    ] = None,
    measured_only: Annotated[
        bool, typer.Option("--measured-only", help="only completed measurements (ok, filled)")
    ] = False,
    packed: Annotated[
        bool,
        typer.Option(
            "--packed",
            help="series, artifacts and metrics as the store keeps them: a quarter of the size, "
            "imported about twice as fast, not for reading by eye",
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Write runs, whole (metrics, env, bed, series, raw artifacts), to a versioned JSON bundle."""
    texts = list(selections or [])
    needs_store = not texts or any(parse_selection(t).bundle is None for t in texts)
    store = Store.existing(db) if needs_store else None
    if texts:
        runs: Iterable[Run] = collect_runs(store, texts, measured_only=measured_only)
    else:  # every stored run: streamed a page at a time, in bounded memory
        assert store is not None
        every = RunFilter(statuses=MEASURED_STATUSES if measured_only else ())
        if not store.count(every):
            raise UserError(f"no {'completed ' if measured_only else ''}runs to export in {store.shown}")
        runs = store.iter_runs(every, with_series=True, with_artifacts=True)
    labels: set[str] = set()
    kernels: set[str] = set()

    def seen(rs: Iterable[Run]) -> Iterator[Run]:
        for r in rs:
            labels.add(r.label)
            kernels.add(_kernel(r))
            yield r

    source = {"host": socket.gethostname(), "store": store.shown if store else ""}
    n = write_bundle(seen(runs), output, source=source, packed=packed)
    held = f"{_n(n, 'run')} ({_n(len(labels), 'label')}, {_n(len(kernels), 'kernel')})"
    if output == "-":
        print(f"iowall: exported {held} to stdout", file=sys.stderr)
    else:  # one line, as every command that writes a file says it
        wrote(f"{output}: {held}")


def import_(
    files: Annotated[
        list[str],
        typer.Argument(metavar="FILE.json", help="bundle files to import (- for stdin)", show_default=False),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list what would be imported, change nothing")
    ] = False,
    db: DbOpt = None,
) -> None:
    """Add the runs of bundle files to the store; runs already present (same uuid) are skipped."""
    with gc_paused():  # not once a file: each pause's end set off collections of all runs read
        _import(files, dry_run, db)


def _import(files: list[str], dry_run: bool, db: str | None) -> None:
    url = db_url(db) if db else default_db_url()
    if dry_run:
        _dry_run([r for f in files for r in read_models(f)], url)
        return
    with none_left_if_failed(url):  # a bad file or an interrupt leaves no store where there was none
        added, runs = _import_files(files, url)
    write(f"imported {_n(added, 'run')}, {runs - added} already present\n", None)


def _import_files(files: list[str], url: str) -> tuple[int, int]:
    """(runs added, runs read): each file's runs written as the workers hand the file over,
    in one transaction (``import_parts``), with a bar over the files' bytes."""
    total = sum(map(file_bytes, files))
    bar = RichProgress("import") if total >= BAR_MIN_BYTES else None  # a bar on large bundles
    runs = 0

    def to_write(read: Iterable[tuple[float, list[Packed | Present]]]) -> Generator[list[Packed], None, None]:
        nonlocal runs
        for size, part in read:
            runs += len(part)
            yield [p for p in part if isinstance(p, Packed)]  # a Present run: the store has it
            if bar is not None:
                bar.advance(size)  # the bytes of file whose runs are written

    with closing(packed_parts(files, url=url)) as read, closing(to_write(read)) as parts:
        # while the workers read: the writer's SQLAlchemy imported (0.15 s), the store opened
        from ..store.ingest import import_parts

        store = Store(url)
        if bar is not None:
            bar.begin(total)
        try:
            added = import_parts(store, parts, waiting=lambda m: print(f"iowall: {m}", file=sys.stderr))
        finally:
            store.close()
            if bar is not None:
                bar.end()
    return added, runs


def _dry_run(models: Sequence[Item], url: str) -> None:
    """What an import would add and skip, as a table; the store is only read (where there is
    none yet, none is made: every run would be imported)."""
    runs = [as_run(r) for r in models]
    new, present = plan_import(stored_uuids(url, [r.uuid for r in runs if r.uuid], strict=True), runs)
    known = {id(r) for r in present}
    rows = [
        [
            "present" if id(r) in known else "import",
            r.uuid[:8],
            str(r.id),
            r.label,
            r.point.recipe,
            r.status,
            _kernel(r),
            r.point.describe(),
        ]
        for r in runs
    ]
    table = text_table(
        ["action", "uuid", "source id", "label", "recipe", "status", "kernel", "point"],
        rows,
        left=8,
        indent=0,
    )
    write(f"{table}\nwould import {_n(len(new), 'run')}, {len(present)} already present\n", None)
