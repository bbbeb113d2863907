"""`iowall plot …`: figures (PNG or SVG, from the file name) of stored runs, written
atomically; ``wrote PATH`` on stderr."""

from __future__ import annotations

import typer

from ..errors import UserError
from ..report.compare import figure as compare_figure
from ..report.emit import wrote
from ..report.plots import check_path, run_figure, save
from ..store import Store
from . import compare, scaling
from .flame import plot_flame
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

plot_app = typer.Typer(no_args_is_help=True, help="Draw figures (PNG or SVG) from stored runs.",
                       context_settings={"help_option_names": ["-h", "--help"]})


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
    save(compare_figure(compare.build(sets, None, None, metric, floor, db)), output)
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
    scaling.draw(scaling.build(selections, metric, knee, db), output)


plot_app.command("flame")(plot_flame)
