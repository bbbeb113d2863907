"""How ``iowall explain RUN`` reads: why a run is where it is (``analysis.explain``'s
``Explanation``: verdicts, nearest misses, the wall-clock budget, the device side, where the
CPU time went, kernel paths), in text and JSON. Its own module,
apart from ``report.run``: ``runs`` and ``show`` need none of the analysis it imports."""

from __future__ import annotations

from ..analysis.explain.facts import Explanation
from ..vocab.units import fmt_rate
from .budget import budget_lines
from .device_side import cost_lines, device_lines
from .emit import Format, json_text, renders
from .table import text_table


def _short(name: str, width: int = 56) -> str:
    """A function name cut to ``width`` with an ellipsis (C++ templates run long)."""
    return name if len(name) <= width else name[: width - 1] + "…"


@renders(Explanation, Format.text)
def _explanation_text(e: Explanation) -> str:
    tp = e.throughput_bytes_per_s
    out = [f"run {e.run}: {e.point}" + (f", {fmt_rate(tp)}" if tp else "")]
    out += [f"  - {s}" for s in e.sentences]
    if e.near_misses:
        out += ["", "  nearest misses (the rules that did not fire):"]
        out += [f"    {m}" for m in e.near_misses]
    if e.budget is not None:
        out += ["", *budget_lines(e.budget, e.helpers_cpus)]
    if e.cost is not None:
        out += cost_lines(e.cost)
    if e.device is not None:
        out += ["", *device_lines(e.device)]
    if e.attribution:
        rows = [[a.title, f"{a.cpu_s:.2f}", f"{100 * a.share:.0f}%"] for a in e.attribution]
        out += [
            "",
            "  where the CPU time went (tasks probe; share of busy CPU time):",
            text_table(["class", "CPU-s", "share"], rows, indent=4),
        ]
    if e.paths:
        rows = [
            [p.path, _short(p.top_functions[0].function if p.top_functions else ""), f"{100 * p.share:.0f}%"]
            for p in e.paths
        ]
        out += [
            "",
            "  kernel paths (profile; share of all sampled CPU time):",
            text_table(["path", "top function", "share"], rows, indent=4, left=2),
        ]
    out += [f"  (probe {sk.probe} skipped: {sk.reason})" for sk in e.skipped_probes]
    return "\n".join(out) + "\n"


#: the keys of ``explain --format json``, in its order (a report's Why item has these and
#: ``point`` and ``fired``)
JSON_KEYS = (
    "run",
    "verdicts",
    "skipped_probes",
    "applicable",
    "sentences",
    "near_misses",
    "attribution",
    "paths",
    "wall",
    "budget",
    "device",
    "cost",
)


@renders(Explanation, Format.json)
def _explanation_json(e: Explanation) -> str:
    doc = e.to_json()
    return json_text({k: doc[k] for k in JSON_KEYS})
