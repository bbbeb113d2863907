"""`iowall run PLAN.toml|RECIPE`: run a plan file or a registered recipe, interleaved."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from .. import journal
from ..errors import UserError
from ..machine_lock import exclusive
from ..plan import load_plan, parse_set, plan_report, run_plan
from ..probes import resolve
from ..recipes.options import RecipeOptions
from ..recipes.registry import get
from ..repeat import RepeatPolicy, parse_repeat, parse_target
from ..report.emit import emit, json_text, write
from ..report.recipe import report_json
from ..results import Report
from ..signals import interruptible
from ..store import RunFilter, Store
from ..store.reports import add_report
from .options import (
    CommitOpt,
    DbOpt,
    LabelOpt,
    OutputOpt,
    RepeatOpt,
    ReportFormat,
    ReportFormatOpt,
    TargetOpt,
    record_commit,
)
from .progress import RichProgress
from .runs import run_json


def _is_plan_path(target: str) -> bool:
    return target.endswith(".toml") or os.sep in target or os.path.isfile(target)


def run_target(target: str, store: Store, *, sets: Sequence[tuple[str, list[Any]]] = (),
               label: str | None = None, repeat: RepeatPolicy | None = None,
               quick: bool = False, bed: str | None = None, probes: str | None = None,
               rel_target: float | None = None) -> Report:
    """Run a plan file or a recipe under the machine lock and return its Report (shared with
    `iowall gate`, which runs its workload the same way)."""
    policy = repeat
    if _is_plan_path(target):
        plan = load_plan(target).with_overrides(sets=sets, label=label, repeat=policy,
                                              bed=bed, quick=quick, target=rel_target,
                                              probes=probes)
        recipe = None
        title = f"plan {plan.label}"
    else:
        recipe = get(target)
        title = recipe.name
        plan = None
        if rel_target is not None:
            if policy is None:
                raise UserError("--target applies to --repeat auto[:MAX]: add --repeat auto")
            policy = policy.with_target(rel_target)
    with exclusive(f"run {target}"), interruptible():
        journal.recover()
        if plan is not None:
            return plan_report(run_plan(plan, store, RichProgress(title)))
        assert recipe is not None
        opts = RecipeOptions(quick=quick, sets=tuple((k, tuple(v)) for k, v in sets),
                             label=label, repeat=policy, bed=bed, probes=probes or "default")
        return recipe.run(opts, store, RichProgress(title))


def run_cmd(
    target: Annotated[str, typer.Argument(
        metavar="PLAN.toml|RECIPE", help="a plan file, or a recipe name (see: iowall recipes)")],
    sets: Annotated[list[str] | None, typer.Option(
        "--set", metavar="AXIS=V1,V2", help="set an axis (repeatable), e.g. --set jobs=1,2 "
        "--set sysctl:vm.dirty_ratio=5,10")] = None,
    label: LabelOpt = None,
    commit: CommitOpt = None,
    repeat: RepeatOpt = None,
    rel_target: TargetOpt = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="small and fast: one repeat for a plan; the recipe's own small sizes "
                        "for a recipe")] = False,
    bed: Annotated[str | None, typer.Option(
        help="ram, loop, tmpfs or dir:PATH (overrides the plan's bed kind)")] = None,
    probes: Annotated[str | None, typer.Option(
        "--probes", metavar="LIST|default|all|none",
        help="what to watch during every point (default: the plan's list, else default)")
    ] = None,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Run a plan (TOML) or a recipe: points interleaved, knobs applied and restored."""
    record_commit(commit)
    policy = parse_repeat(repeat) if repeat is not None else None
    tgt = parse_target(rel_target) if rel_target is not None else None
    if probes is not None:
        resolve(probes)
    parsed = [parse_set(s) for s in sets or []]
    store = Store(db)
    report = run_target(target, store, sets=parsed, label=label, repeat=policy, quick=quick,
                        bed=bed, probes=probes, rel_target=tgt)
    add_report(store, report)
    if fmt is ReportFormat.json:  # with every run whole, as `runs --format json` prints it
        runs = [{**run_json(r), "knobs": dict(r.env.get("knobs", {}))}
                for r in store.runs(RunFilter(ids=report.run_ids))]
        write(json_text({**report_json(report), "runs": runs}), output)
    else:
        emit(report, fmt, output)
