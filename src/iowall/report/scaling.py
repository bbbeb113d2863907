"""Scaling curves as text (80 columns, a table to paste into a mail to a kernel list),
Markdown, CSV and JSON: per curve N | throughput | efficiency | per-thread, the USL fit with
its intervals, and the labels side by side."""

from __future__ import annotations

import csv
import io
import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.scaling.sweep import Curve, Scaling, SideBySide, SideEntry
from ..analysis.scaling.usl import UslFit
from ..vocab.errors import UserError
from ..vocab.units import fmt_rate, json_number
from .emit import Format, json_text, renders
from .plots import ScalingCurve, scaling_figure
from .table import md_table, text_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCHEMA_VERSION = 1
WIDTH = 80
USL = "X(N) = λN / (1 + σ(N−1) + κN(N−1))"
#: More curves than this make a figure nobody can read.
MAX_PLOT_CURVES = 6


# ------------------------------------------------------------------------------ numbers


def fmt_x(value: float, unit: str) -> str:
    """A throughput, compact: fio's MiB/s for bytes, k/M for other rates."""
    if not math.isfinite(value):
        return "unbounded"
    if unit == "B/s":
        return fmt_rate(value)
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def fmt_par(x: float | None) -> str:
    """σ, κ: three significant digits, exact 0, inf spelled out."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return "inf"
    return f"{x:.3g}"


def fmt_ci(ci: tuple[float, float]) -> str:
    return f"[{fmt_par(ci[0])}, {fmt_par(ci[1])}]"


def fmt_nstar(n: float | None) -> str:
    if n is None:
        return "-"
    return "none" if not math.isfinite(n) else f"{n:.1f}"


def fmt_knee(knee: int | None, max_n: int) -> str:
    """The knee, or ``>N`` when efficiency never fell under the threshold up to N."""
    return str(knee) if knee is not None else f">{max_n}"


def _unit_words(c: Curve) -> str:
    unit = "" if c.unit == "B/s" else f" in {c.unit}"
    how = f" ({c.derivation})" if c.derivation else ""
    return f"{c.metric}{unit}{how}"


def _spread(c: Curve, i: int) -> str:
    med = c.median[i]
    if c.runs_per_n[i] < 2 or med <= 0:
        return "-"
    return f"{(c.high[i] - c.low[i]) / 2 / med:.0%}"


def _rows(c: Curve) -> list[list[str]]:
    rows = []
    for i, n in enumerate(c.n):
        eff = f"{c.efficiency[i]:.2f}" if c.efficiency else "-"
        rows.append(
            [
                str(n),
                fmt_x(c.median[i], c.unit),
                _spread(c, i),
                eff,
                fmt_x(c.per_thread[i], c.unit),
                str(c.runs_per_n[i]),
            ]
        )
    return rows


def _headers(c: Curve) -> list[str]:
    per = {"jobs": "per job", "numjobs": "per job"}.get(c.axis, "per thread")
    return [c.axis, "throughput", "±", "efficiency", per, "runs"]


def knee_sentence(c: Curve) -> str:
    if not c.efficiency:
        return "knee: -"
    if c.knee is None:
        return f"knee: none, efficiency stays at or above {c.knee_threshold:.2f} up to {c.axis}={max(c.n)}"
    e = c.efficiency[c.n.index(c.knee)]
    return f"knee: {c.axis}={c.knee} (efficiency {e:.2f} < {c.knee_threshold:.2f})"


def peak_sentence(f: UslFit, c: Curve) -> str:
    """Where the fitted curve peaks, and whether that is inside the measured range."""
    if f.sigma == 0 and f.kappa == 0:
        return "no peak: the fit is linear (σ = κ = 0)"
    if not math.isfinite(f.n_star):
        return f"no peak (κ = 0): throughput approaches λ/σ = {fmt_x(f.x_peak, c.unit)}"
    where = ""
    if f.n_star > max(c.n) * 1.05:
        where = f" (beyond the measured {max(c.n)}: extrapolated)"
    return f"N* {f.n_star:.1f}{where}, predicted peak {fmt_x(f.x_peak, c.unit)}"


def fit_lines(c: Curve) -> list[str]:
    """The USL fit in words, or why there is none."""
    f = c.fit
    if f is None:
        return [c.fit_note] if c.fit_note else []
    pct = f"{f.confidence:.0%}"
    out = [
        f"USL: σ {fmt_par(f.sigma)} {fmt_ci(f.sigma_ci)}  κ {fmt_par(f.kappa)} {fmt_ci(f.kappa_ci)}",
        f"     {pct} intervals, {f.n_obs} runs, {f.dof} dof, R² {f.r2:.3f}",
        f"     {peak_sentence(f, c)}",
    ]
    if f.r2 < POOR_FIT:
        out.append(f"     {poor_fit_sentence(f)}")
    return out


#: Below this R² the fitted law explains too little of the runs for σ and κ to mean much.
POOR_FIT = 0.5


def poor_fit_sentence(f: UslFit) -> str:
    return f"poor fit (R² {f.r2:.2f} < {POOR_FIT}): σ and κ mean little here"


def _title(c: Curve) -> str:
    return f"{c.group} — {c.label}"


def _repeats(c: Curve) -> str:
    lo, hi = min(c.runs_per_n), max(c.runs_per_n)
    if hi == 1:
        return "one run per N"
    return (f"median of {lo}" if lo == hi else f"median of {lo}–{hi}") + " (± half-range)"


def _runs(c: Curve) -> str:
    if not c.run_ids:
        return ""
    ids = c.run_ids
    return f", runs {ids[0]}–{ids[-1]}" if len(ids) > 1 else f", run {ids[0]}"


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [""]


# ------------------------------------------------------------------------------ side by side


def _entry_row(e: SideEntry, unit: str) -> list[str]:
    """One label's cells; with no peak (κ = 0) the peak column is the asymptote, marked →."""
    peak = "-" if e.x_peak is None else fmt_x(e.x_peak, unit)
    if (
        e.n_star is not None
        and not math.isfinite(e.n_star)
        and e.x_peak is not None
        and math.isfinite(e.x_peak)
    ):
        peak = "→" + peak
    return [e.label, fmt_knee(e.knee, e.max_n), fmt_par(e.sigma), fmt_par(e.kappa), fmt_nstar(e.n_star), peak]


