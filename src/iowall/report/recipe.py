"""Render a measurement's Report (``limits``, a recipe or a plan): text that fits 80 columns
and pastes into a mail to a kernel list, Markdown, or JSON. One layout for all three kinds:
title and head lines, the sections (tables and sentences), the run ids, how it was measured,
the Why section, and the compare of other labels when there is one."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from ..model import Run
from ..results import Report, Section
from .emit import Format, json_text, renders
from .run import run_json
from .table import cell_rows, fit, md_table, text_table
from .why import why_lines


def _bullets(items: tuple[str, ...] | list[str]) -> list[str]:
    return [textwrap.fill(x, width=80, initial_indent="  - ", subsequent_indent="    ") for x in items]


def _section_text(s: Section) -> list[str]:
    out = [""] + ([s.title] if s.title else [])
    legend: tuple[str, ...] = ()
    if s.table is not None:
        shown, legend = fit(s.table)
        t = text_table(shown.headers, cell_rows(shown), left=shown.left)
        out.append(t.split("\n", 1)[1] if shown.headless and "\n" in t else t)
    return out + _bullets(legend + s.bullets)


@renders(Report, Format.text)
def render_text(r: Report) -> str:
    """The report as plain text."""
    out = [r.title, *[line for h in r.head for line in textwrap.wrap(h, 80) or [""]]]
    for s in r.sections:
        out += _section_text(s)
    if r.tail:
        out += ["", *r.tail]
    if r.notes:
        out += ["", r.notes_title, *_bullets(r.notes)]
    out += why_lines(r.why)
    if r.compare is not None:  # imported here: numpy, which a run without a compare spares
        from .compare import render_text as compare_text

        out += ["", compare_text(r.compare).rstrip("\n")]
    return "\n".join(out) + "\n"


@renders(Report, Format.md)
def render_md(r: Report) -> str:
    """The report as GitHub-flavoured Markdown."""
    out = [f"# {r.title}", ""]
    if r.head:
        out += [*[f"{h}  " for h in r.head], ""]
    for s in r.sections:
        if s.title:
            out += [f"## {s.title}", ""]
        if s.table is not None:
            headers = s.table.headers if not s.table.headless else tuple("" for _ in s.table.headers)
            out += [md_table(headers, cell_rows(s.table), left=s.table.left), ""]
        if s.bullets:
            out += [*[f"- {b}" for b in s.bullets], ""]
    if r.tail:
        out += [*[f"{t}  " for t in r.tail], ""]
    if r.notes:
        out += [f"## {r.notes_title[:1].upper()}{r.notes_title[1:]}", "", *[f"- {n}" for n in r.notes]]
    out += why_lines(r.why, markdown=True)
    if r.compare is not None:
        from .compare import render_md as compare_md

        out += ["", compare_md(r.compare).rstrip("\n")]
    return "\n".join(out).rstrip("\n") + "\n"


def report_json(r: Report) -> dict[str, Any]:
    """The report as a JSON document: its parts, the JSON-only details, the compare."""
    doc = r.to_json()
    out: dict[str, Any] = {
        "kind": r.kind,
        "name": r.name,
        "title": r.title,
        "label": r.label,
        "batch": r.batch,
        "run_ids": list(r.run_ids),
        "head": doc["head"],
        "sections": doc["sections"],
        "notes": list(r.notes),
        "explain": [dict(w) for w in r.why],
        "tail": list(r.tail),
    }
    out.update({k: v for k, v in r.data.items() if k not in out})
    if r.compare is not None:
        from .compare import render_json as compare_json

        out["compare"] = compare_json(r.compare)
    return out


@renders(Report, Format.json)
def render_json(r: Report) -> str:
    return json_text(report_json(r))


@dataclass(frozen=True)
class ReportRuns:
    """A measurement's Report with its runs whole: ``iowall run --format json`` prints both,
    each run as `runs --format json` does, with the knobs in force (the other formats print
    the Report alone)."""

    report: Report
    runs: tuple[Run, ...]


@renders(ReportRuns, Format.json)
def _report_runs_json(rr: ReportRuns) -> str:
    return json_text(
        {
            **report_json(rr.report),
            "runs": [{**run_json(r), "knobs": dict(r.env.get("knobs", {}))} for r in rr.runs],
        }
    )
