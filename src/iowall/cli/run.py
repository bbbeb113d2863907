"""`iowall run PLAN.toml|RECIPE`: run a plan file or a registered recipe, interleaved."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from .. import journal
from ..errors import UserError
from ..machine_lock import exclusive
from ..signals import interruptible
from .common import RichProgress, check_format, open_store, print_json


def _is_plan_path(target: str) -> bool:
    return target.endswith(".toml") or os.sep in target or os.path.isfile(target)


def run_cmd(
    target: str = typer.Argument(..., metavar="PLAN.toml|RECIPE",
                                 help="a plan file, or a recipe name (see: iowall recipes)"),
    sets: Annotated[list[str] | None, typer.Option(
        "--set", metavar="AXIS=V1,V2", help="set an axis (repeatable), e.g. --set jobs=1,2 "
        "--set sysctl:vm.dirty_ratio=5,10")] = None,
    label: str | None = typer.Option(None, help="label stored with every run"),
    repeat: str | None = typer.Option(
        None, metavar="N|auto[:MAX]",
        help="runs of every point, interleaved: a number, or auto: repeat each point until "
             "the 95% interval of its median is within ±--target (at most MAX, default 10)"),
    rel_target: str | None = typer.Option(
        None, "--target", metavar="PCT", help="with --repeat auto: the interval's half-width, e.g. 2% "
                                  "(default) or 0.02"),
    quick: bool = typer.Option(False, "--quick",
                               help="small and fast: one repeat for a plan; the recipe's "
                                    "own small sizes for a recipe"),
    bed: str | None = typer.Option(None, help="ram, loop, tmpfs or dir:PATH (overrides "
                                      "the plan's bed kind)"),
    fmt: str = typer.Option("text", "--format", help="text, md or json"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Run a plan (TOML) or a recipe: points interleaved, knobs applied and restored."""
    from ..plan import load_plan, parse_set, run_plan
    from ..recipes.registry import RecipeOptions, get, plan_result
    from ..repeat import parse_repeat, parse_target

    check_format(fmt)
    policy = parse_repeat(repeat) if repeat is not None else None
    tgt = parse_target(rel_target) if rel_target is not None else None
    parsed = [parse_set(s) for s in sets or []]
    if _is_plan_path(target):
        plan = load_plan(target).with_overrides(sets=parsed, label=label, repeat=policy,
                                              bed=bed, quick=quick, target=tgt)
        recipe = None
        title = f"plan {plan.label}"
    else:
        recipe = get(target)
        title = recipe.name
        plan = None
        if tgt is not None:
            if policy is None:
                raise UserError("--target applies to --repeat auto[:MAX]: add --repeat auto")
            policy = policy.with_target(tgt)
    store = open_store(db)
    with exclusive(f"run {target}"), interruptible():
        journal.recover()
        if plan is not None:
            result = plan_result(run_plan(plan, store, RichProgress(title)))
        else:
            assert recipe is not None
            opts = RecipeOptions(quick=quick, sets=tuple((k, tuple(v)) for k, v in parsed),
                                 label=label, repeat=policy, bed=bed)
            result = recipe.run(opts, store, RichProgress(title))
    if fmt == "json":
        from .runs import run_json

        runs: list[dict[str, Any]] = []
        for r in result.runs:
            doc = run_json(r)
            doc["knobs"] = dict(r.env.get("knobs", {}))
            runs.append(doc)
        print_json({"run_ids": [r.id for r in result.runs], "runs": runs, **result.doc})
    elif fmt == "md" and result.render_md is not None:
        typer.echo(result.render_md(), nl=False)
    else:
        typer.echo(result.render_text(), nl=False)
