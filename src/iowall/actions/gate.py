"""The regression gate's work for `iowall gate`: run the target (and re-run it to confirm a
suspected regression) or load stored runs, decide (``analysis.regress.gate``), and explain each
regression; or gate the newest results of another system's series file
(``analysis.regress.series_gate``). Returns a GateReport; the face renders it and exits by it."""

from __future__ import annotations

import datetime
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..analysis.explain.context import representative
from ..analysis.explain.run import explain
from ..analysis.regress.compare import Side, compare, shared_run
from ..analysis.regress.gate import (
    Accept,
    Explanation,
    GateReport,
    GateResult,
    attribution_shift,
    decide,
)
from ..analysis.regress.gate import (
    confirm as confirmed,
)
from ..analysis.regress.history import from_rows, results
from ..analysis.regress.machine_busier import machine_busier
from ..analysis.regress.series_gate import FDR_SERIES, gate_series
from ..measure.repeat import RepeatPolicy
from ..model import Run
from ..recipes.registry import recipes
from ..report.flame import write_svg
from ..report.gate import point_name, rank
from ..report.kcidb import gate_doc
from ..store import RunFilter, Store
from ..store.reports import add_report
from ..vocab.errors import UserError
from .flame import flame_svg
from .selection import load, parse_selection
from .series import check_series_options, read_series
from .target import ProgressOf, is_plan_path, run_target

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
            raise UserError(
                f"--accept {path}: entry {i} needs point and metric (and optionally direction, until, reason)"
            )
        d = str(a.get("direction", "worse"))
        if d not in ("worse", "better"):
            raise UserError(f"--accept {path}: entry {i}: direction is worse or better")
        until = str(a.get("until", ""))
        if until:
            try:
                datetime.date.fromisoformat(until)
            except ValueError:
                raise UserError(
                    f"--accept {path}: entry {i}: until {until!r} is not a date (YYYY-MM-DD)"
                ) from None
        out.append(Accept(str(a["point"]), str(a["metric"]), d, until, str(a.get("reason", ""))))
    return out


def is_workload(target: str) -> bool:
    if is_plan_path(target):
        return True
    return target in {r.name for r in recipes()}


def explain_regressions(
    res: GateResult, base: list[Run], new: list[Run], store: Store | None, flames: str | None
) -> list[Explanation]:
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
        wb, wn = explain(rb, b_runs), explain(rn, n_runs)
        flame = f"iowall plot flame {rb.id} {rn.id} -o diff.svg"
        if flames is not None and store is not None:
            path = os.path.join(flames, f"gate-{rb.id}-{rn.id}.svg")
            try:
                os.makedirs(flames, exist_ok=True)
                write_svg(flame_svg(store, [str(rb.id), str(rn.id)]), path)
                flame = path
            except UserError as e:
                flame = f"not drawn ({e}); {flame}"
        same = next((i for i, e in enumerate(out) if (e.base_run, e.new_run) == (rb.id, rn.id)), None)
        if same is not None:  # the same median runs: one explanation, its metrics listed
            out[same] = replace(out[same], metric=f"{out[same].metric}, {v.row.metric}")
            continue
        out.append(
            Explanation(
                point_name(v),
                v.row.metric,
                rb.id,
                rn.id,
                wb.sentences,
                wn.sentences,
                tuple(attribution_shift(b_runs, n_runs)),
                flame,
            )
        )
    return out


def gate_file(
    path: str,
    *,
    fdr: float | None,
    floor: float,
    direction: str,
    unit: str,
    accepted: list[Accept],
    decided: Sequence[str] = (),
) -> GateReport:
    """``gate --series FILE``: the newest result of every series of the file against its own
    history (``analysis.regress.series_gate``); ``decided``: the options that decided it, as
    given, for the Reproduce line."""
    check_series_options(direction, None)
    hs = from_rows(read_series(path), direction=direction, unit=unit)
    level = FDR_SERIES if fdr is None else fdr
    result, tested = gate_series(
        [results(h) for h in hs],
        fdr=level,
        floor=floor,
        accept=accepted,
        today=datetime.date.today().isoformat(),
        source=path,
    )
    notes = [
        f"{t.name}: newest {', '.join(t.window)} against {t.n_base} results from {t.base_from}"
        for t in tested
        if t.early.window is not None
    ]
    notes += [f"{t.name}: not tested: {t.early.reason}" for t in tested if t.early.window is None]
    cmd = (
        ["iowall", "gate", "--series", path]
        + list(decided)
        + (["--direction", direction] if direction != "higher" else [])
        + (["--unit", unit] if unit else [])
    )
    return GateReport(
        result,
        f"{path}: each series' history",
        f"{path}: its newest results",
        (),
        (shlex.join(cmd),),
        tuple(notes),
    )


