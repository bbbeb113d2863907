"""How ``iowall explain RUN`` reads: why a run is where it is (verdicts, nearest misses, the
wall-clock budget, where the CPU time went, kernel paths), in text and JSON. Its own module,
apart from ``report.run``: ``runs`` and ``show`` need none of the analysis it imports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..analysis.explain.rules import Verdict, to_json
from ..model import Run
from ..vocab.units import fmt_rate
from .budget import budget_lines
from .device_side import cost_lines, device_lines
from .emit import Format, json_text, renders
from .table import text_table


@dataclass(frozen=True)
class Explanation:
    """Why a run is where it is (``analysis.explain.run.why_run``: verdicts, nearest misses, where
    the CPU time went, skipped probes) and its throughput (None when it has none)."""

    run: Run
    why: Mapping[str, Any]
    throughput_bytes_per_s: float | None


def _short(name: str, width: int = 56) -> str:
    """A function name cut to ``width`` with an ellipsis (C++ templates run long)."""
    return name if len(name) <= width else name[: width - 1] + "…"


@renders(Explanation, Format.text)
def _explanation_text(e: Explanation) -> str:
    tp, w = e.throughput_bytes_per_s, e.why
    out = [f"run {e.run.id}: {e.run.point.describe()}" + (f", {fmt_rate(tp)}" if tp else "")]
    out += [f"  - {s}" for s in w["sentences"]]
    if w.get("near_misses"):
        out += ["", "  nearest misses (the rules that did not fire):"]
        out += [f"    {m}" for m in w["near_misses"]]
    if w.get("budget"):
        out += ["", *budget_lines(w["budget"])]
    if w.get("cost"):
        out += cost_lines(w["cost"])
    if w.get("device"):
        out += ["", *device_lines(w["device"])]
    if w.get("attribution"):
        rows = [[a["title"], f"{a['cpu_s']:.2f}", f"{100 * a['share']:.0f}%"] for a in w["attribution"]]
        out += [
            "",
            "  where the CPU time went (tasks probe; share of busy CPU time):",
            text_table(["class", "CPU-s", "share"], rows, indent=4),
        ]
    if w.get("paths"):
        rows = [
            [
                p["path"],
                _short((p["top_functions"] or [{"function": ""}])[0]["function"]),
                f"{100 * p['share']:.0f}%",
            ]
            for p in w["paths"]
        ]
        out += [
            "",
            "  kernel paths (profile; share of all sampled CPU time):",
            text_table(["path", "top function", "share"], rows, indent=4, left=2),
        ]
    out += [f"  (probe {sk['probe']} skipped: {sk['reason']})" for sk in w["skipped_probes"]]
    return "\n".join(out) + "\n"


@renders(Explanation, Format.json)
def _explanation_json(e: Explanation) -> str:
    w = e.why
    doc = to_json(
        e.run.id,
        [Verdict(v["rule"], v["sentence"], v["evidence"]) for v in w["verdicts"]],
        list(w["skipped_probes"]),
    )
    doc.update(
        applicable=w.get("applicable", True),
        sentences=list(w["sentences"]),
        near_misses=list(w.get("near_misses", [])),
        attribution=list(w.get("attribution", [])),
        paths=list(w.get("paths", [])),
        wall=w.get("wall"),
        budget=w.get("budget"),
        device=w.get("device"),
        cost=w.get("cost"),
    )
    return json_text(doc)
