"""Rendering of a limits summary: text (fits 80 columns, pastes into a mail), Markdown, JSON."""

from __future__ import annotations

import textwrap
from typing import Any

from ..analysis.limits import Cell, LimitsSummary, Row
from ..units import fmt_bytes, fmt_rate
from .table import md_table, text_table

SCHEMA_VERSION = 1


def _cell(c: Cell | None) -> str:
    if c is None:
        return "-"
    return f"{fmt_rate(c.median)} ±{c.spread:.0%}" if c.n > 1 else fmt_rate(c.median)


def _ratio(x: float | None) -> str:
    return f"{x:.2f}" if x is not None else "-"


def _rows(s: LimitsSummary, direction: str) -> list[list[str]]:
    return [[str(r.jobs), _cell(r.buffered), _cell(r.direct), _ratio(r.buffered_over_direct),
             _ratio(r.buffered_over_memcopy)] for r in s.rows if r.direction == direction]


HEADERS = ["jobs", "buffered", "direct", "buf/direct", "buf/memcopy"]
TITLES = {"write": "Sequential write", "read": "Sequential read"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _bullet(text: str) -> str:
    """A list item wrapped to 80 columns."""
    return textwrap.fill(text, width=80, initial_indent="  - ", subsequent_indent="    ")


def _ceiling_rows(s: LimitsSummary) -> list[list[str]]:
    rows = [[f"memory copy, {_plural(t, 'thread')}", fmt_rate(c.median),
             "best of rep movsb and memcpy" if i == 0 else ""]
            for i, (t, c) in enumerate(sorted(s.memcopy.items()))]
    rows += [[f"direct {d} ({_plural(c.at, 'job')})", fmt_rate(c.cell.median),
              "best direct point" if i == 0 else ""]
             for i, (d, c) in enumerate(s.direct_ceiling.items())]
    return rows or [["not measured", "", ""]]


def header_lines(ctx: dict[str, Any]) -> list[str]:
    """Where and how: bed, kernel, host, what was scaled."""
    bed = ctx["bed"]
    dev = f" on {bed.get('device')}" if bed.get("device") else ""
    img = f", {fmt_bytes(bed['image_bytes'])} image ({bed.get('backing')})" if bed.get("image_bytes") else ""
    host = ctx["host"]
    return [
        f"iowall limits — bed {bed.get('kind')}: {bed.get('fs')}{dev}{img}",
        f"kernel {ctx['kernel']}, {host['cpu_count']} CPUs ({host['cpu_model']}), "
        f"{fmt_bytes(host['mem_total_bytes'])} RAM, fio {ctx['fio_version']}",
    ]


def render_text(s: LimitsSummary, ctx: dict[str, Any]) -> str:
    """The report a kernel developer pastes into a mail."""
    out = header_lines(ctx) + [""]
    out.append("Ceilings")
    out.append(text_table(["", "", ""], _ceiling_rows(s), left=3).split("\n", 1)[1])
    n = max((r.buffered.n for r in s.rows if r.buffered), default=0)
    for d in ("write", "read"):
        rows = _rows(s, d)
        if rows:
            out += ["", f"{TITLES[d]}, bs 2M, io_uring (median of {n}, ± half-range)",
                    text_table(HEADERS, rows, left=0)]
    out += ["", "Where the wall is"] + [_bullet(x) for x in s.sentences]
    for w in ctx.get("why", []):
        out += ["", f"Why: buffered {w['direction']} at {w['jobs']} jobs (run {w['run']}, "
                f"'iowall explain {w['run']}')"] + [_bullet(x) for x in w["sentences"]]
        skipped = ", ".join(sk["probe"] for sk in w.get("skipped_probes", []))
        if skipped:
            out.append(_bullet(f"probes skipped: {skipped} ('iowall show {w['run']}' says why)"))
    if ctx.get("notes"):
        out += ["", "How it was measured"] + [_bullet(x) for x in ctx["notes"]]
    ids = s.run_ids
    out += ["", f"runs {ids[0]}–{ids[-1]} (batch {ctx['batch']}); "
            f"'iowall show RUN' for raw data" if ids else "no runs stored"]
    return "\n".join(out) + "\n"


def render_md(s: LimitsSummary, ctx: dict[str, Any]) -> str:
    """The same report in Markdown."""
    h = header_lines(ctx)
    out = [f"# {h[0]}", "", h[1], "", "## Ceilings", ""]
    out.append(md_table(["ceiling", "value", "how"], _ceiling_rows(s)))
    for d in ("write", "read"):
        rows = _rows(s, d)
        if rows:
            out += ["", f"## {TITLES[d]}, bs 2M, io_uring", "", md_table(HEADERS, rows)]
    out += ["", "## Where the wall is", ""] + [f"- {x}" for x in s.sentences]
    for w in ctx.get("why", []):
        out += ["", f"## Why: buffered {w['direction']} at {w['jobs']} jobs (run {w['run']})",
                ""] + [f"- {x}" for x in w["sentences"]]
    if ctx.get("notes"):
        out += ["", "## How it was measured", ""] + [f"- {x}" for x in ctx["notes"]]
    out += ["", f"Runs: {', '.join(map(str, s.run_ids))}"]
    return "\n".join(out) + "\n"


def _cell_json(c: Cell | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {"median": c.median, "spread": c.spread, "n": c.n, "run_ids": list(c.run_ids)}


def _row_json(r: Row) -> dict[str, Any]:
    return {
        "direction": r.direction, "jobs": r.jobs,
        "buffered_bytes_per_s": r.buffered.median if r.buffered else None,
        "direct_bytes_per_s": r.direct.median if r.direct else None,
        "buffered_over_direct": r.buffered_over_direct,
        "buffered_over_memcopy": r.buffered_over_memcopy,
        "memcopy_threads": r.memcopy_threads,
        "buffered": _cell_json(r.buffered), "direct": _cell_json(r.direct),
    }


def render_json(s: LimitsSummary, ctx: dict[str, Any]) -> dict[str, Any]:
    """Machine-readable: ceilings, one record per point, the sentences and the run ids."""
    return {
        "schema_version": SCHEMA_VERSION,
        "batch": ctx["batch"],
        "bed": ctx["bed"],
        "kernel": ctx["kernel"],
        "host": ctx["host"],
        "ceilings": {
            "memcopy_bytes_per_s": {str(t): c.median for t, c in sorted(s.memcopy.items())},
            **{f"direct_{d}_bytes_per_s": c.cell.median for d, c in s.direct_ceiling.items()},
            **{f"direct_{d}_jobs": c.at for d, c in s.direct_ceiling.items()},
        },
        "points": [_row_json(r) for r in s.rows],
        "sentences": list(s.sentences),
        "explain": list(ctx.get("why", [])),
        "notes": list(ctx.get("notes", [])),
        "statuses": s.statuses,
        "run_ids": list(s.run_ids),
    }
