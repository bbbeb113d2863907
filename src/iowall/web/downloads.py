"""What the dashboard's CSV and JSON links hold: the data the CLI renders with ``--format csv``
or ``json`` (``iowall runs``, ``compare``, ``history``), for the same selection as the page."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from ..actions.history import histories
from ..report.history import history_report
from ..report.run import RunList
from ..store import Store
from .queries import run_page

TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
#: The most runs one download of /runs holds (the newest): the CLI streams any number.
MAX_RUNS = 10_000


def runs(store: Store, params: Mapping[str, str]) -> RunList:
    """Every run the /runs filters match (newest MAX_RUNS), oldest first, as ``iowall runs``."""
    found = list(reversed(run_page(store, {**params, "before": ""}, limit=MAX_RUNS).runs))
    return RunList.of(found)


def history(store: Store, sel: str, metric: str, by: str, series: str, fmt: str) -> object:
    """The history of a selection: as ``iowall history SEL --format json``, or in CSV the
    ``series,index,value`` rows ``iowall history --series FILE`` reads back (with each
    observation's run, start, kernel, commit and label beside them)."""
    hs = histories(store, sel, metric, by, series)
    if fmt != "csv":
        return history_report(hs, sel)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        ["series", "index", "value", "metric", "unit", "run_id", "started_at", "kernel", "commit", "label"]
    )
    for h in hs:
        for o in h.observations:
            w.writerow(
                [
                    h.name,
                    o.index,
                    repr(o.value),
                    h.metric,
                    h.unit,
                    "" if o.run_id is None else o.run_id,
                    o.started_at,
                    o.kernel,
                    o.commit,
                    o.label,
                ]
            )
    return out.getvalue()
