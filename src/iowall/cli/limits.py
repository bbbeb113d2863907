"""`iowall limits`: where this machine's buffered-I/O wall is."""

from __future__ import annotations

import typer

from .. import journal
from ..machine_lock import exclusive
from ..recipes.limits import LimitsOptions, limits_json, parse_jobs, run_limits
from ..repeat import parse_repeat, parse_target
from ..report.limits import render_md, render_text
from ..signals import interruptible
from ..units import parse_size
from .common import RichProgress, check_format, open_store, print_json


def limits(
    bed: str = typer.Option("ram", help="ram (default), loop, tmpfs or dir:PATH"),
    fs: str = typer.Option("xfs", help="xfs, ext4 or btrfs (ram and loop beds)"),
    size: str | None = typer.Option(None, help="bed size, e.g. 8G; default: sized for the job"),
    jobs: str | None = typer.Option(None, help="job counts, e.g. 1,2,4 (default 1,2,4…nproc,2×nproc)"),
    repeat: str = typer.Option(
        "3", metavar="N|auto[:MAX]",
        help="runs of every point, interleaved: a number, or auto: repeat each point until "
             "the 95% interval of its median is within ±--target (at most MAX, default 10)"),
    rel_target: str | None = typer.Option(
        None, "--target", metavar="PCT", help="with --repeat auto: the interval's half-width, "
                                              "e.g. 2% (default) or 0.02"),
    quick: bool = typer.Option(False, "--quick", help="small data sizes: about two minutes"),
    label: str = typer.Option("limits", help="label stored with every run"),
    mkfs_opts: str = typer.Option("", "--mkfs-opts", help="extra mkfs options"),
    mount_opts: str = typer.Option("", "--mount-opts", help="mount options"),
    probes: str = typer.Option("default", help="default, all, none or a list (cpu,locks,…)"),
    fmt: str = typer.Option("text", "--format", help="text, md or json"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Measure the ceilings and buffered vs direct I/O at rising job counts; say where the wall is."""
    check_format(fmt)
    policy = parse_repeat(repeat)
    if rel_target is not None:
        policy = policy.with_target(parse_target(rel_target))
    opts = LimitsOptions(bed=bed, fs=fs, size=parse_size(size, what="--size") if size else None,
                         jobs=tuple(parse_jobs(jobs)) if jobs is not None else None,
                         repeat=policy, quick=quick, label=label, mkfs_opts=mkfs_opts,
                         mount_opts=mount_opts, probes=probes)
    store = open_store(db)
    with exclusive("limits"), interruptible():
        journal.recover()
        summary, ctx = run_limits(opts, store, RichProgress("limits"))
    if fmt == "json":
        print_json(limits_json(summary, ctx))
    elif fmt == "md":
        typer.echo(render_md(summary, ctx), nl=False)
    else:
        typer.echo(render_text(summary, ctx), nl=False)
