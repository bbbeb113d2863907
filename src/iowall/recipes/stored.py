"""A stored report as ``iowall report BATCH`` and the dashboard print it again: the report
kept with its batch, its compare section (when it has one) computed again from the runs it
named. Apart from ``recipes.tables``: a report without a compare needs neither that module
nor numpy, which a compare does (imported then)."""

from __future__ import annotations

from ..results import Report
from ..store import RunFilter, Store
from ..store.reports import get_report


def stored_report(store: Store, batch: str) -> Report:
    """The report of ``batch`` (or of the one batch starting with it), as ``reload_compare``
    makes it."""
    return reload_compare(store, get_report(store, batch))


def reload_compare(store: Store, rep: Report) -> Report:
    """A stored report with its compare section computed again from the runs it named
    (the same runs, so the same numbers: the interval's bootstrap is seeded)."""
    if not rep.compare_sides:
        return rep
    from ..analysis.regress.compare import Side  # numpy: only a report with a compare needs it
    from .tables import compare_sides

    sides = [Side(lab, store.runs(RunFilter(ids=tuple(ids)))) for lab, ids in rep.compare_sides]
    metrics = rep.data.get("compare_metrics")
    return rep.with_compare(compare_sides(sides, list(metrics) if metrics else None))
