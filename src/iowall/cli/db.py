"""`iowall db copy SRC DST`: copy runs between stores (SQLite ⇄ PostgreSQL), skipping those
DST already has."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..actions.selection import parse_selection
from ..machine.dirs import db_url, redact_url
from ..report.emit import write
from ..store import RunFilter, Store
from ..store.copy import CHUNK, Copied, copy_runs
from ..store.db import none_left_if_failed
from ..vocab.errors import UserError
from .progress import RichProgress

db_app = typer.Typer(no_args_is_help=True, help="Work on whole stores: copy runs between them.")


def copy(
    src: Annotated[
        str,
        typer.Argument(
            metavar="SRC", help="the store to copy from: a SQLite file path or a URL", show_default=False
        ),
    ],
    dst: Annotated[
        str,
        typer.Argument(
            metavar="DST", help="the store to copy into (created or migrated as needed)", show_default=False
        ),
    ],
    select: Annotated[
        str | None,
        typer.Option(
            "--select",
            metavar="SEL",
            help="only these runs: a label, FIELD=V[,…] or ids=3-9 (default: every run)",
        ),
    ] = None,
) -> None:
    """Copy runs, whole, from SRC to DST, with their batches' reports; runs DST already has
    (same uuid) are skipped, so a second copy copies nothing."""
    if db_url(src) == db_url(dst):
        raise UserError(f"SRC and DST are the same store ({redact_url(db_url(src))})")
    flt = RunFilter()
    if select is not None:
        sel = parse_selection(select)
        if sel.bundle is not None:
            raise UserError(
                f"--select {select!r}: a bundle file is not a store; use 'iowall import' for bundles"
            )
        flt = sel.flt
    source = Store.existing(src)
    with none_left_if_failed(db_url(dst)):  # an error or Ctrl-C before the first group
        target, done = _copy(source, dst, flt)
    write(
        f"copied {done.copied} run{'' if done.copied == 1 else 's'} and {done.reports} "
        f"report{'' if done.reports == 1 else 's'} from {source.shown} to "
        f"{target.shown}; {done.skipped} already there\n",
        None,
    )


def _copy(source: Store, dst: str, flt: RunFilter) -> tuple[Store, Copied]:
    """The store at ``dst`` (made or migrated) and what copying ``flt`` of ``source`` into
    it did, with a bar on large copies."""
    target = Store(dst)
    total = source.count(flt)
    bar = RichProgress("copy") if min(total, flt.limit or total) > CHUNK else None
    if bar is not None:
        bar.begin(min(total, flt.limit or total))
    try:
        done = copy_runs(
            source,
            target,
            flt,
            done=bar.advance if bar else None,
            waiting=lambda m: print(f"iowall: {m}", file=sys.stderr),
        )
    finally:
        if bar is not None:
            bar.end()
    return target, done


db_app.command("copy")(copy)
