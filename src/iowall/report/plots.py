"""Static figures (matplotlib, Agg canvas) for `iowall plot` and the HTML report.

Pure builders: plain data in, a ``Figure`` out; nothing here opens the store. Figures are
built with the object API (``Figure`` + ``FigureCanvasAgg``), never through pyplot, so no
global figure registry grows and nothing has to be closed. matplotlib is imported inside
the functions so that importing this module (and ``iowall --help``) stays cheap.
"""

from __future__ import annotations

import io
import math
import os
import re
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.scaling.usl import UslFit, usl
from ..machine.atomic import write_bytes
from ..model import Run, Series
from ..vocab.errors import UserError
from .byte_prefix import binary_scale

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


#: Colours of a compare bar: significant and better, significant and worse, neither.
BETTER = "#2e7d32"
WORSE = "#c62828"
NEUTRAL = "#9e9e9e"
#: Panel order of a run figure; probes not listed follow in name order.
PROBE_ORDER = (
    "fio",
    "engine",
    "cpu",
    "meminfo",
    "vmstat",
    "diskstats",
    "psi",
    "flusher",
    "throttle",
    "reclaim",
    "locks",
)
#: At most this many lines per run panel (the largest by mean); the title says how many more.
MAX_LINES = 8
FORMATS = (".png", ".svg")
_PER_CPU = re.compile(r"^cpu\d+_")
#: Point texts up to this long sit beside each bar; longer ones head their block of bars.
MAX_TICK_POINT = 24
#: A point heading wraps at this many characters.
HEADING_CHARS = 110


@dataclass(frozen=True)
class ScalingCurve:
    """One scaling curve: throughput ``x`` (median) at each ``n``, its optional spread
    (``x_low``/``x_high``: min/max or a confidence interval) and an optional USL fit."""

    label: str
    n: Sequence[float]
    x: Sequence[float]
    x_low: Sequence[float] | None = None
    x_high: Sequence[float] | None = None
    fit: UslFit | None = None


@dataclass(frozen=True)
class CompareBar:
    """One new/base ratio of a metric at a point with its interval (None when unbounded: a
    side with one run) and verdict."""

    point: str
    metric: str
    label: str
    ratio: float
    ci_low: float | None
    ci_high: float | None
    significant: bool
    better: bool | None


# ------------------------------------------------------------------------------ helpers


