"""`iowall run PLAN.toml|FILE.fio|RECIPE`: run a plan file, a fio job file (a plan of one
point, on the bed) or a registered recipe, interleaved."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.target import execute, is_plan_path, load_target_plan, prepare
from ..beds import bed_with_wipe
from ..machine.machine_lock import parse_wait
from ..measure.repeat import parse_repeat, parse_target
from ..plan import parse_set, preview
from ..probes import resolve
from ..report.emit import emit
from ..report.recipe import ReportRuns
from ..store import RunFilter, Store
from ..store.reports import add_report
from ..vocab.errors import UserError
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
    failed_exit,
    record_commit,
)
from .progress import RichProgress


def run_cmd(
    target: Annotated[
        str,
        typer.Argument(
            metavar="PLAN.toml|FILE.fio|RECIPE",
            help="a plan file, a fio job file (run on the bed: its directory is the bed's, a "
            "/dev/ filename is refused), or a recipe name (see: iowall recipes)",
        ),
    ],
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="AXIS=V1,V2",
            help="set an axis (repeatable), e.g. --set jobs=1,2 --set sysctl:vm.dirty_ratio=5,10",
        ),
    ] = None,
    label: LabelOpt = None,
    commit: CommitOpt = None,
    repeat: RepeatOpt = None,
    rel_target: TargetOpt = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick", help="small and fast: one repeat for a plan; the recipe's own small sizes for a recipe"
        ),
    ] = False,
    bed: Annotated[str | None, typer.Option(help=f"{BED_HELP}; overrides the plan's bed kind")] = None,
    wipe: WipeOpt = False,
    probes: Annotated[
        str | None,
        typer.Option(
            "--probes",
            metavar="LIST|default|all|none",
            help="what to watch during every point (default: the plan's list, else default)",
        ),
    ] = None,
    wait: WaitOpt = None,
    hold_memory: HoldMemoryOpt = True,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="check the plan completely and print the points it would run, with "
            "their knobs, and the number of runs; run nothing, open no store",
        ),
    ] = False,
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
    plan_wipe = wipe and bed is None and is_plan_path(target)  # the plan's own device bed
    bed = bed if plan_wipe else bed_with_wipe(bed, wipe)
    if dry_run:
        if not is_plan_path(target):
            raise UserError(f"--dry-run checks a plan file (PLAN.toml or FILE.fio), not recipe {target!r}")
        emit(
            preview(
                load_target_plan(
                    target,
                    sets=parsed,
                    label=label,
                    repeat=policy,
                    quick=quick,
                    bed=bed,
                    wipe=plan_wipe,
                    probes=probes,
                    rel_target=tgt,
                )
            ),
            fmt,
            output,
        )
        return
    prepared = prepare(
        target,
        sets=parsed,
        label=label,
        repeat=policy,
        quick=quick,
        bed=bed,
        wipe=plan_wipe,
        probes=probes,
        rel_target=tgt,
    )
    store = Store(db)  # opened once the input is known to be good: a refusal writes nothing
    report = execute(prepared, store, RichProgress, wait_s, hold_memory)
    add_report(store, report)
    if fmt is ReportFormat.json:  # with every run whole, as `runs --format json` prints it
        emit(ReportRuns(report, tuple(store.runs(RunFilter(ids=report.run_ids)))), fmt, output)
    else:
        emit(report, fmt, output)
    failed_exit(report)
