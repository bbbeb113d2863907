"""`export` and `import`: runs to a bundle file, bundle files into the store, and what an
import would do (``--dry-run``); the CLI parses, calls one of these and prints what it returns."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing

from ..bundle.files import as_run, read_models, write_bundle
from ..bundle.packed import Present
from ..bundle.pool import file_bytes, packed_parts, plan_import
from ..machine.atomic import write_text
from ..model import MEASURED_STATUSES, Run
from ..report.bundle import Exported, Imported, ImportPlan, kernel_of
from ..report.kcidb import kcidb_doc
from ..store import RunFilter, Store
from ..store.db import none_left_if_failed
from ..store.gcpause import gc_paused
from ..store.packing import Packed
from ..store.rows import stored_uuids
from ..vocab.errors import UserError
from ..vocab.progress import Progress
from .selection import collect_runs, parse_selection

#: From this many bytes of bundle files on, a progress bar (about a second of importing).
BAR_MIN_BYTES = 8 << 20


def export_bundle(
    selections: list[str],
    output: str,
    *,
    measured_only: bool,
    packed: bool,
    db: str | None,
    kcidb: bool = False,
) -> Exported:
    """Write the runs ``selections`` name (none: every stored run, streamed a page at a time
    in bounded memory) to the bundle ``output``; what was written."""
    needs_store = not selections or any(parse_selection(t).bundle is None for t in selections)
    store = Store.existing(db) if needs_store else None
    if selections:
        runs: Iterable[Run] = collect_runs(store, selections, measured_only=measured_only)
    else:
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
            kernels.add(kernel_of(r))
            yield r

    if kcidb:  # a KCIDB document is one JSON object, written whole
        doc = kcidb_doc(seen(runs))
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
        if output == "-":
            sys.stdout.write(text)
        else:
            write_text(output, text, what="KCIDB document")
        return Exported(output, len({t["misc"]["uuid"] for t in doc["tests"]}), len(labels), len(kernels))
    source = {"host": socket.gethostname(), "store": store.shown if store else ""}
    n = write_bundle(seen(runs), output, source=source, packed=packed)
    return Exported(output, n, len(labels), len(kernels))


def import_bundles(files: list[str], url: str, bar: Callable[[str], Progress] | None = None) -> Imported:
    """Add the runs of bundle ``files`` to the store at ``url`` (runs already there, same
    uuid, skipped), in one transaction; a bad file or an interrupt leaves no store where there
    was none. ``bar``: makes the progress display, shown from BAR_MIN_BYTES of files on."""
    with gc_paused(), none_left_if_failed(url):  # gc: not once a file (collections of all runs read)
        added, read = _import_files(files, url, bar)
    return Imported(added, read)


def _import_files(files: list[str], url: str, make_bar: Callable[[str], Progress] | None) -> tuple[int, int]:
    """(runs added, runs read): each file's runs written as the workers hand the file over,
    in one transaction (``import_parts``), with a bar over the files' bytes."""
    total = sum(map(file_bytes, files))
    bar = make_bar("import") if make_bar is not None and total >= BAR_MIN_BYTES else None
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


def import_plan(files: list[str], url: str) -> ImportPlan:
    """What importing ``files`` would add and skip; the store is only read (where there is
    none yet, none is made: every run would be imported)."""
    with gc_paused():
        runs = [as_run(r) for f in files for r in read_models(f)]
    new, present = plan_import(stored_uuids(url, [r.uuid for r in runs if r.uuid], strict=True), runs)
    known = {id(r) for r in present}
    return ImportPlan(tuple(runs), tuple(id(r) in known for r in runs), len(new))
