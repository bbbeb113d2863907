"""What each dashboard page shows, as plain values for its template: rows of runs, a run with
its metrics in kernel units, its Why and attribution, a compare table, a history's change
points with the links to the compare of their two sides and the differential flame graph."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ..actions.explain import batch_runs, explain_run
from ..analysis.regress.compare import CompareResult
from ..analysis.regress.history import History, worse
from ..model import PROFILE_ARTIFACT, Run, primary_metric
from ..report.compare import fmt_ci, fmt_n, mark, short_metric
from ..results import Report
from ..store import Store
from ..store.db import COUNTED
from ..store.reports import get_report
from ..vocab.errors import UserError
from ..vocab.units import fmt_metric
from .figures import compare_figure, fio_window, history_figure, history_scale, ids_of, run_figures, segments
from .queries import RunPage, ids_text
from .wall import cell_links, wall_figures


def short(text: object, n: int = 80) -> str:
    """``text`` cut to ``n`` characters with an ellipsis (the page keeps the whole in a
    tooltip): one 5,000-character value must not make a table 20,000 px wide."""
    s = str(text)
    return s if len(s) <= n else s[: n - 1] + "…"


def when(t: float) -> str:
    """A start time in UTC, as the runs list shows it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def headline(r: Run) -> str:
    """The run's primary metric in its unit, e.g. ``write_bw_bytes_per_s 7.58GiB/s``."""
    m = primary_metric(r)
    return "" if m is None else f"{short_metric(m.name)} {fmt_metric(m.value, m.unit)}"


#: The parameters that say a point's mode (shown in their own column, not in the point).
MODE_KEYS = ("direct", "uncached")


def mode(params: Mapping[str, Any]) -> str:
    """buffered, uncached or direct for a point that has a mode; "" for one that has none."""
    if not any(k in params for k in MODE_KEYS):
        return ""
    return "direct" if params.get("direct") else "uncached" if params.get("uncached") else "buffered"


def point_text(params: Mapping[str, Any]) -> str:
    """A point's parameters without its mode, ``k=v`` sorted."""
    return " ".join(f"{k}={v}" for k, v in sorted(params.items()) if k not in MODE_KEYS)


def run_rows(pg: RunPage) -> dict[str, Any]:
    """The rows of /runs, the id the older page starts below, and the count of every match."""
    rows = []
    for r in pg.runs:
        m = primary_metric(r)
        rows.append(
            {
                "id": r.id,
                "started": when(r.started_at),
                "label": r.label,
                "recipe": r.point.recipe,
                "kernel": str(r.env.get("kernel", "")),
                "host": _host(r),
                "status": r.status,
                "mode": mode(r.point.params),
                "point": point_text(r.point.params),
                "result": headline(r),
                "value": "" if m is None else f"{m.value:.9g}",
                "batch": r.batch,
            }
        )
    return {"runs": rows, "older": pg.older, "total": pg.total, "counted": COUNTED}


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


#: Parameters that change with the mode besides the mode itself: fio's end_fsync, and the
#: generator (``kind``: limits measures uncached with iowall-engine where fio cannot).
MODE_FOLLOWERS = ("end_fsync", "kind")


def other_modes(run: Run, batch: list[Run]) -> list[dict[str, Any]]:
    """The same point in the other modes within the run's batch: each mode with its runs,
    by the run's own generator when that mode has it, else by the other."""
    here = mode(run.point.params)
    if not here:
        return []
    skip = (*MODE_KEYS, *MODE_FOLLOWERS)

    def rest(r: Run) -> dict[str, Any]:
        return {k: v for k, v in r.point.params.items() if k not in skip}

    found: dict[str, dict[bool, list[int]]] = {}
    for r in batch:
        m = mode(r.point.params)
        if (
            r.id is not None
            and m
            and m != here
            and r.point.recipe == run.point.recipe
            and rest(r) == rest(run)
        ):
            same_kind = r.point.params.get("kind") == run.point.params.get("kind")
            found.setdefault(m, {}).setdefault(same_kind, []).append(r.id)
    out = []
    for m, kinds in sorted(found.items()):
        ids = kinds.get(True) or kinds[False]
        out.append({"mode": m, "run": min(ids), "n": len(ids), "ids": ids_text(ids).removeprefix("ids=")})
    return out


