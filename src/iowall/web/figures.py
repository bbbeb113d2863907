"""Plotly figures of the dashboard as plain JSON (data and layout), drawn in the browser by the
plotly.js the plotly package ships: a run's probe series, a compare's ratios with intervals,
a history with its change points and interval bands. Byte units in binary prefixes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.compare import CompareResult
from ..analysis.history import History, Observation
from ..model import Run
from ..report.compare import interval, short_metric
from ..report.plots import panels
from ..report.scale import binary_scale

Figure = dict[str, Any]

_BETTER, _WORSE, _SAME = "#2e7d32", "#c62828", "#757575"


def _layout(title: str, ytitle: str, **kw: Any) -> dict[str, Any]:
    return {"title": {"text": title, "font": {"size": 13}}, "height": 260,
            "margin": {"l": 60, "r": 20, "t": 36, "b": 40}, "yaxis": {"title": {"text": ytitle}},
            "legend": {"font": {"size": 10}}, **kw}


def run_figures(run: Run) -> list[Figure]:
    """One figure per probe and unit (fio's throughput first), time in seconds on x."""
    out = []
    for probe, unit, shown, hidden in panels(run.series):
        peak = max(abs(v) for s in shown for _, v in s.samples)
        scale, ylabel = binary_scale(unit, peak)
        more = f" (largest {len(shown)} of {len(shown) + hidden} by mean)" if hidden else ""
        data = [{"type": "scatter", "mode": "lines+markers" if len(s.samples) < 30 else "lines",
                 "name": s.name, "x": [t for t, _ in s.samples],
                 "y": [v / scale for _, v in s.samples]} for s in shown]
        out.append({"data": data, "layout": _layout(f"{probe}{more}", ylabel,
                                                    xaxis={"title": {"text": "time (s)"}})})
    return out


def compare_figure(res: CompareResult) -> Figure:
    """New/base per point and metric, with the interval as whiskers; the dotted line at 1 is
    no change."""
    ys, xs, lo, hi, colours, text = [], [], [], [], [], []
    for r in res.rows:
        ci = interval(r)
        ys.append(f"{r.point_text} {short_metric(r.metric)}"
                  + (f" [{r.label}]" if len(res.news) > 1 else ""))
        xs.append(r.cmp.ratio if math.isfinite(r.cmp.ratio) else None)
        lo.append(r.cmp.ratio - ci[0] if ci else 0)
        hi.append(ci[1] - r.cmp.ratio if ci else 0)
        colours.append(_SAME if not r.cmp.significant else _BETTER if r.cmp.better else _WORSE)
        text.append("no interval (one run a side)" if ci is None else
                    f"[{ci[0]:.3f}, {ci[1]:.3f}]")
    data = [{"type": "scatter", "mode": "markers", "x": xs, "y": ys, "text": text,
             "marker": {"color": colours, "size": 9},
             "error_x": {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
             "name": "new/base"}]
    layout = _layout(f"new/base with {res.confidence:.0%} intervals", "",
                     height=max(220, 60 + 28 * len(ys)),
                     margin={"l": 320, "r": 20, "t": 36, "b": 40},
                     xaxis={"title": {"text": "ratio new/base"}},
                     shapes=[{"type": "line", "x0": 1, "x1": 1, "yref": "paper", "y0": 0,
                              "y1": 1, "line": {"color": "#999", "dash": "dot"}}])
    layout["yaxis"] = {"automargin": True, "autorange": "reversed"}
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class Segment:
    """The observations between two change points, with the median and interval the change
    point analysis gave them."""

    first: int
    last: int
    median: float
    ci: tuple[float, float]


def segments(h: History) -> list[Segment]:
    """The series cut at its change points; none without a change point (the analysis
    gives intervals only either side of a change)."""
    cuts = sorted((w.change for w in h.windows), key=lambda c: c.index)
    n = len(h.observations)
    if not cuts:
        return []
    bounds = [0, *(c.index for c in cuts), n]
    out = [Segment(0, bounds[1] - 1, cuts[0].median_before, cuts[0].ci_before)]
    for i, c in enumerate(cuts):
        out.append(Segment(bounds[i + 1], bounds[i + 2] - 1, c.median_after, c.ci_after))
    return out


def _hover(o: Observation) -> str:
    parts = [f"run {o.run_id}" if o.run_id is not None else f"#{o.index}", o.label, o.kernel]
    return " ".join(p for p in parts if p)


def history_figure(h: History) -> Figure:
    """The values in order, each segment's median as a line inside its interval band, and a
    dashed line at each change point."""
    finite = [abs(o.value) for o in h.observations if math.isfinite(o.value)]
    scale, ylabel = binary_scale(h.unit, max(finite, default=1.0))
    obs = h.observations
    data: list[dict[str, Any]] = [{
        "type": "scatter", "mode": "markers", "name": short_metric(h.metric),
        "x": [o.index for o in obs],
        "y": [o.value / scale if math.isfinite(o.value) else None for o in obs],
        "text": [_hover(o) for o in obs], "marker": {"size": 7, "color": "#1f77b4"}}]
    shapes: list[dict[str, Any]] = []
    for s in segments(h):
        x0, x1 = s.first - 0.4, s.last + 0.4
        lo, hi = s.ci
        if math.isfinite(lo) and math.isfinite(hi):
            shapes.append({"type": "rect", "x0": x0, "x1": x1, "y0": lo / scale,
                           "y1": hi / scale, "fillcolor": "rgba(255,152,0,0.18)",
                           "line": {"width": 0}, "layer": "below"})
        data.append({"type": "scatter", "mode": "lines", "x": [x0, x1],
                     "y": [s.median / scale] * 2, "line": {"color": "#ef6c00"},
                     "showlegend": False, "hoverinfo": "skip"})
    for w in h.windows:
        x = w.change.index - 0.5
        shapes.append({"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#c62828", "dash": "dash"}})
    layout = _layout(h.name, ylabel, xaxis={"title": {"text": f"run in order ({h.by})"}}, shapes=shapes,
                     showlegend=False)
    return {"data": data, "layout": layout}


def ids_of(obs: Sequence[Observation], first: int, last: int) -> list[int]:
    """The run ids of observations ``first``..``last``."""
    return [o.run_id for o in obs[first:last + 1] if o.run_id is not None]
