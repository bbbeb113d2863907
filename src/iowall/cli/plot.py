"""`iowall plot …`: figures (PNG or SVG, from the file name) of stored runs."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import UserError
from .common import open_store

plot_app = typer.Typer(no_args_is_help=True, help="Draw figures (PNG or SVG) from stored runs.",
                       context_settings={"help_option_names": ["-h", "--help"]})


@plot_app.command("run")
def plot_run(
    run_id: int = typer.Argument(..., metavar="RUN_ID", help="run id (see `iowall runs`)"),
    output: str = typer.Option(..., "-o", "--output", help="FILE.png or FILE.svg"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """A run's time series: fio throughput, then one panel per probe and unit."""
    from ..report.plots import check_path, run_figure, save

    check_path(output)
    run = open_store(db).get_run(run_id)
    if not run.series:
        raise UserError(f"run {run_id} has no time series to plot (no probes and no fio logs)")
    save(run_figure(run), output)
    typer.echo(output)


@plot_app.command("compare")
def plot_compare(
    sets: Annotated[list[str] | None, typer.Argument(
        metavar="BASE NEW [NEW…]", help="run sets, as for `iowall compare`")] = None,
    output: str = typer.Option(..., "-o", "--output", help="FILE.png or FILE.svg"),
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", help="metric name or glob (repeatable), as for `iowall compare`")] = None,
    floor: str = typer.Option("2%", help="smallest change ever marked"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """New/base ratios with their 95% intervals: green better, red worse, grey not marked."""
    from ..report.plots import check_path, save
    from .compare import build, figure

    check_path(output)
    save(figure(build(sets, None, None, metric, floor, db)), output)
    typer.echo(output)


@plot_app.command("scaling")
def plot_scaling(
    selections: Annotated[list[str], typer.Argument(
        metavar="SELECTION", help="runs, as for `iowall scaling`; each one a side",
        show_default=False)],
    output: str = typer.Option(..., "-o", "--output", help="FILE.png or FILE.svg"),
    metric: str | None = typer.Option(None, help="metric to scale (default: the throughput)"),
    knee: float = typer.Option(0.8, help="knee: first N whose efficiency falls under this"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Throughput against threads per label, with the linear reference and the USL fit."""
    from .scaling import build, plot_curves

    plot_curves(build(selections, metric, knee, db).curves, output)
    typer.echo(output)
