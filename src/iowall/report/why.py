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
    out = ["", f"**{title}**" if markdown else title, ""] if markdown else ["", title]
    quiet = [f"{w['point']} (run {w['run']})" for w in items if not w["fired"]]
    for w in items:
        if not w["fired"]:
            continue
        if markdown:
            out.append(f"- {w['point']} (run {w['run']}):")
        else:
            out += textwrap.wrap(f"{w['point']} (run {w['run']})", 80, initial_indent="  ",
                                 subsequent_indent="    ")
        for s in w["sentences"]:
            out += [f"  - {s}"] if markdown else textwrap.wrap(
                s, 80, initial_indent="    - ", subsequent_indent="      ")
    if quiet:
        text = "no rule fired: " + "; ".join(quiet)
        out += [f"- {text}"] if markdown else textwrap.wrap(text, 80, initial_indent="  ",
                                                            subsequent_indent="    ")
    skipped = sorted({f"{sk['probe']} ({sk['reason']})" for w in items
                      for sk in w.get("skipped_probes", [])})
    if skipped:
        text = "probes skipped: " + "; ".join(skipped)
        out += [f"- {text}"] if markdown else textwrap.wrap(text, 80, initial_indent="  ",
                                                            subsequent_indent="    ")
    return out
