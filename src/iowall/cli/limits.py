"""`iowall limits`: where this machine's buffered-I/O wall is."""

from __future__ import annotations

from typing import Annotated

import typer

from ..actions.limits import prepare_limits
from ..actions.target import execute
from ..beds import bed_with_wipe
from ..machine.machine_lock import parse_wait
from ..measure.repeat import RepeatPolicy, parse_repeat, parse_target
from ..probes import resolve
from ..report.emit import emit
from ..store import Store
from ..store.reports import add_report
from .options import (
    BED_HELP,
    CommitOpt,
    DbOpt,
    HoldMemoryOpt,
    OutputOpt,
    ProbesOpt,
    QuickOpt,
    ReportFormat,
    ReportFormatOpt,
    TargetOpt,
    WaitOpt,
    WipeOpt,
    failed_exit,
    record_commit,
)
from .progress import RichProgress


def limits(
    bed: Annotated[str, typer.Option(help=BED_HELP)] = "ram",
    wipe: WipeOpt = False,
    fs: Annotated[str, typer.Option(help="xfs, ext4 or btrfs (ram, loop and device beds)")] = "xfs",
    size: Annotated[str | None, typer.Option(help="bed size, e.g. 8G; default: sized for the job")] = None,
    jobs: Annotated[
        str | None,
        typer.Option(
            help="job counts, e.g. 1,2,4 (default: powers of two to 2×nproc, at least 4 "
            "counts; with --quick the powers only)"
        ),
    ] = None,
    repeat: Annotated[
        str | None,
        typer.Option(
            metavar="N|auto[:MAX]",
            help="runs of every point, interleaved: a number, or auto: repeat each point until "
            "the 95% interval of its median is within ±--target (at most MAX, default 10); "
            "default auto to ±5% (at most 8), 2 with --quick",
        ),
    ] = None,
    rel_target: TargetOpt = None,
    quick: QuickOpt = False,
    label: Annotated[str, typer.Option(help="label stored with every run")] = "limits",
    commit: CommitOpt = None,
    mkfs_opts: Annotated[str, typer.Option("--mkfs-opts", help="extra mkfs options")] = "",
    mount_opts: Annotated[str, typer.Option("--mount-opts", help="mount options")] = "",
    fs_block: Annotated[
        str | None,
        typer.Option(
            "--fs-block",
            metavar="4k,16k,…",
            help="XFS block sizes, one bed each, side by side (large block sizes)",
        ),
    ] = None,
    probes: ProbesOpt = "default",
    wait: WaitOpt = None,
    hold_memory: HoldMemoryOpt = True,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Measure the ceilings and buffered vs uncached vs direct I/O at rising job counts; say
    where the wall is."""
    record_commit(commit)
    wait_s = parse_wait(wait)
    policy = parse_repeat(repeat) if repeat is not None else None
    if rel_target is not None:
        policy = (policy or RepeatPolicy.until_decided()).with_target(parse_target(rel_target))
    resolve(probes)
    bed = bed_with_wipe(bed, wipe) or bed
    prepared = prepare_limits(
        bed=bed,
        fs=fs,
        size=size,
        jobs=jobs,
        fs_block=fs_block,
        repeat=policy,
        quick=quick,
        label=label,
        mkfs_opts=mkfs_opts,
        mount_opts=mount_opts,
        probes=probes,
    )
    store = Store(db)  # opened once the input is known to be good: a refusal writes nothing
    report = execute(prepared, store, RichProgress, wait_s, hold_memory)
    add_report(store, report)
    emit(report, fmt, output)
    failed_exit(report)
