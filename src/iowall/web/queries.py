"""The dashboard's reads of the store: a page of runs (keyset, newest first), one run by id or
uuid, the runs of a selection. Each query grows with what it selects, never with the store;
selections naming a bundle file are refused (a URL must not read files on the server)."""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ..actions.compare import compare_selections
from ..actions.selection import parse_selection, run_id
from ..analysis.regress.compare import CompareResult
from ..model import Run
from ..store import RunFilter, Store
from ..store.db import COUNTED
from ..vocab.errors import NotFound, UserError

#: Runs on one page of /runs.
PAGE = 50
#: The fields /runs filters on, as its query parameters.
FILTERS = ("label", "recipe", "kernel", "host", "status", "batch")


@dataclass(frozen=True)
class RunPage:
    """One page of runs, newest first, the id the next (older) page starts below, and how
    many runs the filters match in all (``COUNTED + 1`` standing for more than COUNTED)."""

    runs: tuple[Run, ...]
    older: int | None
    total: int = 0


def day(text: str, what: str) -> float:
    """``YYYY-MM-DD`` as seconds since the epoch at 00:00 UTC; a UserError otherwise."""
    try:
        return float(calendar.timegm(time.strptime(text.strip(), "%Y-%m-%d")))
    except ValueError:
        raise UserError(f"{what} {text!r}: give a date as YYYY-MM-DD") from None


def run_page(store: Store, params: Mapping[str, str], *, limit: int = PAGE) -> RunPage:
    """The runs /runs shows for its query parameters (FILTERS, since, until, before)."""
    flt = RunFilter(**{k: params[k] for k in FILTERS if params.get(k)})  # type: ignore[arg-type]
    if params.get("ids"):  # the runs of one report cell: ids=3-5,9
        flt = RunFilter(ids=parse_selection("ids=" + params["ids"]).flt.ids)
    since = day(params["since"], "since") if params.get("since") else None
    until = day(params["until"], "until") + 86400 if params.get("until") else None
    before = None
    if params.get("before"):
        before = run_id(params["before"])
        if before is None:
            raise UserError(f"before {params['before']!r}: give a run id (digits 0-9)")
    ids = store.page_ids(flt, before=before, since=since, until=until, limit=limit + 1)
    shown = ids[:limit]
    runs = store.runs(RunFilter(ids=shown)) if shown else []
    runs.reverse()
    return RunPage(
        tuple(runs),
        shown[-1] if len(ids) > limit else None,
        store.count(flt, since=since, until=until, at_most=COUNTED),
    )


#: A run's uuid as the store keeps it.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def run_ref(ref: str) -> int | str:
    """A run named in a URL: an id (ASCII digits, within range) or a uuid; a NotFound (404)
    for anything else."""
    rid = run_id(ref)
    if rid is not None:
        return rid
    if UUID.fullmatch(ref.strip().lower()):
        return ref.strip().lower()
    raise NotFound(f"no run {ref!r} in this store: a run is named by its id or uuid")


def find_run(store: Store, ref: str) -> Run:
    """A whole run (series, artifacts) by id or uuid; a NotFound when there is none."""
    key = run_ref(ref)
    rid = key if isinstance(key, int) else store.id_of_uuid(key)
    if rid is None:
        raise NotFound(f"no run {ref!r} in this store")
    return store.get_run(rid)


def ids_text(ids: list[int]) -> str:
    """Run ids as a selection, ranges joined: ``ids=3-5,9``."""
    parts: list[str] = []
    for i in sorted(set(ids)):
        if parts and "-" in parts[-1] and int(parts[-1].split("-")[1]) == i - 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{i}"
        elif parts and "-" not in parts[-1] and int(parts[-1]) == i - 1:
            parts[-1] = f"{parts[-1]}-{i}"
        else:
            parts.append(str(i))
    return "ids=" + ",".join(parts)


def compare_sets(store: Store, base: str, new: str, metric: str | None = None) -> CompareResult:
    """Two selections compared point by point: ``actions.compare.compare_selections``, the
    function `iowall compare` calls, on the store only."""
    return compare_selections(store, [base, new], [metric] if metric else None, files=False)
