"""`iowall gate TARGET --baseline SEL`: the regression gate for kernel CI. TARGET is a recipe or
a plan (run now, and re-run to confirm a suspected regression) or a selection of stored runs;
the decision is `analysis.regress.gate`'s. `iowall gate --series FILE` gates the newest result of each
series of another system's file against its own history (`analysis.regress.series_gate`), decided the
same way. Exit 0 pass, 1 regression confirmed, 3 inconclusive, 2 bad input; with --bisect the
codes git bisect run reads (0 good, 1 bad, 125 skip, 128 stop: docs/gate.md)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from ..actions.gate import gate_file, gate_kcidb, gate_runs, read_accept
from ..analysis.regress.gate import EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_REGRESSION
from ..analysis.regress.series_gate import FDR_SERIES
from ..machine.atomic import write_text
from ..machine.machine_lock import parse_wait
from ..report.emit import emit, wrote
from ..report.gate import junit_xml
from ..store import Store
from ..vocab.errors import IowallError, UserError
from ..vocab.units import parse_floor
from .options import (
    CommitOpt,
    DbOpt,
    HoldMemoryOpt,
    OutputOpt,
    ReportFormat,
    ReportFormatOpt,
    WaitOpt,
    record_commit,
)
from .progress import RichProgress

#: the smallest change that counts, unless --floor says otherwise
FLOOR = "2%"


def gate(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="RECIPE|PLAN.toml|SELECTION",
            help="run a recipe or plan now, or gate stored runs (a label, FIELD=VALUE,…, ids=…)",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            metavar="SELECTION",
            help="the stored runs to gate against (repeatable: their union)",
        ),
    ] = None,
    series: Annotated[
        str | None,
        typer.Option(
            "--series",
            metavar="FILE",
            help="gate the newest result of each series of a series,index,value file (CSV or "
            "JSON) against its own history, instead of TARGET and --baseline",
        ),
    ] = None,
    direction: Annotated[
        str,
        typer.Option(
            "--direction",
            metavar="higher|lower",
            help="with --series: which way is better, unless the file has a direction column",
        ),
    ] = "higher",
    unit: Annotated[str, typer.Option("--unit", metavar="UNIT", help="with --series: the values' unit")] = "",
    label: Annotated[
        str | None, typer.Option("--label", help="label of the new runs (when TARGET is run)")
    ] = None,
    commit: CommitOpt = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="runs of every point when TARGET is run")
    ] = 3,
    confirm: Annotated[
        int | None,
        typer.Option(
            "--confirm",
            min=0,
            metavar="N",
            help="re-run the target up to N more times while a regression is suspected, before "
            "deciding (default 2 when the gate runs TARGET, 0 for stored runs)",
        ),
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="the recipe's small sizes")] = False,
    fdr: Annotated[
        float | None,
        typer.Option(
            "--fdr",
            help="false-discovery rate across the tests that can fail the gate "
            f"(default 0.05; {FDR_SERIES:g} with --series)",
        ),
    ] = None,
    floor: Annotated[str, typer.Option("--floor", help="smallest change that counts, e.g. 2%")] = FLOOR,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", metavar="GLOB", help="metrics to test (default: all)")
    ] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-on",
            metavar="GLOB",
            help="metrics that can fail the gate (default: throughput, latency, runtime)",
        ),
    ] = None,
    accept: Annotated[
        str | None,
        typer.Option("--accept", metavar="FILE.toml", help="known changes that do not fail the gate"),
    ] = None,
    junit: Annotated[
        str | None,
        typer.Option(
            "--junit", metavar="FILE.xml", help="also write JUnit XML (one case per point and metric)"
        ),
    ] = None,
    flames: Annotated[
        str | None,
        typer.Option("--flames", metavar="DIR", help="write each regression's differential flame graph here"),
    ] = None,
    kcidb: Annotated[
        str | None,
        typer.Option(
            "--kcidb",
            metavar="FILE.json",
            help="also write a KernelCI KCIDB v5.3 document: a test per gated point and metric, "
            "its status the verdict, the Why in misc (docs/kernelci.md)",
        ),
    ] = None,
    bisect: Annotated[
        bool,
        typer.Option(
            "--bisect",
            help="exit as git bisect run expects: 0 good (pass), 1 bad (regression), 125 skip "
            "(inconclusive), 128 stop (an error that every commit would meet)",
        ),
    ] = False,
    wait: WaitOpt = None,
    hold_memory: HoldMemoryOpt = True,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Gate new runs, or a series file's newest results: exit 0 pass, 1 regression, 3 inconclusive
    (with --bisect: 0, 1, 125 for git bisect run).

    TARGET against --baseline (stored runs), or --series FILE: each series' newest result
    against its own history."""
    try:
        code = _gate(
            target=target,
            baseline=baseline,
            series=series,
            direction=direction,
            unit=unit,
            label=label,
            commit=commit,
            repeat=repeat,
            confirm=confirm,
            quick=quick,
            fdr=fdr,
            floor=floor,
            metric=metric,
            fail_on=fail_on,
            accept=accept,
            junit=junit,
            kcidb=kcidb,
            flames=flames,
            wait=wait,
            hold_memory=hold_memory,
            fmt=fmt,
            output=output,
            db=db,
        )
    except IowallError as e:
        if not bisect:
            raise
        said = "error" if isinstance(e, UserError) else "failed"
        print(f"iowall: {said}: {e}; exit {BISECT_ABORT}: git bisect run stops", file=sys.stderr)
        raise typer.Exit(BISECT_ABORT) from e
    raise typer.Exit(BISECT_CODES[code] if bisect else code)


