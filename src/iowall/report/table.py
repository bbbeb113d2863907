"""Plain-text and Markdown tables, the shapes kernel lists already read (mmtests-like)."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, indent: int = 2,
               left: int = 1) -> str:
    """Columns padded to width; the first ``left`` columns left-aligned, the rest right-aligned."""
    cols = (list(zip(*([list(headers)] + [list(r) for r in rows]), strict=True)) if rows
            else [[h] for h in headers])
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
