"""A compare result as text (80 columns, for a mail to a kernel list), Markdown, CSV, JSON
and a self-contained HTML page with the ratio plot inline."""

from __future__ import annotations

import csv
import html
import io
import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.regress.compare import SCHEMA_VERSION, CompareResult, Row
from ..vocab.units import fmt_metric as fmt_value
from ..vocab.units import json_number
from .emit import Format, json_text, renders
from .plots import CompareBar, compare_figure, to_svg
from .table import md_table, text_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH = 80

_SHORT = {
    "_bw_bytes_per_s": " bw",
    "_clat_p99_s": " p99",
    "_clat_p50_s": " p50",
    "_files_per_s": "/s",
    "_wall_s": " time",
    "_iops": " iops",
}


def short_metric(name: str) -> str:
    """``write_bw_bytes_per_s`` → ``write bw``: the names a table has room for."""
    if name == "memcopy_bytes_per_s":
        return "memcopy"
    if name == "files_per_s":
        return "files/s"
    for suffix, short in _SHORT.items():
        if name.endswith(suffix):
            return name[: -len(suffix)].replace("_", " ") + short
    return name


def _pct(ratio: float) -> str:
    if not math.isfinite(ratio) or ratio <= 0:
        return "n/a"
    return f"{(ratio - 1) * 100:+.1f}%"


def interval(row: Row) -> tuple[float, float] | None:
    """The interval of new/base, or None when it is unbounded (one run on a side gives
    (0, inf)): JSON writes null for it, the text n/a, the figure no whisker."""
    lo, hi = row.cmp.ci_low, row.cmp.ci_high
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0:
        return None
    return lo, hi


def fmt_ci(row: Row) -> str:
    """The interval of the change in percent, ``[-13.0,-8.7]``; n/a with one run a side."""
    ci = interval(row)
    if ci is None:
        return "n/a"
    return f"[{(ci[0] - 1) * 100:+.1f},{(ci[1] - 1) * 100:+.1f}]"


def fmt_n(row: Row, *, short: bool = False) -> str:
    """Runs base:new, and the invocations they came in where the row was judged by invocation
    (``10:10 in 2:2``); ``short``, for the 80-column text: the invocations alone (``2:2 inv``)."""
    k = row.cmp.invocations
    if k and short:
        return f"{k[0]}:{k[1]} inv"
    return f"{row.cmp.n_base}:{row.cmp.n_new}" + (f" in {k[0]}:{k[1]}" if k else "")


def mark(row: Row) -> str:
    """``better``/``worse`` when significant, else empty."""
    if not row.cmp.significant:
        return ""
    return "better" if row.cmp.better else "worse"


def _sides(res: CompareResult) -> str:
    return f"{res.base} vs {', '.join(res.news)}"


def _wrap(text: str, indent: str = "", more: str = "  ") -> list[str]:
    """``text`` in lines of at most WIDTH columns; long words (paths) are broken too."""
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent, subsequent_indent=indent + more, break_on_hyphens=False
    ) or [indent.rstrip()]


def _differences_text(res: CompareResult) -> list[str]:
    """The facts that differ: a table when it fits in WIDTH, else one block per fact."""
    rows = [[d.field, *d.values] for d in res.differences]
    table = text_table(["", res.base, *res.news], rows, left=len(rows[0]))
    if max(len(line) for line in table.splitlines()) <= WIDTH:
        return table.splitlines()
    out = []
    for d in res.differences:
        out.append(f"  {d.field}")
        for name, v in zip([res.base, *res.news], d.values, strict=True):
            out += _wrap(f"{name}: {v}", "    ", "    ")
    return out


def emulated_line(res: CompareResult) -> str:
    """The first line of every rendering when a side ran in an emulated guest, else ""."""
    if not res.emulated:
        return ""
    return (
        f"EMULATED: {', '.join(res.emulated)} ran without KVM (software emulation); "
        "these timings say nothing about the kernels"
    )


def _title(res: CompareResult) -> str:
    return f"iowall compare: {_sides(res)} (by {res.compared})"


