"""`iowall recipes`: the built-in experiments and the seed each reproduces."""

from __future__ import annotations

import sys

import typer

from ..report.table import text_table
from .common import check_format, print_json


def recipes_cmd(
    fmt: str = typer.Option("text", "--format", help="text or json"),
) -> None:
    """List the recipes `iowall run NAME` runs, with the seed thread each comes from."""
    from ..recipes.registry import broken, recipes

    check_format(fmt, ("text", "json"))
    rs = recipes()
    bad = broken()
    if fmt == "json":
        print_json({"recipes": [{"name": r.name, "seed": r.seed, "description": r.description,
                                 "shape": r.shape} for r in rs],
                    "broken": bad})
        return
    rows = [[r.name, r.seed, r.shape, r.description] for r in rs]
    typer.echo(text_table(["recipe", "seed", "kind", "description"], rows, left=4))
    typer.echo("\n  run one with: iowall run RECIPE [--quick] [--set AXIS=V1,V2 …]")
    for name, err in bad.items():
        print(f"iowall: warning: recipe module {name} failed to load: {err}", file=sys.stderr)
