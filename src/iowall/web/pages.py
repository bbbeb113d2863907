"""What each dashboard page shows, as plain values for its template: rows of runs, a run with
its metrics in kernel units, its Why and attribution, a compare table, a history's change
points with the links to the compare of their two sides and the differential flame graph."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ..analysis.compare import CompareResult
from ..analysis.history import History, worse
from ..analysis.why import why_run
from ..errors import UserError
from ..model import PROFILE_ARTIFACT, Run, primary_metric
from ..report.compare import fmt_ci, mark, short_metric
from ..store import Store
from ..store.reports import get_report
from ..units import fmt_metric
from .figures import compare_figure, history_figure, ids_of, run_figures, segments
from .queries import RunPage, batch_runs, ids_text


def when(t: float) -> str:
    """A start time in UTC, as the runs list shows it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def headline(r: Run) -> str:
    """The run's primary metric in its unit, e.g. ``write_bw_bytes_per_s 7.58GiB/s``."""
    m = primary_metric(r)
    return "" if m is None else f"{short_metric(m.name)} {fmt_metric(m.value, m.unit)}"


def run_rows(pg: RunPage) -> dict[str, Any]:
    """The rows of /runs and the id the older page starts below."""
    rows = [{"id": r.id, "started": when(r.started_at), "label": r.label,
             "recipe": r.point.recipe, "kernel": str(r.env.get("kernel", "")),
             "host": _host(r), "status": r.status, "point": r.point.describe(),
             "result": headline(r), "batch": r.batch} for r in pg.runs]
    return {"runs": rows, "older": pg.older}


def _host(r: Run) -> str:
    h = r.env.get("host", {})
    return str(h.get("hostname", "")) if isinstance(h, dict) else ""


def flat(doc: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested facts as ``a.b = value`` pairs, sorted, for a two-column table."""
    out: list[tuple[str, str]] = []
    for k, v in sorted(doc.items()):
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out += flat(v, key + ".")
        else:
            out.append((key, v if isinstance(v, str) else str(v)))
    return out


def run_context(store: Store, run: Run) -> dict[str, Any]:
    """Everything /run/ID shows."""
    why = why_run(run, batch_runs(store, run))
    metrics = [{"name": m.name, "value": fmt_metric(m.value, m.unit),
                "exact": f"{m.value:.6g}", "unit": m.unit, "direction": m.direction}
               for m in run.metrics]
    return {"run": run, "started": when(run.started_at), "host": _host(run), "result": headline(run),
            "kernel": str(run.env.get("kernel", "")), "point": flat(run.point.params),
            "metrics": metrics, "env": flat(run.env), "bed": flat(run.bed),
            "figures": [clean(f) for f in run_figures(run)], "why": why,
            "has_report": has_report(store, run.batch),
            "has_profile": any(a.name == PROFILE_ARTIFACT for a in run.artifacts),
            "artifacts": [a.name for a in run.artifacts]}


def has_report(store: Store, batch: str) -> bool:
    """Whether a report is stored for the run's batch (``/report/BATCH`` shows it)."""
    try:
        get_report(store, batch)
    except UserError:
        return False
    return True


def compare_context(res: CompareResult | None) -> dict[str, Any]:
    """The compare table, its figure and its footnotes (nothing when there is no result)."""
    if res is None:
        return {"res": None}
    rows = [{"label": r.label, "point": r.point_text, "metric": short_metric(r.metric),
             "base": fmt_metric(r.cmp.base_median, r.unit),
             "new": fmt_metric(r.cmp.new_median, r.unit),
             "change": f"{(r.cmp.ratio - 1) * 100:+.1f}%"
             if math.isfinite(r.cmp.ratio) and r.cmp.ratio > 0 else "n/a",
             "ci": fmt_ci(r), "n": f"{r.cmp.n_base}:{r.cmp.n_new}", "mark": mark(r),
             "base_runs": ids_text(list(r.base_runs)) if r.base_runs else "",
             "new_runs": ids_text(list(r.new_runs)) if r.new_runs else ""}
            for r in res.rows]
    return {"res": res, "rows": rows, "figure": clean(compare_figure(res))}


def history_context(h: History) -> dict[str, Any]:
    """One series of /history: its figure and its change points with their links."""
    segs = segments(h)
    changes = []
    for i, w in enumerate(sorted(h.windows, key=lambda w: w.change.index)):
        c = w.change
        before, after = segs[i], segs[i + 1]
        base_ids = ids_of(h.observations, before.first, before.last)
        new_ids = ids_of(h.observations, after.first, after.last)
        changes.append({
            "index": c.index, "change": f"{c.rel_change:+.1%}",
            "worse": worse(h, w), "p": f"{c.p_value:.2g}",
            "before": _median_ci(c.median_before, c.ci_before, h.unit),
            "after": _median_ci(c.median_after, c.ci_after, h.unit),
            "last_good": w.last_good, "first_bad": w.first_bad,
            "compare": {"base": ids_text(base_ids), "new": ids_text(new_ids)}
            if base_ids and new_ids else None,
            "flame": {"base": w.last_good.run_id, "new": w.first_bad.run_id}
            if w.last_good.run_id is not None and w.first_bad.run_id is not None else None})
    return {"h": h, "figure": clean(history_figure(h)), "changes": changes,
            "reason": h.detection.reason, "method": h.detection.method}


def _median_ci(m: float, ci: tuple[float, float], unit: str) -> str:
    lo, hi = ci
    v = fmt_metric(m, unit) if math.isfinite(m) else "-"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{v} (too few runs for an interval)"
    return f"{v} [{fmt_metric(lo, unit)}, {fmt_metric(hi, unit)}]"


def clean(x: Any) -> Any:
    """A figure as plotly.js may take it: every non-finite number null (JSON has no NaN or
    infinity) and every string plain text: plotly.js draws ``<a href>``, ``<b>`` … in titles,
    names, ticks and hover text as markup, so ``&``, ``<`` and ``>`` go as entities, which it
    shows as the characters they are."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, str):
        return x.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x
