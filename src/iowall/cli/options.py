"""Options several commands share, declared once (fastapi-cli style ``Annotated`` aliases), and
the per-command format choices: a wrong ``--format`` lists the choices."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated

import typer

from ..model import COMMIT_ENV, check_label
from ..results import Report, outcome_of


class ReportFormat(str, Enum):
    """Reports of a measurement (limits, run, report, explain)."""

    text = "text"
    md = "md"
    json = "json"


class ListFormat(str, Enum):
    """Lists of records (runs, recipes, doctor)."""

    text = "text"
    json = "json"
    csv = "csv"


class RecordFormat(str, Enum):
    """One record or a verdict (show, explain, locks, doctor)."""

    text = "text"
    json = "json"


class ScalingFormat(str, Enum):
    """Scaling curves (scaling)."""

    text = "text"
    md = "md"
    csv = "csv"
    json = "json"


class MailFormat(str, Enum):
    """Reports that also go to a kernel list as a mail (bisect)."""

    text = "text"
    md = "md"
    json = "json"
    mail = "mail"


class TableFormat(str, Enum):
    """Analyses with a table (compare, scaling, locks)."""

    text = "text"
    md = "md"
    csv = "csv"
    json = "json"
    html = "html"


DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="IOWALL_DB",
        metavar="URL|PATH",
        help="the store: a SQLite file path, or a URL (sqlite:///F, postgresql://…); "
        "default $XDG_DATA_HOME/iowall/iowall.db",
    ),
]
OutputOpt = Annotated[
    str | None, typer.Option("-o", "--output", metavar="FILE", help="write to FILE (atomically), not stdout")
]
ProbesOpt = Annotated[
    str,
    typer.Option(
        "--probes",
        metavar="LIST|default|all|none",
        help="what to watch during every point: default, all, none or a list (cpu,locks,…)",
    ),
]
ReportFormatOpt = Annotated[ReportFormat, typer.Option("--format", help="output format")]
ListFormatOpt = Annotated[ListFormat, typer.Option("--format", help="output format")]
TableFormatOpt = Annotated[TableFormat, typer.Option("--format", help="output format")]
RecordFormatOpt = Annotated[RecordFormat, typer.Option("--format", help="output format")]
ScalingFormatOpt = Annotated[ScalingFormat, typer.Option("--format", help="output format")]
FigureOpt = Annotated[
    str,
    typer.Option(
        "-o",
        "--output",
        metavar="FILE.png|FILE.svg",
        help="the figure to write (atomically); the format follows the extension",
    ),
]
RunSetsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="BASE NEW [NEW…]",
        help="run sets: a label, FIELD=VALUE[,…] (label, recipe, "
        "host, kernel, batch, status), ids=3-9, or a bundle FILE.json[:FIELD=VALUE]",
        show_default=False,
    ),
]
CompareMetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        metavar="NAME|GLOB|all",
        help="metric name or glob (repeatable); 'all' for "
        "every metric (default: throughput, IOPS, p99 latency, rates, times)",
    ),
]
FloorOpt = Annotated[
    str, typer.Option("--floor", metavar="PCT", help="smallest change ever marked (e.g. 2% or 0.02)")
]
SelectionsArg = Annotated[
    list[str],
    typer.Argument(
        metavar="SELECTION",
        help="runs: a label, FIELD=VALUE,…, ids=3-9 or a bundle.json; each one a side",
        show_default=False,
    ),
]
ScalingMetricOpt = Annotated[
    str | None,
    typer.Option(
        "--metric",
        metavar="NAME",
        help="metric to scale (default: the recipe's throughput, e.g. write_bw_bytes_per_s)",
    ),
]
KneeOpt = Annotated[
    float, typer.Option("--knee", metavar="EFF", help="knee: first N whose efficiency falls under this")
]
RunIdArg = Annotated[
    int, typer.Argument(metavar="RUN", help="run id (see `iowall runs`)", show_default=False)
]


def _label(value: str | None) -> str | None:
    return check_label(value) if value is not None else None


LabelOpt = Annotated[str | None, typer.Option("--label", callback=_label, help="label stored with every run")]
CommitOpt = Annotated[
    str | None,
    typer.Option(
        "--commit",
        envvar="IOWALL_COMMIT",
        metavar="ID",
        help="the commit or build id under test, stored with every run (history and gate speak in commits)",
    ),
]


def record_commit(commit: str | None) -> None:
    """Make ``--commit`` the commit every run of this invocation records."""
    if commit:
        os.environ[COMMIT_ENV] = commit


RepeatOpt = Annotated[
    str | None,
    typer.Option(
        "--repeat",
        metavar="N|auto[:MAX]",
        help="runs of every point, interleaved: a number, or auto: repeat each point until the "
        "95% interval of its median is within ±--target (at most MAX, default 10)",
    ),
]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        metavar="PCT",
        help="with --repeat auto: the interval's half-width, e.g. 2% (default) or 0.02",
    ),
]
WaitOpt = Annotated[
    str | None,
    typer.Option(
        "--wait",
        metavar="[=SECONDS]",
        help="wait for the machine lock instead of refusing while another measurement runs "
        "(bare: as long as it takes; --wait=10m: at most that), saying who holds it",
    ),
]
#: Every measuring command's (limits, run, gate, ab, fleet run); default True.
HoldMemoryOpt = Annotated[
    bool,
    typer.Option(
        "--hold-memory/--no-hold-memory",
        help="on a VM whose host takes freed memory back (free page reporting): hold "
        "reporting off and touch the free memory once first, so that buffered points do not "
        "pay host faults (restored after; the report says what was done). The default: "
        "--no-hold-memory measures the VM as it is",
    ),
]
WipeOpt = Annotated[
    bool,
    typer.Option(
        "--wipe",
        help="with a device bed (--bed device:/dev/X, or a plan's) listed in "
        "/etc/iowall/devices: erase its signatures (wipefs -a) before use",
    ),
]
#: What --bed takes (limits and run).
BED_HELP = (
    "ram (default), loop, tmpfs, dir:PATH, or device:/dev/X[,/dev/Y…] (a spare disk "
    "or partitions: destructive, guarded; docs/safety.md)"
)
QuickOpt = Annotated[bool, typer.Option("--quick", help="small sizes: a few minutes")]


def failed_exit(report: Report) -> None:
    """Exit 1 (``results.EXIT_POINTS_FAILED``) after the report when any run of the job
    failed or was interrupted: a CI job must not read success from a plan whose points all
    failed."""
    o = outcome_of(report)
    if o is not None and o.exit_code:
        raise typer.Exit(o.exit_code)