SIDE_HEADERS = ["label", "knee", "σ", "κ", "N*", "peak"]


def _common_differs(rows: Sequence[SideBySide]) -> list[str]:
    """What differs between the labels on every line (said once, not per line)."""
    if len(rows) < 2:
        return []
    return [d for d in rows[0].differs if all(d in r.differs for r in rows[1:])]


def _side_notes(s: SideBySide, common: Sequence[str] = ()) -> list[str]:
    return [f"{e.label}: {e.fit_note}" for e in s.entries if e.fit_note] + [
        f"differs: {d}" for d in s.differs if d not in common
    ]


# ------------------------------------------------------------------------------ formats


@renders(Scaling, Format.text)
def render_text(sc: Scaling) -> str:
    """Every curve as a table with its knee and fit, then the labels side by side."""
    out = [
        f"iowall scaling — knee: first N with efficiency < {sc.knee_threshold:.2f}; USL fit",
        f"{USL}, σ contention, κ coherency",
    ]
    for c in sc.curves:
        out.append("")
        out += _wrap(_title(c))
        out += _wrap(f"{_unit_words(c)}, {_repeats(c)}{_runs(c)}")
        out.append(text_table(_headers(c), _rows(c), left=0))
        out += _wrap(knee_sentence(c), "  ")
        for x in fit_lines(c):
            pad = "  " + " " * (len(x) - len(x.lstrip()))
            out += textwrap.wrap(x.strip(), width=WIDTH, initial_indent=pad, subsequent_indent=pad + "  ")
    if len(sc.labels) > 1:
        out += ["", "Side by side: knee, USL σ and κ, N* and predicted peak"]
        common = _common_differs(sc.side_by_side)
        out += [x for d in common for x in _wrap(f"every line differs in {d}")]
        for s in sc.side_by_side:
            out.append("")
            out += _wrap(f"{s.group}, {s.metric}")
            out.append(text_table(SIDE_HEADERS, [_entry_row(e, s.unit) for e in s.entries]))
            out += [x for n in _side_notes(s, common) for x in _wrap(n, "  ")]
    return "\n".join(out) + "\n"


