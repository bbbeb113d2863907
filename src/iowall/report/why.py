"""The "Why" section shared by recipe and plan reports: each point's verdicts, points where
no rule fired on one line, and the probes that could not run."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any


def why_lines(items: Sequence[Mapping[str, Any]], *, markdown: bool = False) -> list[str]:
    """Lines of the section (empty when no point was probed)."""
    if not items:
        return []
    title = "Why (explain rules on each point's median run; 'iowall explain RUN' for more)"
    out = ["", f"**{title}**", ""] if markdown else ["", title]
    for w in items:
        out += _item(f"{w['point']} (run {w['run']}):", markdown)
        if w["fired"] or not w.get("applicable", True) or w.get("budget"):
            out += _item(w["sentences"], markdown, level=1)
        else:
            misses = list(w.get("near_misses", []))[:2]
            out += _item(
                "no rule fired" + (f"; nearest: {'; '.join(misses)}" if misses else ""), markdown, level=1
            )
    skipped = sorted({f"{sk['probe']} ({sk['reason']})" for w in items for sk in w.get("skipped_probes", [])})
    if skipped:
        out += _item("probes skipped: " + "; ".join(skipped), markdown)
    return out


def _item(text: str | Sequence[str], markdown: bool, *, level: int = 0) -> list[str]:
    """Bullets: Markdown list items, or text wrapped at 80 columns (level 1 is ``- ``)."""
    texts = [text] if isinstance(text, str) else list(text)
    if markdown:
        return [f"{'  ' * level}- {t}" for t in texts]
    first, rest = ("    - ", "      ") if level else ("  ", "    ")
    return [
        line for t in texts for line in textwrap.wrap(t, 80, initial_indent=first, subsequent_indent=rest)
    ]
