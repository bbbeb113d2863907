"""`iowall gate TARGET --baseline SEL`: the regression gate for kernel CI. TARGET is a recipe or
a plan (run now, and re-run to confirm a suspected regression) or a selection of stored runs;
the decision is `analysis.gate`'s. `iowall gate --series FILE` gates the newest result of each
series of another system's file against its own history (`analysis.series_gate`), decided the
same way. Exit 0 pass, 1 regression confirmed, 3 inconclusive, 2 bad input."""

from __future__ import annotations

import datetime
import os
import shlex
import sys
from dataclasses import replace
from typing import Annotated

import typer

from ..analysis.compare import Side, compare, shared_run
from ..analysis.context import representative
from ..analysis.gate import (
    Accept,
    Explanation,
    GateReport,
    GateResult,
    attribution_shift,
    decide,
)
from ..analysis.gate import (
    confirm as confirmed,
)
from ..analysis.history import from_rows, results
from ..analysis.series_gate import FDR_SERIES, gate_series
from ..analysis.why import why_run
from ..atomic import write_text
from ..errors import UserError
from ..machine_lock import parse_wait
from ..model import Run
from ..recipes.registry import recipes
from ..repeat import RepeatPolicy
from ..report.emit import emit, wrote
from ..report.flame import write_svg
from ..report.gate import junit_xml, point_name, rank
from ..selection import load, parse_selection
from ..store import Store
from ..store.reports import add_report
from .compare import parse_floor
from .flame import flame_svg
from .history import check_series_options, read_series
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
from .run import _is_plan_path, run_target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_accept(path: str) -> list[Accept]:
    """``[[accept]]`` entries (point, metric, direction, until, reason) from a TOML file."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise UserError(f"--accept {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"--accept {path}: not TOML: {e}") from None
    out = []
    for i, a in enumerate(doc.get("accept", []), 1):
        if not isinstance(a, dict) or not {"point", "metric"} <= set(a):
            raise UserError(f"--accept {path}: entry {i} needs point and metric "
                            "(and optionally direction, until, reason)")
        d = str(a.get("direction", "worse"))
        if d not in ("worse", "better"):
            raise UserError(f"--accept {path}: entry {i}: direction is worse or better")
        until = str(a.get("until", ""))
        if until:
            try:
                datetime.date.fromisoformat(until)
            except ValueError:
                raise UserError(f"--accept {path}: entry {i}: until {until!r} is not a date "
                                "(YYYY-MM-DD)") from None
        out.append(Accept(str(a["point"]), str(a["metric"]), d, until, str(a.get("reason", ""))))
    return out


def _is_workload(target: str) -> bool:
    if _is_plan_path(target):
        return True
    return target in {r.name for r in recipes()}


def _explain(res: GateResult, base: list[Run], new: list[Run], store: Store | None,
             flames: str | None) -> list[Explanation]:
    """The Why of both sides' median runs, the CPU-time shares that grew, and the differential
    flame graph, for every regression."""
    out: list[Explanation] = []
    for v in sorted(res.of("regression"), key=rank):
        b_ids, n_ids = set(v.row.base_runs), set(v.row.new_runs)
        b_runs = [r for r in base if r.id in b_ids]
        n_runs = [r for r in new if r.id in n_ids]
        rb, rn = representative(b_runs, v.row.metric), representative(n_runs, v.row.metric)
        if rb is None or rn is None:
            continue
        if store is not None:
            arts = store.artifacts_of([x for x in (rb.id, rn.id) if x is not None])
            rb = replace(rb, artifacts=arts.get(rb.id or 0, ()))
            rn = replace(rn, artifacts=arts.get(rn.id or 0, ()))
        wb, wn = why_run(rb, b_runs), why_run(rn, n_runs)
        flame = f"iowall plot flame {rb.id} {rn.id} -o diff.svg"
        if flames is not None and store is not None:
            path = os.path.join(flames, f"gate-{rb.id}-{rn.id}.svg")
            try:
                os.makedirs(flames, exist_ok=True)
                write_svg(flame_svg(store, [str(rb.id), str(rn.id)]), path)
                flame = path
            except UserError as e:
                flame = f"not drawn ({e}); {flame}"
        same = next((i for i, e in enumerate(out)
                     if (e.base_run, e.new_run) == (rb.id, rn.id)), None)
        if same is not None:  # the same median runs: one explanation, its metrics listed
            out[same] = replace(out[same], metric=f"{out[same].metric}, {v.row.metric}")
            continue
        out.append(Explanation(point_name(v), v.row.metric, rb.id, rn.id,
                               tuple(wb.get("sentences", [])), tuple(wn.get("sentences", [])),
                               tuple(attribution_shift(b_runs, n_runs)), flame))
    return out


def gate_file(path: str, *, fdr: float | None, fl: float, direction: str, unit: str,
              accepted: list[Accept], junit: str | None, fmt: ReportFormat,
              output: str | None) -> None:
    """``gate --series FILE``: the newest result of every series of the file against its own
    history (``analysis.series_gate``), reported, written as JUnit and exited as the gate."""
    check_series_options(direction, None)
    hs = from_rows(read_series(path), direction=direction, unit=unit)
    level = FDR_SERIES if fdr is None else fdr
    result, tested = gate_series([results(h) for h in hs], fdr=level, floor=fl,
                                 accept=accepted, today=datetime.date.today().isoformat(),
                                 source=path)
    notes = [f"{t.name}: newest {', '.join(t.window)} against {t.n_base} results from "
             f"{t.base_from}" for t in tested if t.early.window is not None]
    notes += [f"{t.name}: not tested: {t.early.reason}" for t in tested
              if t.early.window is None]
    cmd = ["iowall", "gate", "--series", path] + (["--fdr", f"{fdr:g}"] if fdr else []) + (
        ["--direction", direction] if direction != "higher" else [])
    report = GateReport(result, f"{path}: each series' history", f"{path}: its newest results",
                        (), (shlex.join(cmd),), tuple(notes))
    if junit is not None:
        write_text(junit, junit_xml(report))
        wrote(junit)
    emit(report, fmt, output)
    raise typer.Exit(result.exit_code)


def gate(
    target: Annotated[str | None, typer.Argument(
        metavar="RECIPE|PLAN.toml|SELECTION",
        help="run a recipe or plan now, or gate stored runs (a label, FIELD=VALUE,…, ids=…)",
        show_default=False)] = None,
    baseline: Annotated[list[str] | None, typer.Option(
        "--baseline", metavar="SELECTION",
        help="the stored runs to gate against (repeatable: their union)")] = None,
    series: Annotated[str | None, typer.Option(
        "--series", metavar="FILE",
        help="gate the newest result of each series of a series,index,value file (CSV or "
             "JSON) against its own history, instead of TARGET and --baseline")] = None,
    direction: Annotated[str, typer.Option(
        "--direction", metavar="higher|lower",
        help="with --series: which way is better, unless the file has a direction column")
    ] = "higher",
    unit: Annotated[str, typer.Option(
        "--unit", metavar="UNIT", help="with --series: the values' unit")] = "",
    label: Annotated[str | None, typer.Option(
        "--label", help="label of the new runs (when TARGET is run)")] = None,
    commit: CommitOpt = None,
    repeat: Annotated[int, typer.Option(
        "--repeat", min=1, help="runs of every point when TARGET is run")] = 3,
    confirm: Annotated[int | None, typer.Option(
        "--confirm", min=0, metavar="N",
        help="re-run the target up to N more times while a regression is suspected, before "
             "deciding (default 2 when the gate runs TARGET, 0 for stored runs)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="the recipe's small sizes")] = False,
    fdr: Annotated[float | None, typer.Option(
        "--fdr", help="false-discovery rate across the tests that can fail the gate "
                      f"(default 0.05; {FDR_SERIES:g} with --series)")] = None,
    floor: Annotated[str, typer.Option(
        "--floor", help="smallest change that counts, e.g. 2%")] = "2%",
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", metavar="GLOB", help="metrics to test (default: all)")] = None,
    fail_on: Annotated[list[str] | None, typer.Option(
        "--fail-on", metavar="GLOB",
        help="metrics that can fail the gate (default: throughput, latency, runtime)")] = None,
    accept: Annotated[str | None, typer.Option(
        "--accept", metavar="FILE.toml", help="known changes that do not fail the gate")] = None,
    junit: Annotated[str | None, typer.Option(
        "--junit", metavar="FILE.xml", help="also write JUnit XML (one case per point and "
                                            "metric)")] = None,
    flames: Annotated[str | None, typer.Option(
        "--flames", metavar="DIR", help="write each regression's differential flame graph "
                                        "here")] = None,
    wait: WaitOpt = None,
    hold_memory: HoldMemoryOpt = False,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Gate new runs, or a series file's newest results: exit 0 pass, 1 regression, 3 inconclusive.

    TARGET against --baseline (stored runs), or --series FILE: each series' newest result
    against its own history."""
    if fdr is not None and not 0 < fdr < 1:
        raise UserError(f"--fdr {fdr:g}: give a rate between 0 and 1, e.g. 0.05")
    fl = parse_floor(floor)
    accepted = read_accept(accept) if accept else []
    if series is not None:
        if target is not None or baseline:
            raise UserError("give TARGET --baseline SELECTION or --series FILE, not both")
        gate_file(series, fdr=fdr, fl=fl, direction=direction, unit=unit, accepted=accepted,
                  junit=junit, fmt=fmt, output=output)
    if target is None or not baseline:
        raise UserError("gate needs TARGET and --baseline SELECTION (stored runs), or "
                        "--series FILE")
    fdr = 0.05 if fdr is None else fdr
    wait_s = parse_wait(wait)
    record_commit(commit)
    store = Store.existing(db)  # the baselines are stored runs: a store must be there
    base_runs = list({r.id: r for b in baseline for r in load(store, parse_selection(b))}
                     .values())
    base_text = " + ".join(baseline)
    workload = _is_workload(target)
    rounds = confirm if confirm is not None else (2 if workload else 0)
    if rounds and not workload:
        raise UserError("--confirm re-runs the workload: give a recipe or plan as TARGET")
    lbl = label or f"gate-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    new_ids: list[int] = []

    def run_once() -> None:  # the first run and every confirmation: the same --repeat
        rep = run_target(target, store, label=lbl, repeat=RepeatPolicy(repeat), quick=quick,
                         wait=wait_s, hold_memory=hold_memory)
        add_report(store, rep)
        new_ids.extend(rep.run_ids)

    if workload:
        run_once()
    new_text = f"label={lbl}" if workload else target
    today = datetime.date.today().isoformat()
    new_runs: list[Run] = []

    def decide_now() -> GateResult:
        nonlocal new_runs
        new_runs = load(store, parse_selection(f"ids={','.join(map(str, new_ids))}"
                                               if workload else target))
        sides = [Side(base_text, base_runs), Side(new_text, new_runs)]
        if shared_run(sides) is not None:
            raise UserError("the baseline and the new runs share runs: gate disjoint sets")
        res = compare(sides[0], sides[1:], metrics=metric or ["all"], floor=fl,
                      compared="label")
        if not res.rows:
            raise UserError("nothing to gate: no point and metric measured on both sides")
        return decide(res, fdr=fdr, accept=accepted, today=today, fail_on=fail_on)

    result, used = confirmed(decide_now, run_once, rounds)
    notes = ([f"confirmation: a regression or an inconclusive row was suspected, so the target "
              f"ran {used} more time{'s' if used > 1 else ''} before the decision"] if used else [])
    notes += result.method_notes
    cmd = ["iowall", "gate", target] + [x for b in baseline for x in ("--baseline", b)]
    if workload:
        cmd += (["--repeat", str(repeat)] + (["--quick"] if quick else [])
                + (["--hold-memory"] if hold_memory else []))
    report = GateReport(result, base_text, new_text,
                        tuple(_explain(result, base_runs, new_runs, store, flames)),
                        (shlex.join(cmd),), tuple(notes))
    if junit is not None:
        write_text(junit, junit_xml(report))
        wrote(junit)
    emit(report, fmt, output)
    raise typer.Exit(result.exit_code)
