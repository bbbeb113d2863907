"""`history`, on the command line and on the dashboard: a point's metric over its runs in
order, one series per fingerprint, from run selections or from a series file."""

from __future__ import annotations

from ..analysis.regress.history import BY, History, from_rows, from_runs, needed
from ..store import Store
from ..vocab.errors import UserError
from .selection import load_all, store_only
from .series import check_series_options, read_series


def build(
    selections: list[str],
    metric: str | None,
    by: str,
    series: str | None,
    db: str | None,
    *,
    direction: str = "higher",
    unit: str = "",
    alpha: float | None = None,
    store: Store | None = None,
) -> tuple[list[History], str]:
    """The histories of the selections (or of the file), and how the source reads: `iowall
    history`'s; the dashboard's are ``histories``."""
    if by not in BY:
        raise UserError(f"by {by!r}: use one of {', '.join(BY)}")
    check_series_options(direction, alpha)
    if series is not None:
        if selections:
            raise UserError("give run selections or --series FILE, not both")
        return from_rows(
            read_series(series), metric=metric or "value", alpha=alpha, direction=direction, unit=unit
        ), series
    if not selections:
        raise UserError("history needs runs: a selection (e.g. recipe=plan:nightly) or --series FILE")
    if store is None and not all(".json" in t for t in selections):
        store = Store.existing(db)
    runs = [r for _, rs in load_all(store, selections, metrics=needed(metric)) for r in rs]
    hs = from_runs(runs, metric=metric, by=by, alpha=alpha)
    if not hs:
        what = f"metric {metric!r}" if metric else "a throughput metric"
        raise UserError(f"no series: no point of {' '.join(selections)} has a run with {what}")
    return hs, " ".join(selections)


def histories(store: Store, sel: str, metric: str, by: str, series: str = "") -> list[History]:
    """The series of one selection in the store as ``iowall history`` finds them (only the
    one whose key is ``series`` when given), for the dashboard: its store only, never a
    bundle file named in a URL; a UserError naming why there is none."""
    if not sel:
        raise UserError("history needs runs: sel=SELECTION")
    hs, _ = build([store_only(sel)], metric or None, by, None, None, store=store)
    hs = [h for h in hs if not series or h.key == series]
    if not hs:
        raise UserError(f"no series: no point of {sel!r} has series {series!r}")
    return hs
