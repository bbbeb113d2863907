"""`iowall gate` output: text in the shape of an LKP regression mail (subject line, base vs new
table, what else differs, why, how to reproduce), Markdown, JSON, and JUnit XML for CI (one
test case per point and metric)."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from ..analysis.regress.gate import GateReport, GateResult, Status, Verdict
from ..vocab.units import fmt_value
from .compare import row_json
from .emit import Format, json_text, renders
from .table import md_table, text_table

SCHEMA_VERSION = 1
#: Statuses shown in the table (``same`` rows are counted, not listed).
SHOWN: tuple[Status, ...] = ("regression", "inconclusive", "improvement", "accepted", "changed")
#: The text table's rows: what can fail the gate, and what was let through.
GATING: tuple[Status, ...] = ("regression", "inconclusive", "improvement", "accepted")


def _change(v: Verdict) -> str:
    return f"{(v.row.cmp.ratio - 1) * 100:+.1f}%"


def point_name(v: Verdict) -> str:
    """The point as the mail names it: its varying parameters, or its recipe when it is
    the only point."""
    t = v.row.point_text
    return str(v.row.point.get("recipe", t)) if t in ("", "-") else t


def rank(v: Verdict) -> tuple[int, float]:
    """Throughput first (the LKP subject's metric), then the largest change."""
    head = 0 if v.row.metric.endswith(("_bw_bytes_per_s", "files_per_s")) else 1
    return head, -abs(v.row.cmp.ratio - 1)


def subject(g: GateReport) -> str:
    """The mail's subject: the worst gating change, or the verdict."""
    res = g.result
    if res.compare.emulated:
        return (
            f"[iowall gate] inconclusive: EMULATED ({', '.join(res.compare.emulated)} ran in "
            "an emulated guest, whose timings are not judged)"
        )
    for status, before, after in (
        ("regression", "", " regression"),
        ("inconclusive", "inconclusive: ", " suspected, not shown"),
    ):
        vs = sorted(res.of(status), key=rank)  # type: ignore[arg-type]
        if vs:
            more = f" (+{len(vs) - 1} more)" if len(vs) > 1 else ""
            return (
                f"[iowall gate] {before}{point_name(vs[0])}: {vs[0].row.metric} {_change(vs[0])}{after}{more}"
            )
    return f"[iowall gate] pass: {len(res.verdicts)} {_what(res)}, no regression"


def _rows(g: GateReport, shown: Sequence[Status] = SHOWN) -> list[list[str]]:
    out = []
    for st in shown:
        for v in sorted(g.result.of(st), key=rank):
            c, r = v.row.cmp, v.row
            out.append(
                [
                    st,
                    point_name(v),
                    r.metric,
                    fmt_value(c.base_median, r.unit),
                    fmt_value(c.new_median, r.unit),
                    _change(v),
                    f"[{(c.ci_low - 1) * 100:+.1f}%, {(c.ci_high - 1) * 100:+.1f}%]",
                    f"{v.q_value:.2g}",
                ]
            )
    return out


def _what(res: GateResult) -> str:
    """What the rows are: point-metrics of stored runs, or series of a file."""
    return "series" if res.compare.compared == "index" else "point-metrics"


def _family(res: GateResult) -> str:
    n = sum(v.gating for v in res.verdicts)
    return "1 test" if n == 1 else f"{n} tests"


def _lines(g: GateReport, *, md: bool) -> list[str]:
    res = g.result
    counts = {st: len(res.of(st)) for st in (*SHOWN, "same")}
    out = [
        ("# " if md else "") + subject(g),
        "",
        f"base: {g.baseline}   new: {g.new}",
        f"verdict: {res.word} (exit {res.exit_code}); "
        + (", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing tested"),
        f"{len(res.verdicts)} {_what(res)} tested; false-discovery rate {res.fdr:g} "
        f"(Benjamini-Hochberg over the {_family(res)} that can fail the gate), floor "
        f"{res.floor:.0%}",
        res.unit,
        "",
    ]
    headers = ["", "point", "metric", "base", "new", "change", "95% interval", "q"]
    rows = _rows(g, SHOWN if md else GATING)
    if rows:
        out += [md_table(headers, rows, left=3) if md else text_table(headers, rows, left=3), ""]
    unsure = sorted(res.of("inconclusive"), key=rank)
    for v in unsure:  # what it would take to decide is in the reason
        out += textwrap.wrap(
            f"inconclusive: {point_name(v)} {v.row.metric}: {v.reason}", 80, subsequent_indent="  "
        )
    out += [""] if unsure else []
    changed = sorted(res.of("changed"), key=lambda v: v.q_value)
    if changed and not md:
        top = ", ".join(f"{v.row.metric} {_change(v)}" for v in changed[:5])
        out += textwrap.wrap(
            f"{len(changed)} other metrics changed (not gating; --format md "
            f"or json lists them): {top}" + (", …" if len(changed) > 5 else ""),
            80,
            subsequent_indent="  ",
        ) + [""]
    diffs = res.compare.differences
    if diffs:
        out.append(("## " if md else "") + "What else differs")
        out += [f"  {d.field}: {' | '.join(d.values)}" for d in diffs] + [""]
    for e in g.explanations:
        out.append(("## " if md else "") + f"Why: {e.point}: {e.metric}")
        out.append(f"  base (run {e.base_run}):")
        out += [f"    - {s}" for s in e.why_base] or ["    - no rule fired"]
        out.append(f"  new (run {e.new_run}):")
        out += [f"    - {s}" for s in e.why_new] or ["    - no rule fired"]
        if e.shifts:
            out.append("  where the CPU time went instead (share of busy CPU, base → new):")
            out += [
                f"    - {s.metric}: {s.base:.0%} → {s.new:.0%} ({s.delta * 100:+.0f} points)"
                for s in e.shifts
            ]
        out += [f"  differential flame graph: {e.flame}", ""]
    if g.reproduce:
        out.append(("## " if md else "") + "Reproduce")
        out += ["    " + c for c in g.reproduce] + [""]
    out += [f"note: {n}" for n in g.notes]
    return out


@renders(GateReport, Format.text)
def render_text(g: GateReport) -> str:
    return "\n".join(_lines(g, md=False)).rstrip() + "\n"


@renders(GateReport, Format.md)
def render_md(g: GateReport) -> str:
    return "\n".join(_lines(g, md=True)).rstrip() + "\n"


def gate_json(g: GateReport) -> dict[str, Any]:
    res = g.result
    return {
        "schema_version": SCHEMA_VERSION,
        "verdict": res.word,
        "exit": res.exit_code,
        "subject": subject(g),
        "baseline": g.baseline,
        "new": g.new,
        "fdr": res.fdr,
        "floor": res.floor,
        "rows": [
            {
                **row_json(v.row),
                "status": v.status,
                "p_value": v.p_value,
                "q_value": v.q_value,
                "gating": v.gating,
                "reason": v.reason,
                "invocations": {"base": v.invocations[0], "new": v.invocations[1]},
            }
            for v in res.verdicts
        ],
        "differences": [{"field": d.field, "values": list(d.values)} for d in res.compare.differences],
        "explanations": [
            {
                "point": e.point,
                "metric": e.metric,
                "base_run": e.base_run,
                "new_run": e.new_run,
                "why_base": list(e.why_base),
                "why_new": list(e.why_new),
                "shifts": [{"metric": s.metric, "base": s.base, "new": s.new} for s in e.shifts],
                "flame": e.flame,
            }
            for e in g.explanations
        ],
        "reproduce": list(g.reproduce),
        "notes": list(g.notes),
    }


@renders(GateReport, Format.json)
def render_json(g: GateReport) -> str:
    return json_text(gate_json(g))


def junit_xml(g: GateReport) -> str:
    """JUnit XML: one test case per point and metric (class = point, name = metric); a
    regression is a failure, an inconclusive one is skipped with its reason."""
    res = g.result
    suite = ET.Element(
        "testsuite",
        name="iowall gate",
        tests=str(len(res.verdicts)),
        failures=str(len(res.of("regression"))),
        errors="0",
        skipped=str(len(res.of("inconclusive"))),
    )
    for v in res.verdicts:
        c = v.row.cmp
        case = ET.SubElement(suite, "testcase", classname=point_name(v), name=v.row.metric, time="0")
        detail = (
            f"{v.row.metric} {_change(v)}: base {fmt_value(c.base_median, v.row.unit)} "
            f"(n={c.n_base}), new {fmt_value(c.new_median, v.row.unit)} (n={c.n_new}), "
            f"95% interval [{(c.ci_low - 1) * 100:+.1f}%, {(c.ci_high - 1) * 100:+.1f}%], "
            f"q={v.q_value:.2g}"
        )
        if v.status == "regression":
            ET.SubElement(
                case, "failure", message=f"regression {_change(v)}", type="regression"
            ).text = detail
        elif v.status == "inconclusive":
            ET.SubElement(case, "skipped", message=f"inconclusive: {v.reason}")
        else:
            ET.SubElement(case, "system-out").text = f"{v.status}: {detail}"
    root = ET.Element(
        "testsuites", name="iowall", tests=suite.get("tests", "0"), failures=suite.get("failures", "0")
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