def _header(res: CompareResult, *, markdown: bool = False) -> list[str]:
    title = _title(res)
    out = [title] if markdown else _wrap(title)
    if res.emulated:
        out = [f"**{emulated_line(res)}**", "", *out] if markdown else [*_wrap(emulated_line(res)), *out]
    if res.differences:
        out.append("")
        out.append(f"Differences besides {res.compared}:")
        if markdown:
            rows = [[d.field, *d.values] for d in res.differences]
            out += ["", md_table(["fact", res.base, *res.news], rows)]
        else:
            out += _differences_text(res)
    else:
        out += ["", f"Nothing differs besides {res.compared} (environment, sysctls, knobs, bed)."]
    if res.common:
        common = " ".join(f"{k}={v}" for k, v in res.common.items())
        if markdown:
            out += ["", f"Common to every point: `{common}`"]
        else:
            out += [""] + _wrap("Common to every point: " + common)
    return out


def _footer(res: CompareResult, *, markdown: bool = False, short_n: bool = True) -> list[str]:
    """Geometric means, what was not compared, the legend and the notes; ``short_n`` is how
    the table's n cells show invocations (``fmt_n``), which the legend must name alike."""
    out: list[str] = []
    n_form = "invocations, '2:2 inv'" if short_n else "runs in invocations, '10:10 in 2:2'"
    gm = [(lab, m, v) for lab in res.news for m, v in res.geomean.get(lab, {}).items()]
    if gm:
        out += ["", "Geometric mean of new/base over points:"]
        for lab, m, v in gm:
            n = sum(1 for r in res.rows if r.label == lab and r.metric == m)
            who = f"{lab}: " if len(res.news) > 1 else ""
            line = f"{who}{short_metric(m)} {v:.3f} ({_pct(v)}, {n} point{'s' if n != 1 else ''})"
            out += [f"- {line}"] if markdown else _wrap(line, "  ")
    if res.unpaired:
        out += ["", "Not compared:"]
        for u in res.unpaired:
            line = f"{u.side}: {u.point_text}: {u.reason}"
            out += [f"- {line}"] if markdown else _wrap(line, "  ")
    conf = f"{res.confidence * 100:.0f}%"
    by_inv = any(r.cmp.invocations for r in res.rows)
    legend = (
        f"change: Hodges-Lehmann estimate of new/base (median of all pairwise ratios) "
        f"minus 1; {conf} CI: calibrated, per-side spread"
        + (
            "; rows judged by invocation (note below): change the ratio of the sides' geometric "
            "means of invocation means, CI Welch's t"
            if by_inv
            else ""
        )
        + f"; marked better/worse only when the interval excludes 0 and |change| > "
        f"{res.floor * 100:g}%; n: runs base:new"
        + (f" ({n_form}, where judged by invocation)" if by_inv else "")
        + "; base/new: medians."
    )
    out += [""] + (["_" + legend + "_"] if markdown else textwrap.wrap(legend, WIDTH))
    for note in res.notes:
        out += [f"- {note}"] if markdown else textwrap.wrap("note: " + note, WIDTH, subsequent_indent="  ")
    return out


def _two_side_rows(rows: Sequence[Row]) -> list[list[str]]:
    return [
        [
            short_metric(r.metric),
            fmt_value(r.cmp.base_median, r.unit),
            fmt_value(r.cmp.new_median, r.unit),
            _pct(r.cmp.ratio),
            fmt_ci(r),
            fmt_n(r, short=True),
            mark(r),
        ]
        for r in rows
    ]


_TWO_HEAD = ["metric", "base", "new", "change", "95% CI", "n", ""]


def _multi(res: CompareResult, *, short: bool = False) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """One column per new label against the base: ``-10.9% W`` (W worse, B better); with
    ``short``, the columns are headed base, new1, new2 … (for labels too long for WIDTH)."""
    cells: dict[tuple[str, str], dict[str, Row]] = {}
    order: list[tuple[str, str]] = []
    for r in res.rows:
        k = (r.point_text, r.metric)
        if k not in cells:
            order.append(k)
        cells.setdefault(k, {})[r.label] = r
    out = []
    for k in order:
        first = next(iter(cells[k].values()))
        row = [short_metric(first.metric), fmt_value(first.cmp.base_median, first.unit)]
        for lab in res.news:
            c = cells[k].get(lab)
            row.append(
                "-"
                if c is None
                else (_pct(c.cmp.ratio) + (" " + ("B" if c.cmp.better else "W") if c.cmp.significant else ""))
            )
        out.append((k[0], row))
    if short:
        return ["metric", "[base]", *[f"[new{i}]" for i in range(1, len(res.news) + 1)]], out
    return ["metric", f"[{res.base}]", *[f"[{lab}]" for lab in res.news]], out


