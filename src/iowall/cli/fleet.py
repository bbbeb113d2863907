"""`iowall fleet run`: one recipe or plan on every host of an Ansible inventory, all the
bundles imported into one store; a rerun completes only the hosts still missing."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..fleet.drive import FleetSpec, run_fleet
from ..report.emit import emit
from ..report.fleet import Hosts
from ..results import IMPORTED
from ..store import Store
from ..vocab.units import plural
from .options import CommitOpt, DbOpt, HoldMemoryOpt, LabelOpt, QuickOpt

fleet_app = typer.Typer(
    no_args_is_help=True, help="Run on many hosts through Ansible; every bundle into one store."
)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@fleet_app.command("run")
def fleet_run(
    inventory: Annotated[
        str,
        typer.Argument(
            metavar="INVENTORY", help="an Ansible inventory (file or directory)", show_default=False
        ),
    ],
    target: Annotated[
        str,
        typer.Argument(
            metavar="RECIPE|PLAN.toml", help="a recipe name, limits, or a plan file", show_default=False
        ),
    ],
    label: LabelOpt = None,
    commit: CommitOpt = None,
    quick: QuickOpt = False,
    hold_memory: HoldMemoryOpt = True,
    db: DbOpt = None,
) -> None:
    """Install iowall on each host, run there with --wait, fetch and import every bundle."""
    store = Store(db)
    spec = FleetSpec(inventory, target, label or "", commit or "", quick, hold_memory)
    states = run_fleet(spec, store, _say)
    emit(Hosts(tuple(states)))
    failed = [s.host for s in states if s.status != IMPORTED]
    if failed:
        _say(
            f"iowall: {len(failed)} of {plural(len(states), 'host')} failed ({', '.join(failed)}); "
            "run the same command again to complete them"
        )
    bad = [s for s in states if s.status == IMPORTED and s.failed_runs]
    if bad:
        _say(
            f"iowall: {sum(s.failed_runs for s in bad)} runs did not measure (failed or interrupted) on "
            + ", ".join(s.host for s in bad)
            + "; their reports say why (iowall runs --status failed)"
        )
    if failed or bad:
        raise typer.Exit(1)
