"""`iowall recipes`: the built-in experiments and the seed each reproduces."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..recipes.catalog import Listed, listed
from ..report.emit import Format, emit, json_text, renders
from ..report.table import text_table
from .options import ListFormat, ListFormatOpt, OutputOpt


@dataclass(frozen=True)
class RecipeList:
    """The recipes and the recipe modules that could not be read."""

    recipes: tuple[Listed, ...]
    broken: dict[str, str]


@renders(RecipeList, Format.text)
def _text(rl: RecipeList) -> str:
    rows = [[r.name, r.seed, r.description] for r in rl.recipes]
    return (
        text_table(["recipe", "seed", "description"], rows, left=3)
        + "\n\n  run one with: iowall run RECIPE [--quick] [--set AXIS=V1,V2 …]\n"
    )


@renders(RecipeList, Format.json)
def _json(rl: RecipeList) -> str:
    return json_text(
        {
            "recipes": [{"name": r.name, "seed": r.seed, "description": r.description} for r in rl.recipes],
            "broken": rl.broken,
        }
    )


@renders(RecipeList, Format.csv)
def _csv(rl: RecipeList) -> str:
    return "recipe,seed,description\n" + "".join(f'{r.name},{r.seed},"{r.description}"\n' for r in rl.recipes)


def recipes_cmd(fmt: ListFormatOpt = ListFormat.text, output: OutputOpt = None) -> None:
    """List the recipes `iowall run NAME` runs, with the seed thread each comes from."""
    found, unread = listed()  # from the sources: no recipe module imported (catalog)
    rl = RecipeList(tuple(found), unread)
    emit(rl, fmt, output)
    for name, err in rl.broken.items():
        print(f"iowall: warning: recipe module {name} could not be read: {err}", file=sys.stderr)
