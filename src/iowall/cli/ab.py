"""`iowall ab --kernel A --kernel B RECIPE|PLAN`: two kernels booted in turn in virtme-ng
guests, the same target in each, then compare, Why and the differential flame graph."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..actions.ab import run_ab
from ..report.emit import emit
from .options import DbOpt, HoldMemoryOpt, OutputOpt, ReportFormat, ReportFormatOpt, failed_exit


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ab(
    target: Annotated[
        str, typer.Argument(metavar="RECIPE|PLAN.toml", help="what each guest runs (see: iowall recipes)")
    ],
    kernels: Annotated[
        list[str],
        typer.Option(
            "--kernel",
            metavar="IMAGE|RELEASE|DEB",
            help="twice: A (base) then B (new); a "
            "bzImage/vmlinuz path, a release under /boot, or a Debian package name, then "
            "(in the same argument) options appended to its kernel command line, e.g. "
            "'6.1.0-50-amd64 init_on_alloc=1' (labelled 6.1.0-50-amd64+init_on_alloc=1)",
        ),
    ],
    rounds: Annotated[
        int, typer.Option(min=1, help="boots of each kernel, alternating which goes first")
    ] = 3,
    cpus: Annotated[int, typer.Option(min=1, help="vCPUs of every guest")] = 2,
    memory: Annotated[
        str, typer.Option(metavar="SIZE", help="memory of every guest (the ram bed lives in it)")
    ] = "2G",
    allow_emulated: Annotated[
        bool, typer.Option("--allow-emulated", help="run without working KVM; every run is marked emulated")
    ] = False,
    quick: Annotated[bool, typer.Option("--quick", help="the recipe's small sizes")] = False,
    probes: Annotated[
        str, typer.Option(metavar="LIST|default|all|none", help="probes inside the guests")
    ] = "default",
    flame: Annotated[
        str | None,
        typer.Option(
            "--flame",
            metavar="FILE.svg",
            help="the differential flame graph (default: in the run's directory)",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(metavar="S", help="longest life of one guest")] = 3600.0,
    boot_timeout: Annotated[
        float, typer.Option(metavar="S", help="a guest that has not started its command by then did not boot")
    ] = 120.0,
    boot_attempts: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="boots of one round's kernel before it counts as failed, "
            "when it dies before the guest command (an early-boot panic or hang)",
        ),
    ] = 2,
    hold_memory: HoldMemoryOpt = True,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Two kernels in virtme-ng guests, one target, interleaved rounds, one compare."""
    report = run_ab(
        target,
        kernels,
        db,
        _say,
        rounds=rounds,
        cpus=cpus,
        memory=memory,
        allow_emulated=allow_emulated,
        quick=quick,
        probes=probes,
        flame=flame,
        timeout=timeout,
        boot_timeout=boot_timeout,
        boot_attempts=boot_attempts,
        hold_memory=hold_memory,
    )
    emit(report, fmt, output)
    if report.compare is None:
        raise typer.Exit(1)  # a side has no completed run: nothing was compared
    failed_exit(report)  # a guest died mid-run, or a point of its plan failed