def _multi_text(res: CompareResult) -> list[str]:
    """The multi-side table; its columns renamed, with a key above, when it is too wide."""
    lines = _layout(*_multi(res))
    if max(len(line) for line in lines) <= WIDTH:
        return lines
    key = [f"base: {res.base}"] + [f"new{i}: {lab}" for i, lab in enumerate(res.news, 1)]
    return [x for k in key for x in _wrap(k, "  ", "    ")] + [""] + _layout(*_multi(res, short=True))


@renders(CompareResult, Format.text)
def render_text(res: CompareResult) -> str:
    """The table a reviewer pastes into a mail: fits in 80 columns."""
    out = _header(res)
    if not res.rows:
        out += ["", "No metric could be compared."]
    elif len(res.news) == 1:
        out += [""] + _layout(
            _TWO_HEAD, [(r.point_text, c) for r, c in zip(res.rows, _two_side_rows(res.rows), strict=True)]
        )
    else:
        out += [""] + _multi_text(res)
        out += ["", "B: significantly better, W: significantly worse (rule below)"]
    out += _footer(res)
    return "\n".join(out) + "\n"


def _layout(head: list[str], rows: Sequence[tuple[str, list[str]]]) -> list[str]:
    """No point column for a single point; a point column when it fits in 80 columns;
    otherwise points as sub-headings."""
    if all(p == "-" for p, _ in rows):
        return text_table(head, [c for _, c in rows], left=1).splitlines()
    table = text_table(["point", *head], [[p, *c] for p, c in rows], left=2)
    if max(len(line) for line in table.splitlines()) <= WIDTH:
        return table.splitlines()
    return _grouped(head, rows)


def _grouped(head: list[str], rows: Sequence[tuple[str, list[str]]]) -> list[str]:
    """Points as sub-headings with their metrics below, when one flat row is too wide."""
    table = text_table(head, [c for _, c in rows], indent=4).splitlines()
    out = [table[0]]
    last = None
    for (p, _), line in zip(rows, table[1:], strict=True):
        if p != last:
            out += _wrap(p, "  ", "")
            last = p
        out.append(line)
    return out


_FULL_HEAD = ["new", "point", "metric", "base", "new", "change", "95% CI", "n", ""]


def _full_cells(r: Row) -> list[str]:
    """Every column of a row, as the Markdown and HTML tables show it."""
    return [
        r.label,
        r.point_text,
        short_metric(r.metric),
        fmt_value(r.cmp.base_median, r.unit),
        fmt_value(r.cmp.new_median, r.unit),
        _pct(r.cmp.ratio),
        fmt_ci(r),
        fmt_n(r),
        mark(r),
    ]


@renders(CompareResult, Format.md)
def render_md(res: CompareResult) -> str:
    """The same in Markdown, with every column (medians of each side, interval, n)."""
    head = _header(res, markdown=True)
    i = 2 if res.emulated else 0
    out = head[:i] + ["## " + head[i]] + head[i + 1 :]
    if res.rows:
        rows = [[*c[:-1], f"**{c[-1]}**" if c[-1] else ""] for c in map(_full_cells, res.rows)]
        out += ["", md_table(_FULL_HEAD, rows, left=3)]
    else:
        out += ["", "No metric could be compared."]
    out += _footer(res, markdown=True, short_n=False)
    return "\n".join(out) + "\n"


def row_json(r: Row) -> dict[str, Any]:
    """One row as the JSON format names it (see docs/compare.md)."""
    c = r.cmp
    ci = interval(r)
    return {
        "label": r.label,
        "point": dict(r.point),
        "point_text": r.point_text,
        "metric": r.metric,
        "unit": r.unit,
        "direction": r.direction,
        "base": c.base_median,
        "new": c.new_median,
        "n_base": c.n_base,
        "n_new": c.n_new,
        "ratio": json_number(c.ratio),
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "significant": c.significant,
        "better": c.better,
        "invocations": list(c.invocations) if c.invocations else None,
        "base_samples": list(r.base_samples),
        "new_samples": list(r.new_samples),
        "base_runs": list(r.base_runs),
        "new_runs": list(r.new_runs),
    }


