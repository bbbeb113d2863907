"""`iowall bisect TARGET`: between a good and a bad kernel, the first bad one, each step an
interleaved `ab` of the candidate against the good kernel decided by the gate's rule. Exit 0
when a first bad kernel was found or there is no regression, 3 when skips left a range or
the bad end is undecided, 2 on bad input (docs/bisect.md)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..actions.bisect import bisect as run
from ..actions.bisect_step import Guests, Rule
from ..report.emit import emit
from ..vocab.errors import UserError
from ..vocab.units import parse_floor
from .options import DbOpt, HoldMemoryOpt, MailFormat, OutputOpt

SPEC = "SPEC"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


GoodOpt = Annotated[
    str | None,
    typer.Option(
        "--good",
        metavar=SPEC,
        help="the good kernel: IMAGE|RELEASE|DEB, then (in the same quoted argument) options "
        "appended to its command line, e.g. '6.1.0-50-amd64 init_on_alloc=1'",
    ),
]

KernelsOpt = Annotated[
    list[str] | None,
    typer.Option("--kernel", metavar=SPEC, help="the kernels between them, in order (repeatable)"),
]

CandidatesOpt = Annotated[
    str | None,
    typer.Option(
        "--candidates",
        metavar="FILE",
        help="the kernels in order, good first and bad last: one SPEC [OPTION...] a line",
    ),
]

GitOpt = Annotated[
    str | None, typer.Option("--git", metavar="DIR", help="bisect the commits of this kernel tree")
]

BuildOpt = Annotated[
    str | None,
    typer.Option(
        "--build",
        metavar="CMD",
        help="with --git: builds the checked-out commit, its last line the image",
    ),
]

MaxRoundsOpt = Annotated[int, typer.Option(min=1, help="rounds of a step at most; still undecided: skipped")]

MetricOpt = Annotated[
    list[str] | None,
    typer.Option("--metric", metavar="GLOB", help="metrics that judge a step (default: the headline)"),
]

AllowEmulatedOpt = Annotated[
    bool, typer.Option("--allow-emulated", help="run without working KVM; every run is marked emulated")
]

JudgeEmulatedOpt = Annotated[
    bool,
    typer.Option(
        "--judge-emulated",
        help="judge emulated guests' timings anyway (never done otherwise: every step "
        "would be undecided); the report says so",
    ),
]

ProbesOpt = Annotated[str, typer.Option(metavar="LIST|default|all|none", help="probes inside the guests")]

FlameOpt = Annotated[
    str | None, typer.Option("--flame", metavar="FILE.svg", help="the differential flame graph")
]

BootTimeoutOpt = Annotated[
    float, typer.Option(metavar="S", help="a guest that has not started its command by then did not boot")
]

BootAttemptsOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="boots of a kernel that dies before the guest command")
]

FmtOpt = Annotated[
    MailFormat, typer.Option("--format", help="output format (mail: an LKP-style regression mail)")
]


def bisect(
    target: Annotated[
        str, typer.Argument(metavar="RECIPE|PLAN.toml", help="what each guest runs (see: iowall recipes)")
    ],
    good: GoodOpt = None,
    bad: Annotated[str | None, typer.Option("--bad", metavar=SPEC, help="the bad kernel")] = None,
    kernels: KernelsOpt = None,
    candidates: CandidatesOpt = None,
    git: GitOpt = None,
    build: BuildOpt = None,
    good_commit: Annotated[str | None, typer.Option("--good-commit", metavar="C")] = None,
    bad_commit: Annotated[str | None, typer.Option("--bad-commit", metavar="C")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="rounds of a step before it is judged")] = 2,
    max_rounds: MaxRoundsOpt = 4,
    metric: MetricOpt = None,
    floor: Annotated[str, typer.Option("--floor", help="smallest change that counts, e.g. 2%")] = "2%",
    fdr: Annotated[float, typer.Option("--fdr", help="false-discovery rate of a step's tests")] = 0.05,
    cpus: Annotated[int, typer.Option(min=1, help="vCPUs of every guest")] = 2,
    memory: Annotated[str, typer.Option(metavar="SIZE", help="memory of every guest")] = "2G",
    allow_emulated: AllowEmulatedOpt = False,
    judge_emulated: JudgeEmulatedOpt = False,
    quick: Annotated[bool, typer.Option("--quick", help="the recipe's small sizes")] = False,
    probes: ProbesOpt = "default",
    flame: FlameOpt = None,
    timeout: Annotated[float, typer.Option(metavar="S", help="longest life of one guest")] = 3600.0,
    boot_timeout: BootTimeoutOpt = 120.0,
    boot_attempts: BootAttemptsOpt = 2,
    hold_memory: HoldMemoryOpt = True,
    fmt: FmtOpt = MailFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """The first bad kernel between a good and a bad one: exit 0 found (or no regression), 3 a
    range or undecided."""
    if not 0 < fdr < 1:
        raise UserError(f"--fdr {fdr:g}: give a rate between 0 and 1, e.g. 0.05")
    guests = Guests(
        cpus, memory, allow_emulated, quick, probes, timeout, boot_timeout, boot_attempts, hold_memory
    )
    rule = Rule(rounds, max_rounds, tuple(metric or ()), parse_floor(floor), fdr, judge_emulated)
    report = run(
        target, good=good, bad=bad, kernels=kernels or [], candidates=candidates, git=git,
        build=build, good_commit=good_commit, bad_commit=bad_commit, db=db, say=_say,
        guests=guests, rule=rule, flame=flame,
    )  # fmt: skip
    emit(report, fmt, output)
    raise typer.Exit(report.exit_code)
