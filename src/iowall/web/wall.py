"""The wall as a picture, from a stored `limits` report's numbers (``Report.data``): per
direction (and filesystem block size), buffered, uncached and direct throughput against jobs,
each cell's median with its spread, under the memory-copy and direct ceilings; and the link
from every cell of the report's tables, and every point of the chart, to its runs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.scaling.limits import MODES
from ..recipes.limits.report import TITLES
from ..report.byte_prefix import binary_scale
from ..results import Report
from ..vocab.units import fmt_rate
from .queries import ids_text

Figure = dict[str, Any]
COLOURS = {"buffered": "#c62828", "uncached": "#ef6c00", "direct": "#1565c0"}
_BLOCK = re.compile(r", (\S+) fs blocks")


def runs_url(ids: Sequence[int]) -> str:
    """The runs list of these runs (``/runs?ids=3-5,9``)."""
    return "/runs?ids=" + ids_text(list(ids)).removeprefix("ids=")


def _cell(p: Mapping[str, Any], mode: str) -> Mapping[str, Any] | None:
    c = p.get(mode)
    return c if isinstance(c, Mapping) and c.get("run_ids") else None


def wall_figures(data: Mapping[str, Any]) -> list[Figure]:
    """One chart per direction and block size of a limits report; none for other reports."""
    points = [p for p in data.get("points", ()) if isinstance(p, Mapping)]
    ceilings = data.get("ceilings", {})
    memcopy = {int(t): float(v) for t, v in ceilings.get("memcopy_bytes_per_s", {}).items()}
    out = []
    for block in dict.fromkeys(str(p.get("fs_block", "")) for p in points):
        for direction in ("write", "read"):
            rows = sorted(
                (p for p in points if p["direction"] == direction and str(p.get("fs_block", "")) == block),
                key=lambda p: p["jobs"],
            )
            if rows:
                suffix = f"_{block}" if block else ""
                direct = ceilings.get(f"direct_{direction}{suffix}_bytes_per_s")
                out.append(_chart(direction, block, rows, memcopy, direct))
    return out


def _chart(
    direction: str, block: str, rows: list[Mapping[str, Any]], memcopy: dict[int, float], direct: float | None
) -> Figure:
    jobs = [int(p["jobs"]) for p in rows]
    values = [c["median"] for p in rows for m in MODES if (c := _cell(p, m))]
    mc = [(j, memcopy.get(int(p.get("memcopy_threads") or 0))) for j, p in zip(jobs, rows, strict=True)]
    peak = max([*values, *(v for _, v in mc if v), direct or 0.0], default=1.0)
    scale, unit = binary_scale("B/s", peak)
    data: list[dict[str, Any]] = []
    for mode in MODES:
        cells = [(j, c) for j, p in zip(jobs, rows, strict=True) if (c := _cell(p, mode))]
        if not cells:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": mode,
                "x": [j for j, _ in cells],
                "y": [c["median"] / scale for _, c in cells],
                "error_y": {
                    "type": "data",
                    "visible": True,
                    "array": [c["median"] * c["spread"] / scale for _, c in cells],
                },
                "customdata": [runs_url(c["run_ids"]) for _, c in cells],
                "text": [
                    f"{mode} {j} job{'s' if j > 1 else ''}: {fmt_rate(c['median'])} "
                    f"±{c['spread']:.0%}, {c['n']} run{'s' if c['n'] > 1 else ''} (click: the runs)"
                    for j, c in cells
                ],
                "hoverinfo": "text",
                "line": {"color": COLOURS[mode], "width": 2.5},
                "marker": {"size": 9, "color": COLOURS[mode]},
            }
        )
    if any(v for _, v in mc):
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "memory copy",
                "x": [j for j, v in mc if v],
                "y": [v / scale for _, v in mc if v],
                "line": {"color": "#424242", "dash": "dash", "shape": "hv"},
                "hoverinfo": "name+y",
            }
        )
    if direct:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "direct ceiling",
                "x": [jobs[0], jobs[-1]],
                "y": [direct / scale] * 2,
                "line": {"color": COLOURS["direct"], "dash": "dot"},
                "hoverinfo": "name+y",
            }
        )
    title = f"{TITLES[direction]}{f', {block} fs blocks' if block else ''}: the wall"
    return {
        "data": data,
        "layout": {
            "title": {"text": title, "font": {"size": 14}},
            "height": 380,
            "margin": {"l": 64, "r": 20, "t": 40, "b": 70},
            "xaxis": {
                "title": {"text": "jobs"},
                "type": "log",
                "tickvals": jobs,
                "ticktext": [str(j) for j in jobs],
            },
            "yaxis": {"title": {"text": unit}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": -0.28},
            "hovermode": "closest",
        },
    }


def cell_links(rep: Report) -> dict[tuple[int, int, int], str]:
    """``(section, row, column) -> URL`` of the runs behind each mode cell of a limits report's
    direction tables, matched by the section's title, the row's jobs and the column's mode."""
    points = [p for p in rep.data.get("points", ()) if isinstance(p, Mapping)]
    out: dict[tuple[int, int, int], str] = {}
    for si, s in enumerate(rep.sections):
        direction = next((d for d, t in TITLES.items() if s.title.startswith(t)), None)
        if direction is None or s.table is None:
            continue
        m = _BLOCK.search(s.title)
        block = m.group(1) if m else ""
        by_jobs = {
            int(p["jobs"]): p
            for p in points
            if p["direction"] == direction and str(p.get("fs_block", "")) == block
        }
        for ri, row in enumerate(s.table.rows):
            first = row[0] if row else ""
            p = by_jobs.get(int(first)) if isinstance(first, str) and first.isdigit() else None
            for ci, header in enumerate(s.table.headers):
                if p is not None and header in MODES and (c := _cell(p, header)):
                    out[(si, ri, ci)] = runs_url(c["run_ids"])
    return out
