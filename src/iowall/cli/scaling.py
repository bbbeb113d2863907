"""`iowall scaling SEL…`: throughput against thread count per line of a sweep, efficiency,
knee and Universal Scalability Law fit; several selections side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UserError
from .common import check_format, open_store, print_json

if TYPE_CHECKING:
    from ..analysis.sweep import Curve, Scaling

#: More curves than this make a figure nobody can read.
MAX_PLOT_CURVES = 6


def plot_curves(curves: tuple[Curve, ...], path: str) -> None:
    """Draw the curves (one unit, a readable number) with their USL fits into a PNG or SVG."""
    from ..report.plots import ScalingCurve, check_path, save, scaling_figure

    check_path(path)
    units = sorted({c.unit for c in curves})
    metrics = list(dict.fromkeys(c.metric for c in curves))
    if len(units) > 1 or len(curves) > MAX_PLOT_CURVES:
        why = (f"the curves are in different units ({', '.join(units)})" if len(units) > 1
               else f"{len(curves)} curves are too many for one figure")
        raise UserError(f"--plot: {why}; pass --metric (one of {', '.join(metrics)}) or "
                        "narrow the selection")
    recipes = {c.recipe for c in curves}

    def name(c: Curve) -> str:
        group = c.group.split(" ", 1)[1] if len(recipes) == 1 and " " in c.group else c.group
        return f"{group} [{c.label}]"

    axes = "/".join(sorted({c.axis for c in curves}))
    fig = scaling_figure(
        [ScalingCurve(label=name(c), n=c.n, x=c.median, x_low=c.low, x_high=c.high, fit=c.fit)
         for c in curves],
        title=f"{', '.join(sorted(recipes))}: {', '.join(metrics)}", ylabel="throughput",
        xlabel=f"{axes} (N)", unit=units[0])
    save(fig, path)


def build(selections: list[str], metric: str | None, knee: float, db: str | None) -> Scaling:
    """Load each selection as a side and analyse its sweeps (shared with `plot scaling`)."""
    from ..analysis.sweep import analyse, sides_of, why_no_curves
    from ..selection import load_all

    if not 0.0 < knee <= 1.0:
        raise UserError(f"--knee {knee:g}: give an efficiency between 0 and 1, e.g. 0.8")
    dup = next((s for i, s in enumerate(selections) if s in selections[:i]), None)
    if dup is not None:
        raise UserError(f"selection {dup!r} is given twice")
    store = open_store(db)
    picked = [(sel.text, runs) for sel, runs in load_all(store, selections)]
    for text, runs in picked:
        if not analyse([(text, runs)], metric=metric, knee_at=knee).curves:
            raise UserError(f"no thread sweep in {text!r}: {why_no_curves(runs, metric=metric)}")
    return analyse(sides_of(picked), metric=metric, knee_at=knee)


def scaling(
    selections: Annotated[list[str], typer.Argument(
        metavar="SELECTION", help="runs: a label, FIELD=VALUE,…, ids=3-9 or a bundle.json; "
                                     "each one a side", show_default=False)],
    metric: str | None = typer.Option(None, help="metric to scale (default: the recipe's "
                                                 "throughput, e.g. write_bw_bytes_per_s)"),
    knee: float = typer.Option(0.8, help="knee: first N whose efficiency falls under this"),
    fmt: str = typer.Option("text", "--format", help="text, md, json or csv"),
    plot: str | None = typer.Option(None, help="also draw the curves into FILE.png or FILE.svg"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Scaling over a thread or job sweep: efficiency, knee, USL fit (σ, κ, N*, peak)."""
    from ..report.scaling import render_csv, render_json, render_md, render_text

    check_format(fmt, ("text", "md", "json", "csv"))
    result = build(selections, metric, knee, db)
    if plot is not None:
        plot_curves(result.curves, plot)
    if fmt == "json":
        print_json(render_json(result))
    elif fmt == "csv":
        typer.echo(render_csv(result), nl=False)
    elif fmt == "md":
        typer.echo(render_md(result), nl=False)
    else:
        typer.echo(render_text(result), nl=False)