def run_context(store: Store, run: Run) -> dict[str, Any]:
    """Everything /run/ID shows."""
    batch = batch_runs(store, run)
    why = explain_run(store, run, batch)
    top = primary_metric(run)
    metrics = [
        {
            "name": m.name,
            "value": fmt_metric(m.value, m.unit),
            "exact": f"{m.value:.6g}",
            "unit": m.unit,
            "direction": m.direction,
            "headline": m is top,
        }
        for m in sorted(run.metrics, key=lambda m: m is not top)
    ]
    window = fio_window(run)
    return {
        "run": run,
        "started": when(run.started_at),
        "host": _host(run),
        "result": headline(run),
        "mode": mode(run.point.params),
        "others": other_modes(run, batch),
        "history": {"sel": f"recipe={run.point.recipe}", "series": run.fingerprint()},
        "window": window,
        "kernel": str(run.env.get("kernel", "")),
        "point": flat(run.point.params),
        "metrics": metrics,
        "env": flat(run.env),
        "bed": flat(run.bed),
        "figures": [clean(f) for f in run_figures(run)],
        "why": why,
        "has_report": has_report(store, run.batch),
        "has_profile": any(a.name == PROFILE_ARTIFACT for a in run.artifacts),
        "artifacts": [a.name for a in run.artifacts],
    }


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
    rows = [
        {
            "label": r.label,
            "point": r.point_text,
            "metric": short_metric(r.metric),
            "base": fmt_metric(r.cmp.base_median, r.unit),
            "new": fmt_metric(r.cmp.new_median, r.unit),
            "change": f"{(r.cmp.ratio - 1) * 100:+.1f}%"
            if math.isfinite(r.cmp.ratio) and r.cmp.ratio > 0
            else "n/a",
            "ci": fmt_ci(r),
            "n": fmt_n(r),
            "mark": mark(r),
            "base_runs": ids_text(list(r.base_runs)) if r.base_runs else "",
            "new_runs": ids_text(list(r.new_runs)) if r.new_runs else "",
        }
        for r in res.rows
    ]
    return {"res": res, "rows": rows, "figure": clean(compare_figure(res))}


def report_context(rep: Report) -> dict[str, Any]:
    """A stored report: its wall charts (limits), the links of its cells, its compare."""
    walls = [clean(f) for f in wall_figures(rep.data)] if rep.kind == "limits" else []
    return {"walls": walls, "links": cell_links(rep) if walls else {}, **compare_context(rep.compare)}


def history_context(h: History, x: str = "run", n: int = 1) -> dict[str, Any]:
    """One series of /history (the ``n``-th, its anchor ``series-n``): its figure against
    ``x``, its change points with their links, in the unit of the figure's axis, and the
    line the summary table shows for it."""
    segs = segments(h)
    scale, unit = history_scale(h)
    changes: list[dict[str, Any]] = []
    for i, w in enumerate(sorted(h.windows, key=lambda w: w.change.index)):
        c = w.change
        before, after = segs[i], segs[i + 1]
        base_ids = ids_of(h.observations, before.first, before.last)
        new_ids = ids_of(h.observations, after.first, after.last)
        changes.append(
            {
                "index": c.index,
                "change": f"{c.rel_change:+.1%}",
                "rel": c.rel_change,
                "worse": worse(h, w),
                "p": f"{c.p_value:.2g}",
                "before": _median_ci(c.median_before, c.ci_before, scale, unit),
                "after": _median_ci(c.median_after, c.ci_after, scale, unit),
                "last_good": w.last_good,
                "first_bad": w.first_bad,
                "compare": {"base": ids_text(base_ids), "new": ids_text(new_ids)}
                if base_ids and new_ids
                else None,
                "flame": {"base": w.last_good.run_id, "new": w.first_bad.run_id}
                if w.last_good.run_id is not None and w.first_bad.run_id is not None
                else None,
            }
        )
    finite = [o.value for o in h.observations if math.isfinite(o.value)]
    if h.detection.reason:
        why_none = f"too few runs to look for one: {h.detection.reason}"
    else:
        why_none = f"none found: {len(finite)} runs searched, no change significant"
    summary = {
        "anchor": f"series-{n}",
        "name": h.name,
        "metric": short_metric(h.metric),
        "runs": len(h.observations),
        "changes": changes,
        "latest": _value(finite[-1], scale, unit) if finite else "-",
        "worst": max((c for c in changes if c["worse"]), default=None, key=lambda c: abs(float(c["rel"]))),
        "why_none": why_none,
    }
    return {
        "h": h,
        "figure": clean(history_figure(h, x)),
        "changes": changes,
        "reason": h.detection.reason,
        "method": h.detection.method,
        "unit": unit,
        "summary": summary,
        "why_none": why_none,
    }


def _value(v: float, scale: float, unit: str) -> str:
    return f"{v / scale:.4g} {unit}" if math.isfinite(v) else "-"


def _median_ci(m: float, ci: tuple[float, float], scale: float, unit: str) -> str:
    lo, hi = ci
    v = _value(m, scale, unit)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{v} (too few runs for an interval)"
    return f"{v} [{lo / scale:.4g}, {hi / scale:.4g}]"


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