def _figure(width: float, height: float) -> Figure:
    """A new figure on an Agg canvas (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _gid(text: str) -> str:
    """An SVG-safe element id (the SVG backend writes an artist's gid as its group id)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


# ------------------------------------------------------------------------------ scaling


def scaling_figure(
    curves: Sequence[ScalingCurve], *, title: str, ylabel: str, xlabel: str = "threads (N)", unit: str = ""
) -> Figure:
    """Throughput against N per curve: median points with error bars, the linear-scaling
    reference from the first (smallest-N) point, the fitted Universal Scalability Law
    X(N) = λN / (1 + σ(N−1) + κN(N−1)) on a fine grid, and its peak N* = sqrt((1−σ)/κ) when
    it lies within twice the measured range. ``unit`` "B/s" shows binary prefixes."""

    if not curves:
        raise UserError("nothing to plot: no scaling curves")
    for c in curves:
        if not len(c.n) or len(c.n) != len(c.x):
            raise UserError(f"scaling curve {c.label!r}: n and x must be non-empty, same length")
    peak = max(max(c.x) for c in curves)
    scale, shown = binary_scale(unit, peak) if unit else (1.0, "")
    fig = _figure(8.0, 5.0)
    ax = fig.add_subplot()
    all_n = [float(v) for c in curves for v in c.n]
    lo_n, hi_n = min(all_n), max(all_n)
    for i, c in enumerate(curves):
        color = f"C{i % 10}"
        order = sorted(range(len(c.n)), key=lambda k: c.n[k])
        n = np.array([float(c.n[k]) for k in order])
        x = np.array([float(c.x[k]) for k in order]) / scale
        yerr = None
        if c.x_low is not None and c.x_high is not None:
            low = np.array([float(c.x_low[k]) for k in order]) / scale
            high = np.array([float(c.x_high[k]) for k in order]) / scale
            yerr = np.vstack([np.clip(x - low, 0, None), np.clip(high - x, 0, None)])
        pts = ax.errorbar(n, x, yerr=yerr, fmt="o", color=color, capsize=3, label=c.label)
        pts.lines[0].set_gid(_gid(f"points-{i}"))
        if n[0] > 0:
            lin = ax.plot(
                [n[0], n[-1]],
                [x[0], x[0] * n[-1] / n[0]],
                linestyle=":",
                color=color,
                alpha=0.6,
                label=f"{c.label}: linear from N={n[0]:g}",
            )[0]
            lin.set_gid(_gid(f"linear-{i}"))
        f = c.fit
        if f is None:
            continue
        star_shown = math.isfinite(f.n_star) and 1.0 < f.n_star <= 2.0 * hi_n
        top = max(n[-1], f.n_star) if star_shown else n[-1]
        grid = np.geomspace(max(n[0], 1.0), max(top, n[0], 1.0), 200)
        fit_line = ax.plot(
            grid,
            usl(grid, f.lam, f.sigma, f.kappa) / scale,
            color=color,
            label=f"{c.label}: USL σ={f.sigma:.3g} κ={f.kappa:.3g}",
        )[0]
        fit_line.set_gid(_gid(f"usl-{i}"))
        if star_shown:
            mark = ax.plot(
                [f.n_star], [f.x_peak / scale], marker="*", markersize=12, color=color, linestyle="none"
            )[0]
            mark.set_gid(_gid(f"peak-{i}"))
            ax.annotate(
                f"N*≈{f.n_star:.3g}",
                (f.n_star, f.x_peak / scale),
                textcoords="offset points",
                xytext=(6, 6),
                fontsize=8,
                color=color,
            )
    if hi_n / max(lo_n, 1e-9) >= 16:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{ylabel} ({shown})" if shown and shown != unit else ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------------------------ compare


def bar_color(bar: CompareBar) -> str:
    """Green when significantly better, red when significantly worse, grey otherwise."""
    if not bar.significant or bar.better is None:
        return NEUTRAL
    return BETTER if bar.better else WORSE


def _compare_rows(bars: Sequence[CompareBar]) -> list[tuple[str, str, CompareBar | None]]:
    """Rows top to bottom as ``(kind, text, bar)``: ``label`` (a block per new side when
    there are several), ``point`` (a heading over its metrics when point texts are too long
    to sit beside each bar) and ``bar``."""
    labels = list(dict.fromkeys(b.label for b in bars))
    headings = max(len(b.point) for b in bars) > MAX_TICK_POINT
    rows: list[tuple[str, str, CompareBar | None]] = []
    for lab in labels:
        if len(labels) > 1:
            rows.append(("label", lab, None))
        mine = [b for b in bars if b.label == lab]
        if not headings:
            rows += [("bar", f"{b.point}  {b.metric}", b) for b in mine]
            continue
        for point in dict.fromkeys(b.point for b in mine):
            rows.append(("point", "\n".join(textwrap.wrap(point, HEADING_CHARS)) or point, None))
            rows += [("bar", b.metric, b) for b in mine if b.point == point]
    return rows


def compare_figure(bars: Sequence[CompareBar], *, title: str) -> Figure:
    """Horizontal bars of new/base ratio per point × metric, drawn from 1.0, with whiskers
    for the interval (none when a side has one run: ``ci_low`` None) and colour by verdict;
    one block per label when there are several. Long point texts become headings over their
    metrics, so that the bars keep the width; the x axis is the change in percent."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    if not bars:
        raise UserError("nothing to plot: no comparisons")
    rows = _compare_rows(bars)
    heights = [0.45 * (text.count("\n") + 1) + 0.35 if kind == "point" else 1.0 for kind, text, _ in rows]
    fig = _figure(9.0, 1.6 + 0.32 * sum(heights))
    ax = fig.add_subplot()
    top = sum(heights)
    ys: list[float] = []
    for h in heights:
        top -= h
        ys.append(top + h / 2)
    k = 0
    xs = [1.0]
    ticks: list[tuple[float, str]] = []
    for y, (kind, text, bar) in zip(ys, rows, strict=True):
        if kind == "label":
            ax.text(
                -0.01,
                y,
                text,
                transform=ax.get_yaxis_transform(),
                ha="right",
                va="center",
                fontweight="bold",
                fontsize=9,
            )
            ax.axhline(y + 0.5, color="#cccccc", linewidth=0.8)
            ticks.append((y, ""))
            continue
        if kind == "point":
            ax.text(
                0.005,
                y,
                text,
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="center",
                fontsize=7.5,
                color="#333333",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
            )
            continue
        assert bar is not None
        ticks.append((y, text))
        rect = ax.barh([y], [bar.ratio - 1.0], left=1.0, height=0.6, color=bar_color(bar)).patches[0]
        rect.set_gid(_gid(f"bar-{k}"))
        hi = bar.ratio
        if bar.ci_low is not None and bar.ci_high is not None:
            lo, hi = min(bar.ci_low, bar.ratio), max(bar.ci_high, bar.ratio)
            ax.errorbar(
                [bar.ratio],
                [y],
                xerr=[[bar.ratio - lo], [hi - bar.ratio]],
                fmt="none",
                ecolor="black",
                capsize=3,
                linewidth=1,
            )
            xs += [lo, hi]
        xs.append(bar.ratio)
        ax.annotate(
            f"{(bar.ratio - 1.0) * 100:+.1f}%",
            (max(hi, bar.ratio, 1.0), y),
            textcoords="offset points",
            xytext=(4, 0),
            va="center",
            fontsize=7,
        )
        k += 1
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks([y for y, _ in ticks], [t for _, t in ticks], fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(0, sum(heights))
    lo_x, hi_x = min(xs), max(xs)
    pad = max(hi_x - lo_x, 0.02) * 0.12
    ax.set_xlim(lo_x - pad, hi_x + 1.5 * pad)  # room on the right for the labels
    ax.xaxis.set_major_locator(MaxNLocator(nbins=7))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{(v - 1.0) * 100:+.0f}%"))
    ax.set_xlabel("change, new / base − 1 (whiskers: 95% interval; none with one run a side)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(
        handles=[
            Patch(color=BETTER, label="better"),
            Patch(color=WORSE, label="worse"),
            Patch(color=NEUTRAL, label="not significant"),
        ],
        fontsize=8,
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncols=3,
        frameon=False,
    )
    return fig


# ------------------------------------------------------------------------------ run


def _probe_rank(probe: str) -> tuple[int, str]:
    return (PROBE_ORDER.index(probe) if probe in PROBE_ORDER else len(PROBE_ORDER), probe)


def _mean(s: Series) -> float:
    return sum(abs(v) for _, v in s.samples) / len(s.samples)


def panels(series: Sequence[Series]) -> list[tuple[str, str, list[Series], int]]:
    """Series grouped into panels: ``(probe, unit, shown, hidden_count)`` in probe order.

    One panel per probe and unit; per-CPU cpu series are left out when the all-CPU ones are
    there, and at most MAX_LINES lines (largest mean first) are shown per panel.
    """
    groups: dict[tuple[str, str], list[Series]] = {}
    for s in series:
        if s.samples:
            groups.setdefault((s.probe, s.unit), []).append(s)
    out = []
    for (probe, unit), group in sorted(groups.items(), key=lambda kv: (_probe_rank(kv[0][0]), kv[0][1])):
        if probe == "cpu" and any(not _PER_CPU.match(s.name) for s in group):
            group = [s for s in group if not _PER_CPU.match(s.name)]
        ranked = sorted(group, key=_mean, reverse=True)
        shown = sorted(ranked[:MAX_LINES], key=lambda s: s.name)
        out.append((probe, unit, shown, len(ranked) - len(shown)))
    return out


def run_figure(run: Run) -> Figure:
    """One panel per probe and unit (fio's throughput first), time on x, values in their unit
    on y with byte units in binary prefixes (MiB/s, GiB)."""
    groups = panels(run.series)
    if not groups:
        raise UserError(f"run {run.id} has no series to plot")
    fig = _figure(11.0, 1.2 + 2.3 * len(groups))
    axes: list[Axes] = list(fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0])
    for ax, (probe, unit, shown, hidden) in zip(axes, groups, strict=True):
        peak = max(abs(v) for s in shown for _, v in s.samples)
        scale, label = binary_scale(unit, peak)
        for s in shown:
            line = ax.plot(
                [t for t, _ in s.samples],
                [v / scale for _, v in s.samples],
                label=s.name,
                linewidth=1.2,
                marker="." if len(s.samples) < 30 else "",
            )
            line[0].set_gid(_gid(f"series-{probe}-{s.name}"))
        more = f"  (largest {len(shown)} of {len(shown) + hidden} by mean)" if hidden else ""
        ax.set_title(f"{probe}{more}", fontsize=9)
        ax.set_ylabel(label, fontsize=8)
        if all(v >= 0 for s in shown for _, v in s.samples):
            ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1].set_xlabel("time (s)")
    who = f"run {run.id}" if run.id is not None else "run"
    fig.suptitle(
        f"{who}  {run.point.recipe}  {run.point.describe()}  [{run.label}]  {run.status}", fontsize=10
    )
    return fig


# ------------------------------------------------------------------------------ output


def check_path(path: str) -> str:
    """The format ('png' or 'svg') named by ``path``'s extension, or a UserError."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UserError(f"{path}: name the file .png or .svg (the format follows the extension)")
    return ext[1:]


@contextmanager
def _svg_rc() -> Iterator[None]:
    """SVG text as text (small, searchable) and stable element ids."""
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "iowall"}):
        yield


def _savefig(fig: Figure, target: Any, fmt: str) -> None:
    meta = {"Date": None} if fmt == "svg" else {}
    with _svg_rc():
        fig.savefig(target, format=fmt, dpi=110, metadata=meta)


def save(fig: Figure, path: str) -> None:
    """Write ``fig`` to ``path`` as PNG or SVG (from the extension), atomically."""
    fmt = check_path(path)
    buf = io.BytesIO()
    _savefig(fig, buf, fmt)
    write_bytes(path, buf.getvalue(), what="figure")


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to embed inline in HTML (no XML prolog)."""
    buf = io.StringIO()
    _savefig(fig, buf, "svg")
    text = buf.getvalue()
    return text[text.find("<svg") :]
