"""`iowall run PLAN.toml|FILE.fio|RECIPE`: run a plan file, a fio job file (a plan of one
point, on the bed) or a registered recipe, interleaved."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

import typer

from .. import journal
from ..beds import bed_with_wipe
from ..errors import UserError
from ..guestmem import hold_guest_memory
from ..knobs import KnobSession
from ..machine_lock import exclusive, parse_wait
from ..plan import Plan, load_jobfile, load_plan, parse_set, plan_report, preview, run_plan
from ..probes import resolve
from ..recipes.options import RecipeOptions
from ..recipes.registry import Recipe, get, recipe_knobs
from ..repeat import RepeatPolicy, parse_repeat, parse_target
from ..report.emit import emit
from ..report.run import ReportRuns
from ..results import Report
from ..signals import interruptible
from ..store import RunFilter, Store
from ..store.reports import add_report
from .options import (
    BED_HELP,
    CommitOpt,
    DbOpt,
    HoldMemoryOpt,
    LabelOpt,
    OutputOpt,
    RepeatOpt,
    ReportFormat,
    ReportFormatOpt,
    TargetOpt,
    WaitOpt,
    WipeOpt,
    record_commit,
)
from .progress import RichProgress


def _is_plan_path(target: str) -> bool:
    return target.endswith((".toml", ".fio")) or os.sep in target or os.path.isfile(target)


def _plan(target: str, *, sets: Sequence[tuple[str, list[Any]]], label: str | None,
          repeat: RepeatPolicy | None, quick: bool, bed: str | None, probes: str | None,
          rel_target: float | None) -> Plan:
    """The plan file (or fio job file: a plan of one point) with the command line's
    overrides."""
    plan = load_jobfile(target) if target.endswith(".fio") else load_plan(target)
    return plan.with_overrides(sets=sets, label=label, repeat=repeat, bed=bed, quick=quick,
                               target=rel_target, probes=probes)


@dataclass(frozen=True)
class Target:
    """A plan or recipe checked as far as it can be without the machine, ready to run."""

    name: str
    title: str
    plan: Plan | None
    recipe: Recipe | None
    opts: RecipeOptions


def prepare(target: str, *, sets: Sequence[tuple[str, list[Any]]] = (),
            label: str | None = None, repeat: RepeatPolicy | None = None, quick: bool = False,
            bed: str | None = None, probes: str | None = None,
            rel_target: float | None = None) -> Target:
    """Load and check a plan file or a recipe's options — every check that needs no machine,
    refused knobs included — before any store, lock or bed is touched."""
    policy = repeat
    plan: Plan | None = None
    recipe: Recipe | None = None
    if _is_plan_path(target):
        plan = _plan(target, sets=sets, label=label, repeat=policy, quick=quick, bed=bed,
                     probes=probes, rel_target=rel_target)
        preview(plan)
        title = f"plan {plan.label}"
    else:
        recipe = get(target)
        title = recipe.name
        if rel_target is not None:
            if policy is None:
                raise UserError("--target applies to --repeat auto[:MAX]: add --repeat auto")
            policy = policy.with_target(rel_target)
    opts = RecipeOptions(quick=quick, sets=tuple((k, tuple(v)) for k, v in sets),
                         label=label, repeat=policy, bed=bed, probes=probes or "default")
    if recipe is not None:
        recipe_knobs(recipe.name, opts)
    return Target(target, title, plan, recipe, opts)


def execute(t: Target, store: Store, wait: float | None = None,
            hold_memory: bool = False) -> Report:
    """Run a prepared target under the machine lock, after recovering what a crash left;
    ``hold_memory``: first hold guest memory as `limits` does (free page reporting off, the
    free memory touched), restored after, its note added to the report."""
    with exclusive(f"run {t.name}", wait), interruptible(), KnobSession() as ks:
        journal.recover()
        gm = None
        if hold_memory:
            progress = RichProgress("guest memory")
            progress.begin(1.0)
            progress.step("touching the free memory once")
            gm = hold_guest_memory(ks)
            progress.end()
        if t.plan is not None:
            report = plan_report(run_plan(t.plan, store, RichProgress(t.title)))
        else:
            assert t.recipe is not None
            report = t.recipe.run(t.opts, store, RichProgress(t.title))
        if not hold_memory:
            return report
        said = gm.note() if gm is not None else (
            "--hold-memory: nothing to hold, " + ("not root" if os.geteuid() != 0 else
                                                 "this machine does no free page reporting"))
        return replace(report, notes=(*report.notes, said))


def run_target(target: str, store: Store, *, wait: float | None = None,
               hold_memory: bool = False, **kwargs: Any) -> Report:
    """Prepare and run a plan file or a recipe (shared with `iowall gate`, which runs its
    workload the same way); ``kwargs`` are ``prepare``'s."""
    return execute(prepare(target, **kwargs), store, wait, hold_memory)


def run_cmd(
    target: Annotated[str, typer.Argument(
        metavar="PLAN.toml|FILE.fio|RECIPE",
        help="a plan file, a fio job file (run on the bed: its directory is the bed's, a "
             "/dev/ filename is refused), or a recipe name (see: iowall recipes)")],
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
        help=f"{BED_HELP}; overrides the plan's bed kind")] = None,
    wipe: WipeOpt = False,
    probes: Annotated[str | None, typer.Option(
        "--probes", metavar="LIST|default|all|none",
        help="what to watch during every point (default: the plan's list, else default)")
    ] = None,
    wait: WaitOpt = None,
    hold_memory: HoldMemoryOpt = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="check the plan completely and print the points it would run, with "
        "their knobs, and the number of runs; run nothing, open no store")] = False,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Run a plan (TOML), a fio job file or a recipe: points interleaved, knobs applied and
    restored."""
    record_commit(commit)
    wait_s = parse_wait(wait)
    policy = parse_repeat(repeat) if repeat is not None else None
    tgt = parse_target(rel_target) if rel_target is not None else None
    if probes is not None:
        resolve(probes)
    parsed = [parse_set(s) for s in sets or []]
    bed = bed_with_wipe(bed, wipe)
    if dry_run:
        if not _is_plan_path(target):
            raise UserError(f"--dry-run checks a plan file (PLAN.toml or FILE.fio), not recipe "
                            f"{target!r}")
        emit(preview(_plan(target, sets=parsed, label=label, repeat=policy, quick=quick,
                           bed=bed, probes=probes, rel_target=tgt)), fmt, output)
        return
    prepared = prepare(target, sets=parsed, label=label, repeat=policy, quick=quick, bed=bed,
                       probes=probes, rel_target=tgt)
    store = Store(db)  # opened once the input is known to be good: a refusal writes nothing
    report = execute(prepared, store, wait_s, hold_memory)
    add_report(store, report)
    if fmt is ReportFormat.json:  # with every run whole, as `runs --format json` prints it
        emit(ReportRuns(report, tuple(store.runs(RunFilter(ids=report.run_ids)))), fmt, output)
    else:
        emit(report, fmt, output)