def gate_runs(
    store: Store,
    target: str,
    baseline: Sequence[str],
    progress: ProgressOf,
    *,
    label: str | None,
    repeat: int,
    confirm: int | None,
    quick: bool,
    fdr: float,
    floor: float,
    metric: list[str] | None,
    fail_on: list[str] | None,
    accepted: list[Accept],
    flames: str | None,
    wait: float | None,
    hold_memory: bool,
    decided: Sequence[str] = (),
) -> GateReport:
    """TARGET (a recipe or plan, run now with ``repeat`` runs of every point and re-run up to
    ``confirm`` more times while a regression is suspected; or a selection of stored runs)
    against the stored ``baseline`` runs; ``decided``: the options that decided it, as given,
    for the Reproduce line."""
    base_runs = list({r.id: r for b in baseline for r in load(store, parse_selection(b))}.values())
    base_text = " + ".join(baseline)
    workload = is_workload(target)
    rounds = _confirm_rounds(confirm, workload)
    lbl = label or f"gate-{datetime.datetime.now():%Y%m%d-%H%M%S}"
    new_ids: list[int] = []
    memory: list[str] = []  # each run's line on guest memory (held again by every run)

    def run_once() -> None:  # the first run and every confirmation: the same --repeat
        rep = run_target(
            target,
            store,
            progress,
            label=lbl,
            repeat=RepeatPolicy(repeat),
            quick=quick,
            wait=wait,
            hold_memory=hold_memory,
        )
        add_report(store, rep)
        new_ids.extend(rep.run_ids)
        said = rep.data.get("guest_memory")
        if said and said not in memory:
            memory.append(str(said))

    if workload:
        run_once()
    new_text = f"label={lbl}" if workload else target
    today = datetime.date.today().isoformat()
    new_runs: list[Run] = []

    def decide_now() -> GateResult:
        nonlocal new_runs
        new_runs = load(store, parse_selection(f"ids={','.join(map(str, new_ids))}" if workload else target))
        sides = [Side(base_text, base_runs), Side(new_text, new_runs)]
        return _verdict(
            sides, metric=metric, floor=floor, fdr=fdr, accepted=accepted, today=today, fail_on=fail_on
        )

    result, used = confirmed(decide_now, run_once, rounds)
    notes = _confirmation_notes(used) + memory + result.method_notes
    cmd = _command(target, baseline, workload, repeat=repeat, quick=quick, hold_memory=hold_memory)
    cmd += decided
    return GateReport(
        result,
        base_text,
        new_text,
        tuple(explain_regressions(result, base_runs, new_runs, store, flames)),
        (shlex.join(cmd),),
        tuple(notes),
    )


def _confirm_rounds(confirm: int | None, workload: bool) -> int:
    """How many times a suspected regression may be re-run: ``confirm``, else 2 for a workload
    and 0 for stored runs (which cannot be re-run: asking for it is an error)."""
    rounds = confirm if confirm is not None else (2 if workload else 0)
    if rounds and not workload:
        raise UserError("--confirm re-runs the workload: give a recipe or plan as TARGET")
    return rounds


def _verdict(
    sides: list[Side],
    *,
    metric: list[str] | None,
    floor: float,
    fdr: float,
    accepted: list[Accept],
    today: str,
    fail_on: list[str] | None,
) -> GateResult:
    """The gate's verdict on the new side against the base: ``compare`` (Hodges-Lehmann ratios),
    then ``decide`` (Welch's t-test, Benjamini-Hochberg at ``fdr``); the sides must be disjoint."""
    if shared_run(sides) is not None:
        raise UserError("the baseline and the new runs share runs: gate disjoint sets")
    res = compare(
        sides[0], sides[1:], metrics=metric or ["all"], floor=floor, compared="label", by_invocation=False
    )
    if not res.rows:
        raise UserError("nothing to gate: no point and metric measured on both sides")
    gated = decide(res, fdr=fdr, accept=accepted, today=today, fail_on=fail_on)
    return machine_busier(gated, sides[0].runs, [r for s in sides[1:] for r in s.runs])


def _confirmation_notes(used: int) -> list[str]:
    """The report's note on the confirmation runs, when any were needed."""
    return (
        [
            f"confirmation: a regression or an inconclusive row was suspected, so the target "
            f"ran {used} more time{'s' if used > 1 else ''} before the decision"
        ]
        if used
        else []
    )


def _command(
    target: str, baseline: Sequence[str], workload: bool, *, repeat: int, quick: bool, hold_memory: bool
) -> list[str]:
    """The ``iowall gate`` command that repeats this gate (the options that change a run, for a
    workload), for the report."""
    cmd = ["iowall", "gate", target] + [x for b in baseline for x in ("--baseline", b)]
    if workload:
        cmd += (
            ["--repeat", str(repeat)]
            + (["--quick"] if quick else [])
            + ([] if hold_memory else ["--no-hold-memory"])
        )
    return cmd


def gate_kcidb(report: GateReport, store: Store) -> dict[str, Any]:
    """The KCIDB v5.3 document of a gate (``report.kcidb.gate_doc``): a test per gated point
    and metric, its status the verdict, the Why of each regression in its ``misc``."""

    def fetch(ids: set[int]) -> list[Run]:
        return store.runs(RunFilter(ids=tuple(sorted(ids))), metrics=lambda _: False) if ids else []

    new = fetch({i for v in report.result.verdicts for i in v.row.new_runs})
    base = fetch({i for v in report.result.verdicts if v.status == "regression" for i in v.row.base_runs})
    why = {e.point: e.why_new for e in report.explanations}
    return gate_doc(report.result, new, why, base)