@renders(Scaling, Format.md)
def render_md(sc: Scaling) -> str:
    """The same in Markdown."""
    out = [
        "# iowall scaling",
        "",
        f"Knee: first N with efficiency < {sc.knee_threshold:.2f}. USL fit `{USL}` "
        "(σ contention, κ coherency).",
    ]
    for c in sc.curves:
        out += [
            "",
            f"## {_title(c)}",
            "",
            f"`{c.metric}`{_unit_words(c)[len(c.metric) :]}, {_repeats(c)}{_runs(c)}",
            "",
            md_table(_headers(c), _rows(c), left=0),
            "",
            f"- {knee_sentence(c)}",
        ]
        if c.fit is not None:
            f = c.fit
            out += [
                f"- USL σ {fmt_par(f.sigma)} {fmt_ci(f.sigma_ci)}, κ {fmt_par(f.kappa)} "
                f"{fmt_ci(f.kappa_ci)} ({f.confidence:.0%}, {f.dof} dof, R² {f.r2:.3f})",
                f"- {peak_sentence(f, c)}",
            ]
            if f.r2 < POOR_FIT:
                out.append(f"- {poor_fit_sentence(f)}")
        elif c.fit_note:
            out.append(f"- {c.fit_note}")
    if len(sc.labels) > 1:
        out += ["", "## Side by side", ""]
        rows = [
            [f"{s.group}, {s.metric}" if i == 0 else "", *_entry_row(e, s.unit)]
            for s in sc.side_by_side
            for i, e in enumerate(s.entries)
        ]
        out.append(md_table(["curve", *SIDE_HEADERS], rows, left=2))
        common = _common_differs(sc.side_by_side)
        notes = [f"every line differs in {d}" for d in common]
        notes += [f"{s.group}, {s.metric}: {n}" for s in sc.side_by_side for n in _side_notes(s, common)]
        if notes:
            out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def _ci(ci: tuple[float, float]) -> list[float | None]:
    return [json_number(ci[0]), json_number(ci[1])]


def fit_json(f: UslFit | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "lambda": json_number(f.lam),
        "sigma": json_number(f.sigma),
        "kappa": json_number(f.kappa),
        "lambda_ci": _ci(f.lam_ci),
        "sigma_ci": _ci(f.sigma_ci),
        "kappa_ci": _ci(f.kappa_ci),
        "n_star": json_number(f.n_star),
        "x_peak": json_number(f.x_peak),
        "r2": json_number(f.r2),
        "n_obs": f.n_obs,
        "dof": f.dof,
        "confidence": f.confidence,
        "method": f.method,
    }


def curve_json(c: Curve) -> dict[str, Any]:
    pts = [
        {
            "n": n,
            "median": c.median[i],
            "low": c.low[i],
            "high": c.high[i],
            "runs": c.runs_per_n[i],
            "efficiency": c.efficiency[i] if c.efficiency else None,
            "per_thread": c.per_thread[i],
        }
        for i, n in enumerate(c.n)
    ]
    return {
        "label": c.label,
        "recipe": c.recipe,
        "group": c.group,
        "params": dict(c.params),
        "bed": dict(c.bed),
        "axis": c.axis,
        "metric": c.metric,
        "unit": c.unit,
        "derivation": c.derivation,
        "knee_threshold": c.knee_threshold,
        "knee": c.knee,
        "points": pts,
        "fit": fit_json(c.fit),
        "fit_note": c.fit_note,
        "run_ids": list(c.run_ids),
    }


