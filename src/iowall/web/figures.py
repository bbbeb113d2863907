"""Plotly figures of the dashboard as plain JSON (data and layout), drawn in the browser by the
plotly.js the plotly package ships: a run's probe series, a compare's ratios with intervals,
a history with its change points and interval bands. Byte units in binary prefixes."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.regress.compare import CompareResult
from ..analysis.regress.history import History, Observation
from ..model import Run
from ..report.byte_prefix import binary_scale
from ..report.compare import interval, short_metric
from ..report.plots import panels

Figure = dict[str, Any]

_BETTER, _WORSE, _SAME = "#2e7d32", "#c62828", "#757575"


def _layout(title: str, ytitle: str, **kw: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 13}},
        "height": 260,
        "margin": {"l": 60, "r": 20, "t": 36, "b": 40},
        "yaxis": {"title": {"text": ytitle}},
        "legend": {"font": {"size": 10}},
        **kw,
    }


def fio_window(run: Run) -> tuple[float, float] | None:
    """The time range of fio's own samples (seconds from the run's start), which every probe
    plot of the run is drawn on so that one moment is one x everywhere."""
    ts = [t for s in run.series if s.probe == "fio" for t, _ in s.samples]
    return (min(ts), max(ts)) if ts and max(ts) > min(ts) else None


def run_figures(run: Run) -> list[Figure]:
    """One figure per probe and unit (fio's throughput first), time in seconds on x, every
    figure on fio's time range (a double click shows a probe's whole range)."""
    out = []
    window = fio_window(run)
    for probe, unit, shown, hidden in panels(run.series):
        peak = max(abs(v) for s in shown for _, v in s.samples)
        scale, ylabel = binary_scale(unit, peak)
        more = f" (largest {len(shown)} of {len(shown) + hidden} by mean)" if hidden else ""
        data = [
            {
                "type": "scatter",
                "mode": "lines+markers" if len(s.samples) < 30 else "lines",
                "name": s.name,
                "x": [t for t, _ in s.samples],
                "y": [v / scale for _, v in s.samples],
            }
            for s in shown
        ]
        xaxis: dict[str, Any] = {"title": {"text": "time (s)"}}
        if window:
            xaxis["range"] = list(window)
        out.append({"data": data, "layout": _layout(f"{probe}{more}", ylabel, xaxis=xaxis)})
    return out


def compare_figure(res: CompareResult) -> Figure:
    """New/base per point and metric, with the interval as whiskers; the dotted line at 1 is
    no change."""
    ys, xs, lo, hi, colours, text = [], [], [], [], [], []
    for r in res.rows:
        ci = interval(r)
        ys.append(f"{r.point_text} {short_metric(r.metric)}" + (f" [{r.label}]" if len(res.news) > 1 else ""))
        xs.append(r.cmp.ratio if math.isfinite(r.cmp.ratio) else None)
        lo.append(r.cmp.ratio - ci[0] if ci else 0)
        hi.append(ci[1] - r.cmp.ratio if ci else 0)
        colours.append(_SAME if not r.cmp.significant else _BETTER if r.cmp.better else _WORSE)
        text.append("no interval (one run a side)" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]")
    data = [
        {
            "type": "scatter",
            "mode": "markers",
            "x": xs,
            "y": ys,
            "text": text,
            "marker": {"color": colours, "size": 9},
            "error_x": {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
            "name": "new/base",
        }
    ]
    layout = _layout(
        f"new/base with {res.confidence:.0%} intervals",
        "",
        height=max(220, 60 + 28 * len(ys)),
        margin={"l": 320, "r": 20, "t": 36, "b": 40},
        xaxis={"title": {"text": "ratio new/base"}},
        shapes=[
            {
                "type": "line",
                "x0": 1,
                "x1": 1,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": "#999", "dash": "dot"},
            }
        ],
    )
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
    parts = [
        f"run {o.run_id}" if o.run_id is not None else f"#{o.index}",
        o.label,
        o.kernel,
        o.commit,
        time.strftime("%Y-%m-%d %H:%M", time.gmtime(o.started_at)) if o.started_at else "",
    ]
    return " ".join(p for p in parts if p)


#: What a history's x axis may show: the run's start date, its id, its commit or its kernel.
XS = ("run", "date", "commit", "kernel")


def x_of(o: Observation, x: str) -> str:
    """Where an observation stands on a history's x axis (``x`` one of XS)."""
    if x == "date":
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(o.started_at))
    if x == "commit":
        return o.commit or "?"
    if x == "kernel":
        return o.kernel or "?"
    return f"run {o.run_id}" if o.run_id is not None else f"#{o.index}"


def history_scale(h: History) -> tuple[float, str]:
    """The divisor and unit of a history's axis, which its table uses too (one unit a view)."""
    finite = [abs(o.value) for o in h.observations if math.isfinite(o.value)]
    return binary_scale(h.unit, max(finite, default=1.0))


def history_figure(h: History, x: str = "run") -> Figure:
    """The values in order against run ids, dates, commits or kernels; y from zero; each
    segment's median as a line inside its interval band; a dashed line at each change."""
    scale, ylabel = history_scale(h)
    obs = h.observations
    xs = [x_of(o, x) for o in obs]
    cats = list(dict.fromkeys(xs))

    def pos(i: int, edge: float) -> float | str:
        """x of observation ``i`` moved by ``edge`` of a step (categories: their index)."""
        if x == "date":
            return xs[i]
        return cats.index(xs[i]) + edge

    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": short_metric(h.metric),
            "x": xs,
            "y": [o.value / scale if math.isfinite(o.value) else None for o in obs],
            "text": [_hover(o) for o in obs],
            "marker": {"size": 7, "color": "#1f77b4"},
        }
    ]
    shapes: list[dict[str, Any]] = []
    for sg in segments(h):
        x0, x1 = pos(sg.first, -0.4), pos(sg.last, 0.4)
        lo, hi = sg.ci
        if math.isfinite(lo) and math.isfinite(hi):
            shapes.append(
                {
                    "type": "rect",
                    "x0": x0,
                    "x1": x1,
                    "y0": lo / scale,
                    "y1": hi / scale,
                    "fillcolor": "rgba(255,152,0,0.18)",
                    "line": {"width": 0},
                    "layer": "below",
                }
            )
        shapes.append(
            {
                "type": "line",
                "x0": x0,
                "x1": x1,
                "y0": sg.median / scale,
                "y1": sg.median / scale,
                "line": {"color": "#ef6c00", "width": 2},
            }
        )
    for w in h.windows:
        i = w.change.index
        at = xs[i] if x == "date" else (cats.index(xs[i - 1]) + cats.index(xs[i])) / 2
        shapes.append(
            {
                "type": "line",
                "x0": at,
                "x1": at,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": "#c62828", "dash": "dash"},
            }
        )
    xaxis: dict[str, Any] = {
        "title": {"text": {"run": "run", "date": "start (UTC)", "commit": "commit", "kernel": "kernel"}[x]}
    }
    if x != "date":
        xaxis.update(type="category", categoryorder="array", categoryarray=cats)
    layout = _layout(h.name, ylabel, xaxis=xaxis, shapes=shapes, showlegend=False)
    layout["yaxis"]["rangemode"] = "tozero"
    return {"data": data, "layout": layout}


def ids_of(obs: Sequence[Observation], first: int, last: int) -> list[int]:
    """The run ids of observations ``first``..``last``."""
    return [o.run_id for o in obs[first : last + 1] if o.run_id is not None]
