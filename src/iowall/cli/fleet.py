"""`iowall fleet run`: one recipe or plan on every host of an Ansible inventory, all the
bundles imported into one store; a rerun completes only the hosts still missing."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..fleet.drive import FleetSpec, run_fleet
from ..fleet.state import IMPORTED
from ..report.emit import write
from ..report.table import text_table
from ..store import Store
from .options import CommitOpt, DbOpt, LabelOpt, QuickOpt

fleet_app = typer.Typer(no_args_is_help=True,
                        help="Run on many hosts through Ansible; every bundle into one store.")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@fleet_app.command("run")
def fleet_run(
    inventory: Annotated[str, typer.Argument(
        metavar="INVENTORY", help="an Ansible inventory (file or directory)", show_default=False)],
    target: Annotated[str, typer.Argument(
        metavar="RECIPE|PLAN.toml", help="a recipe name, limits, or a plan file",
        show_default=False)],
    label: LabelOpt = None,
    commit: CommitOpt = None,
    quick: QuickOpt = False,
    db: DbOpt = None,
) -> None:
    """Install iowall on each host, run there with --wait, fetch and import every bundle."""
    store = Store(db)
    spec = FleetSpec(inventory, target, label or "", commit or "", quick)
    states = run_fleet(spec, store, _say)
    rows = [[s.host, s.status, str(s.runs) if s.status == IMPORTED else "-",
             ", ".join(s.hostnames) or "-", s.error or "-"] for s in states]
    write(text_table(["host", "status", "runs", "measured on", "error"], rows, left=5, indent=0)
          + "\n", None)
    failed = [s.host for s in states if s.status != IMPORTED]
    if failed:
        _say(f"iowall: {len(failed)} of {len(states)} hosts failed ({', '.join(failed)}); "
             "run the same command again to complete them")
        raise typer.Exit(1)