def render_json(sc: Scaling) -> dict[str, Any]:
    """``{"schema_version": 1, "curves": [...], "side_by_side": [...]}``; infinities are null."""
    return {
        "schema_version": SCHEMA_VERSION,
        "knee_threshold": sc.knee_threshold,
        "labels": list(sc.labels),
        "curves": [curve_json(c) for c in sc.curves],
        "side_by_side": [
            {
                "recipe": s.recipe,
                "group": s.group,
                "metric": s.metric,
                "unit": s.unit,
                "entries": [
                    {
                        "label": e.label,
                        "knee": e.knee,
                        "max_n": e.max_n,
                        "sigma": json_number(e.sigma),
                        "kappa": json_number(e.kappa),
                        "n_star": json_number(e.n_star),
                        "x_peak": json_number(e.x_peak),
                        "fit_note": e.fit_note,
                    }
                    for e in s.entries
                ],
                "differs": list(s.differs),
            }
            for s in sc.side_by_side
        ],
    }


@renders(Scaling, Format.json)
def _json(sc: Scaling) -> str:
    return json_text(render_json(sc))


CSV_HEADERS = (
    "label",
    "recipe",
    "group",
    "axis",
    "metric",
    "unit",
    "n",
    "median",
    "low",
    "high",
    "runs",
    "efficiency",
    "per_thread",
    "knee",
    "sigma",
    "sigma_low",
    "sigma_high",
    "kappa",
    "kappa_low",
    "kappa_high",
    "n_star",
    "x_peak",
    "r2",
    "fit_note",
)


def _c(x: float | None) -> str:
    return "" if x is None else repr(float(x))


@renders(Scaling, Format.csv)
def render_csv(sc: Scaling) -> str:
    """One row per curve and N; the curve's knee and fit repeated on each of its rows."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADERS)
    for c in sc.curves:
        f = c.fit
        fit: Sequence[str] = (
            [
                _c(f.sigma),
                _c(f.sigma_ci[0]),
                _c(f.sigma_ci[1]),
                _c(f.kappa),
                _c(f.kappa_ci[0]),
                _c(f.kappa_ci[1]),
                _c(f.n_star),
                _c(f.x_peak),
                _c(f.r2),
            ]
            if f
            else [""] * 9
        )
        for i, n in enumerate(c.n):
            w.writerow(
                [
                    c.label,
                    c.recipe,
                    c.group,
                    c.axis,
                    c.metric,
                    c.unit,
                    n,
                    _c(c.median[i]),
                    _c(c.low[i]),
                    _c(c.high[i]),
                    c.runs_per_n[i],
                    _c(c.efficiency[i]) if c.efficiency else "",
                    _c(c.per_thread[i]),
                    "" if c.knee is None else c.knee,
                    *fit,
                    c.fit_note,
                ]
            )
    return buf.getvalue()


def figure(curves: Sequence[Curve]) -> Figure:
    """The curves (one unit, a readable number) with their USL fits; a UserError naming the
    metrics to pick from when they are in several units or too many for one figure."""
    units = sorted({c.unit for c in curves})
    metrics = list(dict.fromkeys(c.metric for c in curves))
    if len(units) > 1 or len(curves) > MAX_PLOT_CURVES:
        why = (
            f"the curves are in different units ({', '.join(units)})"
            if len(units) > 1
            else f"{len(curves)} curves are too many for one figure"
        )
        raise UserError(f"--plot: {why}; pass --metric (one of {', '.join(metrics)}) or narrow the selection")
    recipes = {c.recipe for c in curves}

    def name(c: Curve) -> str:
        group = c.group.split(" ", 1)[1] if len(recipes) == 1 and " " in c.group else c.group
        return f"{group} [{c.label}]"

    axes = "/".join(sorted({c.axis for c in curves}))
    return scaling_figure(
        [
            ScalingCurve(label=name(c), n=c.n, x=c.median, x_low=c.low, x_high=c.high, fit=c.fit)
            for c in curves
        ],
        title=f"{', '.join(sorted(recipes))}: {', '.join(metrics)}",
        ylabel="throughput",
        xlabel=f"{axes} (N)",
        unit=units[0],
    )
