"""`iowall limits`: where this machine's buffered-I/O wall is."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import journal
from ..machine_lock import exclusive
from ..probes import resolve
from ..recipes.limits import LimitsOptions, run_limits
from ..recipes.limits_sizing import parse_jobs
from ..repeat import parse_repeat, parse_target
from ..report.emit import emit
from ..signals import interruptible
from ..store import Store
from ..store.reports import add_report
from ..units import parse_size
from .options import (
    DbOpt,
    OutputOpt,
    ProbesOpt,
    QuickOpt,
    ReportFormat,
    ReportFormatOpt,
    TargetOpt,
)
from .progress import RichProgress


def limits(
    bed: Annotated[str, typer.Option(help="ram (default), loop, tmpfs or dir:PATH")] = "ram",
    fs: Annotated[str, typer.Option(help="xfs, ext4 or btrfs (ram and loop beds)")] = "xfs",
    size: Annotated[str | None, typer.Option(
        help="bed size, e.g. 8G; default: sized for the job")] = None,
    jobs: Annotated[str | None, typer.Option(
        help="job counts, e.g. 1,2,4 (default 1,2,4…nproc,2×nproc)")] = None,
    repeat: Annotated[str, typer.Option(
        metavar="N|auto[:MAX]",
        help="runs of every point, interleaved: a number, or auto: repeat each point until "
             "the 95% interval of its median is within ±--target (at most MAX, default 10)")
    ] = "3",
    rel_target: TargetOpt = None,
    quick: QuickOpt = False,
    label: Annotated[str, typer.Option(help="label stored with every run")] = "limits",
    mkfs_opts: Annotated[str, typer.Option("--mkfs-opts", help="extra mkfs options")] = "",
    mount_opts: Annotated[str, typer.Option("--mount-opts", help="mount options")] = "",
    probes: ProbesOpt = "default",
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Measure the ceilings and buffered vs direct I/O at rising job counts; say where the wall is."""
    policy = parse_repeat(repeat)
    if rel_target is not None:
        policy = policy.with_target(parse_target(rel_target))
    resolve(probes)
    opts = LimitsOptions(bed=bed, fs=fs, size=parse_size(size, what="--size") if size else None,
                         jobs=tuple(parse_jobs(jobs)) if jobs is not None else None,
                         repeat=policy, quick=quick, label=label, mkfs_opts=mkfs_opts,
                         mount_opts=mount_opts, probes=probes)
    store = Store(db)
    with exclusive("limits"), interruptible():
        journal.recover()
        report = run_limits(opts, store, RichProgress("limits"))
    add_report(store, report)
    emit(report, fmt, output)
