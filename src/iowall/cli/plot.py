"""`iowall plot …`: figures (PNG or SVG, from the file name) of stored runs, written
atomically, and flame graphs of runs' CPU profiles (`plot flame`, SVG); ``wrote PATH`` on
stderr."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..actions.compare import compare_sets
from ..actions.flame import flame_svg
from ..actions.scaling import analyse_selections, draw_curves
from ..report.compare import figure as compare_figure
from ..report.emit import wrote
from ..report.flame import write_svg
from ..report.plots import check_path, run_figure, save
from ..store import Store
from ..vocab.errors import UserError
from .options import (
    CompareMetricOpt,
    DbOpt,
    FigureOpt,
    FloorOpt,
    KneeOpt,
    RunIdArg,
    RunSetsArg,
    ScalingMetricOpt,
    SelectionsArg,
)

plot_app = typer.Typer(
    no_args_is_help=True,
    help="Draw figures (PNG or SVG) from stored runs.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@plot_app.command("run")
def plot_run(run_id: RunIdArg, output: FigureOpt, db: DbOpt = None) -> None:
    """A run's time series: fio throughput, then one panel per probe and unit."""
    check_path(output)
    run = Store.existing(db).get_run(run_id)
    if not run.series:
        raise UserError(f"run {run_id} has no time series to plot (no probes and no fio logs)")
    save(run_figure(run), output)
    wrote(output)


@plot_app.command("compare")
def plot_compare(
    output: FigureOpt,
    sets: RunSetsArg = None,
    metric: CompareMetricOpt = None,
    floor: FloorOpt = "2%",
    db: DbOpt = None,
) -> None:
    """New/base ratios with their 95% intervals: green better, red worse, grey not marked."""
    check_path(output)
    save(compare_figure(compare_sets(sets, None, None, metric, floor, db)), output)
    wrote(output)


@plot_app.command("scaling")
def plot_scaling(
    selections: SelectionsArg,
    output: FigureOpt,
    metric: ScalingMetricOpt = None,
    knee: KneeOpt = 0.8,
    db: DbOpt = None,
) -> None:
    """Throughput against threads per label, with the linear reference and the USL fit."""
    check_path(output)
    draw_curves(analyse_selections(selections, metric, knee, db), output)


@plot_app.command("flame")
def plot_flame(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN [NEW_RUN]",
            help="one run: its flame graph; two: base and new, coloured by the difference",
            show_default=False,
        ),
    ],
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="FILE.svg", help="the SVG to write", show_default=False)
    ],
    db: DbOpt = None,
) -> None:
    """A CPU flame graph of a run (perf at 99 Hz, kernel frames orange), or of two runs with
    the difference coloured: red grew, blue shrank, both profiles normalised."""
    if len(runs) not in (1, 2):
        raise UserError(f"give one run or two (base new), not {len(runs)}")
    if os.path.splitext(output)[1].lower() != ".svg":
        raise UserError(f"{output}: a flame graph is an SVG: name the file .svg")
    write_svg(flame_svg(Store.existing(db), runs), output)
    wrote(output)
