"""``iowall db copy``: runs, whole, from one store to another (SQLite or PostgreSQL either
way), the same as an export and an import would carry them, with the reports of their
batches; runs the destination already has (same uuid) are skipped, so copying twice adds
nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..model import Run
from .bundle import import_runs
from .db import Store
from .ingest import GROUP, Waiting, gc_paused
from .reports import copy_reports
from .rows import RunFilter

#: Runs read and written per transaction (the ingest's group): memory stays bounded on a
#: large store, and an interrupted copy keeps what it finished (the next copy skips it).
CHUNK = GROUP


@dataclass(frozen=True)
class Copied:
    """What a copy did: runs added, runs skipped as already there, reports added."""

    copied: int
    skipped: int
    reports: int


def copy_runs(
    src: Store,
    dst: Store,
    flt: RunFilter | None = None,
    *,
    chunk: int = CHUNK,
    done: Callable[[int], None] | None = None,
    waiting: Waiting | None = None,
) -> Copied:
    """Copy the runs of ``src`` matching ``flt`` (metrics, series, artifacts, environment,
    everything a run carries) into ``dst`` under ``dst``'s own ids, oldest first, read
    ``chunk`` runs at a time (keyset pages): memory bounded whatever ``src`` holds.
    ``done``/``waiting``: as ``store.ingest.add_new_runs`` takes them."""
    flt = flt or RunFilter()
    if flt.limit is None:
        stream: Iterable[Run] = src.iter_runs(flt, with_series=True, with_artifacts=True, page=chunk)
    else:  # the last N: their ids first, then the runs a chunk at a time
        ids = [r.id for r in src.runs(flt) if r.id is not None]
        stream = (
            r
            for i in range(0, len(ids), chunk)
            for r in src.iter_runs(
                RunFilter(ids=ids[i : i + chunk]), with_series=True, with_artifacts=True, page=chunk
            )
        )
    copied = skipped = 0
    batches: set[str] = set()
    with gc_paused():  # reading too (ingest.gc_paused)
        for group in _groups(stream, chunk):  # a transaction each
            batches.update(r.batch for r in group)
            added, present = import_runs(dst, group, done=done, waiting=waiting)
            copied += added
            skipped += present
    reports = copy_reports(src, dst, batches)
    return Copied(copied, skipped, reports)


def _groups(runs: Iterable[Run], n: int) -> Iterator[list[Run]]:
    """``runs`` in lists of ``n`` (the last one shorter)."""
    group: list[Run] = []
    for r in runs:
        group.append(r)
        if len(group) == n:
            yield group
            group = []
    if group:
        yield group
