"""Plain-text and Markdown tables, the shapes kernel lists already read (mmtests-like), the
one place a table's numbers become text (``cell_text``), and a table of long names fitted to
its width (``fit``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ..results import Cell, Table
from ..vocab.units import GIB, MIB, fmt_value


def _number(x: float | None, unit: str) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if unit == "ratio":
        return f"{x:.2f}"
    if unit == "percent":
        return f"{x:.0%}"
    if unit == "change":
        return f"{x:+.1%}"
    if unit == "bytes_per_byte":  # page cache left per byte moved
        return f"{max(x, 0.0) * GIB / MIB:.0f} MiB/GiB"
    return fmt_value(x, unit)


def cell_text(c: Cell) -> str:
    """A cell as text: a number in its unit (``1536MiB/s``, ``0.25``, ``-7.8%``), with its
    spread (``1536MiB/s ±15%``), as a range (``1024MiB/s–1126MiB/s``) or with its interval
    (``2639 MiB/s [2615 MiB/s, 2663 MiB/s]``)."""
    if isinstance(c, str):
        return c
    if c.upto is not None:
        return f"{_number(c.value, c.unit)}–{_number(c.upto, c.unit)}"
    text = _number(c.value, c.unit)
    if c.spread is not None:
        text += f" ±{c.spread:.0%}"
    if c.interval is not None:
        lo, hi = c.interval
        text += (
            f" [{_number(lo, c.unit)}, {_number(hi, c.unit)}]"
            if math.isfinite(lo) and math.isfinite(hi)
            else " (too few runs for a 95% interval)"
        )
    return text


def cell_rows(t: Table) -> list[list[str]]:
    """A table's cells as text."""
    return [[cell_text(c) for c in r] for r in t.rows]


def text_width(t: Table) -> int:
    """How wide ``t`` prints as text (``text_table``'s layout: two spaces before and between
    padded columns)."""
    widths = [max(len(c) for c in col) for col in zip(t.headers, *cell_rows(t), strict=True)]
    return 2 + sum(widths) + 2 * (len(widths) - 1)


def short_names(n: int) -> list[str]:
    """A, B, … Z, then L27, L28, …: names in a table too narrow for them."""
    return [chr(ord("A") + i) if i < 26 else f"L{i + 1}" for i in range(n)]


def fit(t: Table) -> tuple[Table, tuple[str, ...]]:
    """``t`` as its text shows it, and the legend lines under it: with a ``fit_width`` it
    is wider than, the names of its first column as A, B, … (in order of first appearance)
    with a legend ``A: name``; otherwise ``t`` unchanged."""
    if t.fit_width is None or not t.rows or text_width(t) <= t.fit_width:
        return t, ()
    names = list(dict.fromkeys(c for r in t.rows if isinstance(c := r[0], str) and c))
    short = dict(zip(names, short_names(len(names)), strict=True))
    rows = tuple((short.get(r[0], r[0]) if isinstance(r[0], str) else r[0],) + r[1:] for r in t.rows)
    return replace(t, rows=rows), tuple(f"{short[n]}: {n}" for n in names)


def text_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, indent: int = 2, left: int = 1
) -> str:
    """Columns padded to width; the first ``left`` columns left-aligned, the rest right-aligned."""
    cols = (
        list(zip(*([list(headers)] + [list(r) for r in rows]), strict=True))
        if rows
        else [[h] for h in headers]
    )
    widths = [max(len(c) for c in col) for col in cols]

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(cells, widths, strict=True)):
            out.append(c.ljust(w) if i < left else c.rjust(w))
        return " " * indent + "  ".join(out).rstrip()

    return "\n".join([line(headers)] + [line(r) for r in rows])


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    """A GitHub-flavoured Markdown table with numeric columns right-aligned."""
    align = ["---" if i < left else "---:" for i in range(len(headers))]
    out = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
