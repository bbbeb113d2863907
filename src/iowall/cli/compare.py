"""`iowall compare BASE NEW [NEW …]`: base vs new run sets, point by point, with intervals."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ..atomic import write_text
from ..errors import UserError
from .common import check_format, open_store

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.compare import CompareResult

FORMATS = ("text", "md", "csv", "json", "html")


def parse_floor(text: str) -> float:
    """``2%`` or ``0.02`` → 0.02; a UserError outside [0, 1)."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise UserError(f"--floor {text!r}: use a share like 2% or 0.02") from None
    if not 0 <= v < 1:
        raise UserError(f"--floor {text!r}: must be at least 0 and below 100%")
    return v


def compared_field(texts: list[str]) -> str:
    """The field the sides were chosen by (``label`` for plain labels)."""
    from ..selection import FIELDS, parse_selection

    named: list[str] = []
    for t in texts:
        sel = parse_selection(t)
        if sel.bundle is not None and not any(getattr(sel.flt, f) for f in FIELDS):
            named.append("bundle")
            continue
        for f in (*FIELDS, "ids"):
            if getattr(sel.flt, f) and f not in named:
                named.append(f)
    return ",".join("host.hostname" if f == "host" else f for f in named) or "label"


def build(sets: list[str] | None, base: str | None, new: list[str] | None,
          metric: list[str] | None, floor: str, db: str | None) -> CompareResult:
    """Load the run sets named on the command line and compare them (shared with `plot`)."""
    from ..analysis.compare import Side, compare
    from ..selection import load_all

    fl = parse_floor(floor)
    texts = list(sets or [])
    if base is not None or new:
        if texts:
            raise UserError("give the run sets either as arguments or as --base/--new, not both")
        if base is None or not new:
            raise UserError("--base and --new go together")
        texts = [base, *new]
    if len(texts) < 2:
        raise UserError("compare needs a base and at least one new run set, e.g. "
                        "'iowall compare base patched'")
    store = None if all(".json" in t for t in texts) else open_store(db)
    loaded = load_all(store, texts)
    seen: dict[int, str] = {}
    for sel, runs in loaded:
        if sel.bundle is not None:
            continue
        for r in runs:
            if r.id is not None and r.id in seen and seen[r.id] != sel.text:
                raise UserError(f"run {r.id} is in both {seen[r.id]!r} and {sel.text!r}: "
                                "the sides of a comparison must not overlap")
            if r.id is not None:
                seen[r.id] = sel.text
    sides = [Side(sel.describe(), runs) for sel, runs in loaded]
    res = compare(sides[0], sides[1:], metrics=metric, floor=fl, compared=compared_field(texts))
    if not res.rows:
        why = "; ".join(f"{u.side}: {u.point_text}: {u.reason}" for u in res.unpaired[:3])
        raise UserError("nothing to compare: no point and metric measured on both sides"
                        + (f" ({why})" if why else ""))
    return res


def compare_cmd(
    sets: Annotated[list[str] | None, typer.Argument(
        metavar="BASE NEW [NEW…]", help="run sets: a label, FIELD=VALUE[,…] (label, recipe, "
        "host, kernel, batch, status), ids=3-9, or a bundle FILE.json[:FIELD=VALUE]")] = None,
    base: str | None = typer.Option(None, "--base", help="the base run set"),
    new: Annotated[list[str] | None, typer.Option(
        "--new", help="a new run set (repeatable: one column per set)")] = None,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", help="metric name or glob (repeatable); 'all' for every metric "
        "(default: throughput, IOPS, p99 latency, rates, times)")] = None,
    floor: str = typer.Option("2%", help="smallest change ever marked (e.g. 2% or 0.02)"),
    fmt: str = typer.Option("text", "--format", help="text, md, csv, json or html"),
    output: str | None = typer.Option(None, "-o", "--output", help="write to FILE, not stdout"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Base vs new, point by point: medians, ratio, 95% interval, better/worse."""
    from ..report import compare as rep

    check_format(fmt, FORMATS)
    res = build(sets, base, new, metric, floor, db)
    if fmt == "json":
        text = json.dumps(rep.render_json(res), indent=2, default=str) + "\n"
    elif fmt == "html":
        text = rep.render_html(res, _svg(res))
    elif fmt == "md":
        text = rep.render_md(res)
    elif fmt == "csv":
        text = rep.render_csv(res)
    else:
        text = rep.render_text(res)
    if output and output != "-":
        write_text(output, text, what="report")
        print(f"iowall: wrote {output}", file=sys.stderr)
    else:
        typer.echo(text, nl=False)


def figure(res: CompareResult) -> Figure:
    """New/base per point and metric with interval whiskers."""
    from ..report.plots import CompareBar, compare_figure

    bars = [CompareBar(point=r.point_text, metric=r.metric, label=r.label, ratio=r.cmp.ratio,
                       ci_low=r.cmp.ci_low, ci_high=r.cmp.ci_high,
                       significant=r.cmp.significant, better=r.cmp.better)
            for r in res.rows]
    return compare_figure(bars, title=f"{res.base} vs {', '.join(res.news)}")


def _svg(res: CompareResult) -> str:
    from ..report.plots import to_svg

    return to_svg(figure(res))