def render_json(res: CompareResult) -> dict[str, Any]:
    """``{"schema_version", "base", "new", "differences", "rows", "geomean", …}``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "emulated": list(res.emulated),
        "base": res.base,
        "new": res.news[0] if len(res.news) == 1 else list(res.news),
        "compared": res.compared,
        "differences": [{"field": d.field, "values": list(d.values)} for d in res.differences],
        "common": dict(res.common),
        "rows": [row_json(r) for r in res.rows],
        "geomean": (
            dict(res.geomean.get(res.news[0], {}))
            if len(res.news) == 1
            else {k: dict(v) for k, v in res.geomean.items()}
        ),
        "unpaired": [{"side": u.side, "point": u.point_text, "reason": u.reason} for u in res.unpaired],
        "floor": res.floor,
        "confidence": res.confidence,
        "method": res.method,
        "notes": list(res.notes),
    }


@renders(CompareResult, Format.json)
def _json(res: CompareResult) -> str:
    return json_text(render_json(res))


CSV_FIELDS = (
    "label",
    "point",
    "metric",
    "unit",
    "direction",
    "base",
    "new",
    "n_base",
    "n_new",
    "ratio",
    "ci_low",
    "ci_high",
    "significant",
    "better",
    "inv_base",
    "inv_new",
)


@renders(CompareResult, Format.csv)
def render_csv(res: CompareResult) -> str:
    """One line per label, point and metric; numbers unformatted; the invocations a side
    last, empty for a row judged by run."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in res.rows:
        d = row_json(r)
        d["point"] = r.point_text
        d["inv_base"], d["inv_new"] = r.cmp.invocations or (None, None)
        w.writerow(["" if d[k] is None else d[k] for k in CSV_FIELDS])
    return buf.getvalue()


def render_html(res: CompareResult, svg: str | None = None) -> str:
    """A self-contained page (no external assets): header, differences, table, plot."""
    e = html.escape
    title = _title(res)
    parts = [f"<h1>{e(title)}</h1>"]
    if res.emulated:
        parts.insert(0, f"<p><strong>{e(emulated_line(res))}</strong></p>")
    if res.differences:
        parts.append(
            f"<h2>Differences besides {e(res.compared)}</h2><table><tr><th>fact</th>"
            + "".join(f"<th>{e(s)}</th>" for s in (res.base, *res.news))
            + "</tr>"
        )
        for d in res.differences:
            parts.append(
                "<tr>" + f"<td>{e(d.field)}</td>" + "".join(f"<td>{e(v)}</td>" for v in d.values) + "</tr>"
            )
        parts.append("</table>")
    else:
        parts.append(f"<p>Nothing differs besides {e(res.compared)}.</p>")
    if res.common:
        parts.append(
            "<p>Common to every point: <code>"
            + e(" ".join(f"{k}={v}" for k, v in res.common.items()))
            + "</code></p>"
        )
    parts.append("<h2>Results</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in _FULL_HEAD) + "</tr>")
    for r in res.rows:
        cls = f' class="{mark(r)}"' if mark(r) else ""
        parts.append(f"<tr{cls}>" + "".join(f"<td>{e(c)}</td>" for c in _full_cells(r)) + "</tr>")
    parts.append("</table>")
    if svg:
        parts.append(
            f"<h2>New/base with {res.confidence * 100:.0f}% intervals</h2><div class=plot>{svg}</div>"
        )
    parts.append("<pre>" + e("\n".join(_footer(res, short_n=False)).strip()) + "</pre>")
    style = (
        "body{font-family:sans-serif;max-width:70em;margin:1em auto}"
        "table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;"
        "text-align:right}td:nth-child(-n+3),th:nth-child(-n+3){text-align:left}"
        "tr.better td{background:#e4f6e4}tr.worse td{background:#fbe3e3}"
        ".plot svg{max-width:100%;height:auto}"
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>"
        f"{e(title)}</title><style>{style}</style></head><body>" + "\n".join(parts) + "</body></html>\n"
    )


@renders(CompareResult, Format.html)
def _html(res: CompareResult) -> str:
    return render_html(res, to_svg(figure(res)))


def figure(res: CompareResult) -> Figure:
    """New/base per point and metric with interval whiskers (`plot compare`, the HTML page)."""
    bars = []
    for r in res.rows:
        ci = interval(r)
        bars.append(
            CompareBar(
                point=r.point_text,
                metric=short_metric(r.metric),
                label=r.label,
                ratio=r.cmp.ratio,
                ci_low=ci[0] if ci else None,
                ci_high=ci[1] if ci else None,
                significant=r.cmp.significant,
                better=r.cmp.better,
            )
        )
    return compare_figure(bars, title=_sides(res))
