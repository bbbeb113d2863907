"""`iowall bisect` output: the first bad candidate, each step's evidence (medians, change and
interval, verdict), and what moved between the last good and the first bad (their
wall-clock budgets side by side, the state that grew most, the differential flame graph).
Text, Markdown, JSON, and a mail in the shape of an LKP regression report."""

from __future__ import annotations

import textwrap

from ..analysis.regress.bisect import BisectReport, Candidate, Moved, Step, summary_line
from ..vocab.units import fmt_value
from .budget import state_title
from .emit import Format, json_text, renders
from .table import md_table, text_table

HEADERS = ["step", "candidate", "rounds", "good", "candidate", "change [95% interval]", "verdict"]


def _name(r: BisectReport, c: Candidate) -> str:
    """A candidate as the report names it: its label, its number and its commit."""
    i = r.candidates.index(c)
    where = f"candidate {i + 1} of {len(r.candidates)}" if r.mode == "candidates" else "commit"
    return f"{c.label} ({where}{': ' + c.commit if c.commit else ''})"


def _value(x: float | None, unit: str) -> str:
    return "-" if x is None else fmt_value(x, unit)


def _change(s: Step) -> str:
    if s.ratio is None:
        return "-"
    text = f"{(s.ratio - 1) * 100:+.1f}%"
    if s.ci is not None:
        text += f" [{(s.ci[0] - 1) * 100:+.1f}%, {(s.ci[1] - 1) * 100:+.1f}%]"
    return text


def step_rows(r: BisectReport) -> list[list[str]]:
    return [
        [
            str(s.step),
            f"{s.index + 1}: {s.label}" if r.mode == "candidates" else s.label,
            str(s.rounds),
            _value(s.base_median, s.unit),
            _value(s.new_median, s.unit),
            _change(s),
            s.mark,
        ]
        for s in r.steps
    ]


def _ends(r: BisectReport) -> list[str]:
    o = r.outcome
    out = [f"last good: {_name(r, r.candidates[o.last_good])}"]
    if o.kind == "culprit" and o.first_bad is not None:
        c = r.candidates[o.first_bad]
        out.append(f"first bad: {_name(r, c)}" + (f"; {c.spec}" if c.spec else ""))
    elif o.kind == "range":
        out += [f"may be the first bad: {_name(r, r.candidates[i])}" for i in o.candidates]
    return out


def _moved_lines(r: BisectReport, m: Moved, *, md: bool) -> list[str]:
    o = r.outcome
    good, bad = r.candidates[o.last_good].label, r.candidates[o.first_bad or 0].label
    out = [
        ("## " if md else "") + f"What moved between {good} (run {m.good_run}) and {bad} (run {m.bad_run})",
        "",
    ]
    if m.states:
        rows = [
            [
                state_title(c),
                f"{gs:.2f}",
                f"{gsh:.1%}",
                f"{bs:.2f}",
                f"{bsh:.1%}",
                f"{(bsh - gsh) * 100:+.1f}",
            ]
            for c, gs, gsh, bs, bsh in m.states
            if gs > 0 or bs > 0
        ]
        headers = [
            "where the wall-clock time went",
            "good s",
            "share",
            "bad s",
            "share",
            "moved (pts)",
        ]
        out += [md_table(headers, rows) if md else text_table(headers, rows), ""]
        if m.grew:
            g = next(s for s in m.states if s[0] == m.grew)
            out.append(f"grew most: {state_title(m.grew)}, {g[2]:.1%} -> {g[4]:.1%} of the wall-clock time")
            out.append("")
    if m.costs:
        rows = [
            [COST_TITLES[f][0], f"{a:.2f} {COST_TITLES[f][1]}", f"{b:.2f} {COST_TITLES[f][1]}", _times(a, b)]
            for f, a, b in m.costs
        ]
        headers = ["cost of each I/O (the workload's CPU)", "good", "bad", "bad/good"]
        out += [md_table(headers, rows) if md else text_table(headers, rows), ""]
    return out + _prose([x for x in (m.short, m.why_not, m.flame) if x], md=md) + [""]


#: The cost fields' titles and units, as `iowall explain` says them.
COST_TITLES = {
    "cpu_us_per_call": ("per read/write call", "us"),
    "cpu_ms_per_mib": ("per MiB", "ms"),
    "cpu_us_per_io": ("per I/O (fio's count)", "us"),
}


def _times(good: float, bad: float) -> str:
    return f"x{bad / good:.2f}" if good > 0 else "-"


def _prose(lines: list[str], *, md: bool) -> list[str]:
    """Sentences as Markdown bullets, or wrapped at 80 columns for a mail."""
    if md:
        return [f"- {x}" for x in lines]
    return [w for x in lines for w in textwrap.wrap(x, 80, subsequent_indent="  ", break_on_hyphens=False)]


def _lines(r: BisectReport, *, md: bool) -> list[str]:
    out = [
        ("# " if md else "") + f"iowall bisect: {summary_line(r)}",
        "",
        *_prose([f"target: {r.target}; bisection {r.id}; {len(r.steps)} steps", *r.head], md=md),
        "",
        *_prose(_ends(r), md=md),
        "",
    ]
    if r.steps:
        rows = step_rows(r)
        out += ["## Steps", ""] if md else ["Steps"]
        out += [md_table(HEADERS, rows, left=2) if md else text_table(HEADERS, rows, left=2), ""]
        metric = next((s.metric for s in r.steps if s.metric), "")
        if metric:
            out.append(f"good, candidate: medians of {metric}; change: the candidate against the good")
        out += _prose([f"step {s.step}: {s.why}" for s in r.steps if s.why], md=md)
        out.append("")
    if r.moved is not None:
        out += _moved_lines(r, r.moved, md=md)
    return out + _prose([f"note: {n}" for n in r.notes], md=md)


@renders(BisectReport, Format.text)
def render_text(r: BisectReport) -> str:
    return "\n".join(_lines(r, md=False)).rstrip() + "\n"


@renders(BisectReport, Format.md)
def render_md(r: BisectReport) -> str:
    return "\n".join(_lines(r, md=True)).rstrip() + "\n"


@renders(BisectReport, Format.json)
def render_json(r: BisectReport) -> str:
    return json_text(r.to_json())


@renders(BisectReport, Format.mail)
def render_mail(r: BisectReport) -> str:
    """An LKP-style mail: a subject naming the first bad and the change it brought, the
    commit or kernel, the evidence, what moved, and how to reproduce."""
    o = r.outcome
    subject = f"[iowall bisect] {summary_line(r)}"
    bad = next((s for s in r.steps if s.index == o.first_bad), None)
    if o.kind == "culprit" and bad is not None and bad.ratio is not None:
        subject += f": {bad.metric} {(bad.ratio - 1) * 100:+.1f}%"
    body = [f"Subject: {subject}", "", "Hello,", ""]
    if o.kind == "culprit" and bad is not None:
        c = r.candidates[o.first_bad or 0]
        body += textwrap.wrap(
            f"iowall bisect found a {_change(bad)} change of {bad.metric} (medians "
            f"{_value(bad.base_median, bad.unit)} good, {_value(bad.new_median, bad.unit)} bad) due to:",
            80,
        )
        body += [
            "",
            f"  {'commit: ' + c.commit if c.commit else 'kernel: ' + (c.spec or c.label)}",
            "",
        ]
    else:
        body += [summary_line(r) + ".", ""]
    body += [f"in target {r.target}", ""] + _lines(r, md=False)[2:]
    body += ["To reproduce: run the same `iowall bisect` command again; it prints this from the store."]
    return "\n".join(body).rstrip() + "\n"
