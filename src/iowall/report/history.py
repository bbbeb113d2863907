"""`iowall history`: the Report of a set of series with their change points (rendered by the
generic Report renderers in text, md and json), and the figure of each series with its
changes marked."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.regress.compare import Difference
from ..analysis.regress.history import History, Observation, Window, summary, worse
from ..analysis.regress.series_gate import FDR_SERIES, Tested
from ..results import Cell, Report, Section, Table, Value
from ..vocab.units import plural
from .plots import _figure, save

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def p_text(p: float, floor: float = 0.0) -> str:
    """A p-value to two digits; at the floor the permutations can reach, ``≤`` that floor."""
    return f"≤ {floor:.2g}" if floor and p <= floor * (1 + 1e-9) else f"{p:.2g}"


def _at(o: Observation) -> str:
    return o.at if o.at else f"run {o.run_id}" if o.run_id is not None else f"#{o.index}"


def _who(o: Observation) -> str:
    parts = [_at(o)]
    parts += [x for x in (o.label, o.kernel, o.commit and f"commit {o.commit}") if x]
    return ", ".join(dict.fromkeys(parts))


def _few(text: str) -> str:
    """One side of a fact: its values, or how many and the last when more than three."""
    vals = text.split(" | ")
    return text if len(vals) <= 3 else f"{len(vals)} values, last {vals[-1]}"


def facts_text(ds: Sequence[Difference]) -> str:
    """What differed, before → after, one fact after another."""
    return "; ".join(f"{d.field} {_few(d.values[0])} → {_few(d.values[1])}" for d in ds)


def _facts_json(ds: Sequence[Difference]) -> list[dict[str, str]]:
    return [{"field": d.field, "before": d.values[0], "after": d.values[1]} for d in ds]


def _window_rows(h: History) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for w in h.windows:
        c = w.change
        rows.append(
            [
                w.first_bad.at or f"{w.first_bad.index}",
                Value(c.rel_change, "change"),
                "worse" if worse(h, w) else "better",
                Value(c.median_before, h.unit, interval=c.ci_before),
                Value(c.median_after, h.unit, interval=c.ci_after),
                p_text(c.p_value, c.p_floor),
            ]
        )
    return rows


def _window_json(h: History, w: Window) -> dict[str, Any]:
    c = w.change

    def obs(o: Observation) -> dict[str, Any]:
        return {
            "index": o.index,
            "at": o.at,
            "group": o.group,
            "run_id": o.run_id,
            "kernel": o.kernel,
            "commit": o.commit,
            "label": o.label,
            "value": o.value,
        }

    return {
        "index": c.index,
        "before": c.before,
        "after": c.after,
        "n_before": c.n_before,
        "n_after": c.n_after,
        "median_before": c.median_before,
        "ci_before": list(c.ci_before),
        "median_after": c.median_after,
        "ci_after": list(c.ci_after),
        "rel_change": c.rel_change,
        "p_value": c.p_value,
        "p_floor": c.p_floor,
        "worse": worse(h, w),
        "last_good": obs(w.last_good),
        "first_bad": obs(w.first_bad),
        "differs": _facts_json(w.differs),
    }


def _title(h: History) -> str:
    n = len(h.observations)
    if h.by == "index":
        size = (
            plural(n, "result")
            if h.groups == n
            else f"{n} values in {h.groups} results (repeats summarised by their median)"
        )
    else:
        size = f"{n} runs" + (f" in {h.groups} {h.by}s" if h.by != "time" else "")
    return f"{h.name} — {h.metric} ({h.direction} is better): {size}" + (
        f", {h.detection.dropped} non-finite dropped" if h.detection.dropped else ""
    )


def newest_line(h: History, t: Tested, level: float = FDR_SERIES) -> str:
    """What the early test says of the newest results: suspect (worse or better beyond the
    floor, p within ``level``), or nothing to say, or why it could not test."""
    e = t.early
    if e.window is None:
        return f"newest results: not tested ({e.reason})"
    w = e.window
    change = math.exp(w.shift) - 1.0
    up = change > 0
    word = "better" if up == (h.direction == "higher") else "worse"
    what = (
        f"{', '.join(t.window)} against {w.n_base} results from {t.base_from}: "
        f"{change:+.1%} [{math.exp(w.low) - 1:+.1%}, {math.exp(w.high) - 1:+.1%}], "
        f"p = {p_text(e.p_value)} (early test)"
    )
    if e.p_value <= level and abs(change) > 0.02:
        one = " (one result: a regression or an outlier, the next decides)" if w.k == 1 else ""
        if w.k > 1 and w.grain > 0.0 and w.low <= 0.0 <= w.high:
            one = (
                f" (stored on a grain of about {math.expm1(w.grain):.0%} a step: a move of one "
                "step, of a size the figures do not hold)"
            )
        elif w.k > 1 and w.shown is not None and w.shown.count:
            one = (
                f" (the history moved this far for {w.k} results and came back "
                f"{plural(w.shown.episodes, 'time')} before: that again, or a change)"
            )
        return f"newest results SUSPECT, {word}{one}: {what}"
    return f"newest results: no change called: {what}"


def history_report(histories: Sequence[History], source: str) -> Report:
    """The report: one section per series (its change points, each with its bisect window,
    and what the early test says of the newest results), the method, and every number in
    ``data`` for ``--format json``."""
    s = summary(histories)
    sections = []
    for h in histories:
        newest: tuple[str, ...] = (newest_line(h, h.newest),) if h.newest is not None else ()
        if h.differs:
            newest += (f"the newest results' runs, against their baseline's: {facts_text(h.differs)}",)
        if h.windows:
            bullets = (
                tuple(
                    f"bisect window: last before {_who(w.last_good)}; first "
                    f"{'worse' if worse(h, w) else 'better'} {_who(w.first_bad)}"
                    + (f"; what else changed there: {facts_text(w.differs)}" if w.differs else "")
                    for w in h.windows
                )
                + newest
            )
            sections.append(
                Section(
                    _title(h),
                    Table.of(
                        ["at", "change", "", "median before [95%]", "median after [95%]", "p"],
                        _window_rows(h),
                        left=0,
                    ),
                    bullets,
                )
            )
        else:
            sections.append(
                Section(
                    _title(h),
                    bullets=(
                        "no change point" + (f": {h.detection.reason}" if h.detection.reason else ""),
                        *newest,
                    ),
                )
            )
    method = histories[0].detection.method if histories else ""
    notes = (method, f"newest results: {_EARLY}") if method else ()
    data = {
        "source": source,
        **s,
        "series": [
            {
                "key": h.key,
                "name": h.name,
                "metric": h.metric,
                "unit": h.unit,
                "direction": h.direction,
                "by": h.by,
                "dropped": h.detection.dropped,
                "reason": h.detection.reason,
                "values": [
                    {
                        "index": o.index,
                        "at": o.at,
                        "value": o.value,
                        "group": o.group,
                        "run_id": o.run_id,
                        "kernel": o.kernel,
                        "commit": o.commit,
                    }
                    for o in h.observations
                ],
                "changes": [_window_json(h, w) for w in h.windows],
                "newest": _newest_json(h.newest),
                "newest_differs": _facts_json(h.differs),
            }
            for h in histories
        ],
    }
    return Report(
        kind="history",
        name="history",
        title=f"iowall history — {source}",
        head=(
            f"{s['series']} series, {s['observations']} values, "
            f"{s['changes']} change point{'' if s['changes'] == 1 else 's'} "
            f"({s['worse']} worse)",
        ),
        sections=tuple(sections),
        notes=notes,
        notes_title="Method",
        data=data,
    )


_EARLY = (
    f"the newest 1-3 results against the history since its last change (order-statistic "
    f"prediction test, t with df from the data), suspect at p <= {FDR_SERIES:g} and beyond 2%"
)


def _newest_json(t: Tested | None) -> dict[str, Any] | None:
    if t is None:
        return None
    w = t.early.window
    return {
        "reason": t.early.reason,
        "p_value": t.early.p_value,
        "window": list(t.window),
        "base_from": t.base_from,
        "n_base": t.n_base,
        "shift": w.shift if w else None,
        "ratio": t.early.ratio,
        "low": math.exp(w.low) if w else None,
        "high": math.exp(w.high) if w else None,
        "shown_before": w.shown.episodes if w and w.shown else 0,
    }


def history_figure(histories: Sequence[History]) -> Figure:
    """Each series' values in order, medians before and after each change as steps, a
    vertical line at every change point."""
    n = max(1, len(histories))
    fig = _figure(8.0, 2.6 * n)
    axes = [fig.add_subplot(n, 1, i + 1) for i in range(n)]
    for ax, h in zip(axes, histories, strict=False):
        xs = [o.index for o in h.observations]
        ax.plot(xs, [o.value for o in h.observations], "o", ms=3, color="#4477aa")
        edges = [0] + [w.first_bad.index for w in h.windows] + [len(xs)]
        for a, b in zip(edges, edges[1:], strict=False):
            seg = sorted(o.value for o in h.observations[a:b] if math.isfinite(o.value))
            if seg:
                med = (
                    seg[len(seg) // 2] if len(seg) % 2 else (seg[len(seg) // 2 - 1] + seg[len(seg) // 2]) / 2
                )
                ax.hlines(med, a - 0.4, b - 0.6, colors="#222222", lw=1.5)
        for w in h.windows:
            ax.axvline(w.first_bad.index - 0.5, color="#cc3311" if worse(h, w) else "#009988", ls="--", lw=1)
        ax.set_title(f"{h.name} — {h.metric}", fontsize=9, loc="left")
        ax.set_ylabel(h.unit, fontsize=8)
        ax.tick_params(labelsize=7)
    axes[-1].set_xlabel(f"run (ordered by {histories[0].by})" if histories else "run", fontsize=8)
    return fig  # the figure's constrained layout places the panels


def draw_history(histories: Sequence[History], path: str) -> None:
    """Write the figure to ``path`` (.png or .svg)."""
    save(history_figure(histories), path)