#: git bisect run's meaning of each gate exit: pass is good, a regression bad, inconclusive
#: skipped (git's 125); an error aborts the bisection (128 and up), as it would recur
#: at every commit and must not be taken for a bad one.
BISECT_CODES = {EXIT_PASS: 0, EXIT_REGRESSION: 1, EXIT_INCONCLUSIVE: 125}
BISECT_ABORT = 128


def _gate(
    target: str | None,
    baseline: list[str] | None,
    series: str | None,
    direction: str,
    unit: str,
    label: str | None,
    commit: str | None,
    repeat: int,
    confirm: int | None,
    quick: bool,
    fdr: float | None,
    floor: str,
    metric: list[str] | None,
    fail_on: list[str] | None,
    accept: str | None,
    junit: str | None,
    kcidb: str | None,
    flames: str | None,
    wait: str | None,
    hold_memory: bool,
    fmt: ReportFormat,
    output: str | None,
    db: str | None,
) -> int:
    """The gate, parsed: the report emitted, its exit code returned."""
    if fdr is not None and not 0 < fdr < 1:
        raise UserError(f"--fdr {fdr:g}: give a rate between 0 and 1, e.g. 0.05")
    fl = parse_floor(floor)
    accepted = read_accept(accept) if accept else []
    decided = _decision_args(fdr, floor, metric, fail_on, accept)
    if series is not None:
        if target is not None or baseline:
            raise UserError("give TARGET --baseline SELECTION or --series FILE, not both")
        if kcidb is not None:
            raise UserError("--kcidb writes the gated runs' kernels and tests: it needs TARGET, not --series")
        report = gate_file(
            series, fdr=fdr, floor=fl, direction=direction, unit=unit, accepted=accepted, decided=decided
        )
    else:
        if target is None or not baseline:
            raise UserError("gate needs TARGET and --baseline SELECTION (stored runs), or --series FILE")
        wait_s = parse_wait(wait)
        record_commit(commit)
        store = Store.existing(db)  # the baselines are stored runs: a store must be there
        report = gate_runs(
            store,
            target,
            baseline,
            RichProgress,
            label=label,
            repeat=repeat,
            confirm=confirm,
            quick=quick,
            fdr=0.05 if fdr is None else fdr,
            floor=fl,
            metric=metric,
            fail_on=fail_on,
            accepted=accepted,
            flames=flames,
            wait=wait_s,
            hold_memory=hold_memory,
            decided=decided,
        )
    if junit is not None:
        write_text(junit, junit_xml(report))
        wrote(junit)
    if kcidb is not None and series is None:
        write_text(kcidb, json.dumps(gate_kcidb(report, store)) + "\n", what="KCIDB document")
        wrote(kcidb)
    emit(report, fmt, output)
    return report.result.exit_code


def _decision_args(
    fdr: float | None, floor: str, metric: list[str] | None, fail_on: list[str] | None, accept: str | None
) -> list[str]:
    """The options that decide the verdict, as the user gave them, for the report's Reproduce
    line: without them the command it prints can exit otherwise (a gate ``--fail-on`` bandwidth
    printed a line that failed on p99 latency)."""
    out = ["--fdr", f"{fdr:g}"] if fdr is not None else []
    if parse_floor(floor) != parse_floor(FLOOR):
        out += ["--floor", floor]
    out += [x for m in metric or [] for x in ("--metric", m)]
    out += [x for m in fail_on or [] for x in ("--fail-on", m)]
    return out + (["--accept", accept] if accept else [])
