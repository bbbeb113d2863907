"""`scaling` and `plot scaling`: each selection a side, its thread sweeps analysed, and the
curves drawn."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.scaling.sweep import Scaling, analyse, why_no_curves
from ..model import Run
from ..report.emit import wrote
from ..report.plots import check_path, save
from ..report.scaling import figure
from ..store import Store
from ..vocab.errors import UserError
from .selection import load_all


def analyse_selections(selections: list[str], metric: str | None, knee: float, db: str | None) -> Scaling:
    """Load each selection as a side and analyse its sweeps (`scaling`, `plot scaling`)."""
    if not 0.0 < knee <= 1.0:
        raise UserError(f"--knee {knee:g}: give an efficiency between 0 and 1, e.g. 0.8")
    dup = next((s for i, s in enumerate(selections) if s in selections[:i]), None)
    if dup is not None:
        raise UserError(f"selection {dup!r} is given twice")
    store = Store.existing(db)
    picked = [(sel.text, runs) for sel, runs in load_all(store, selections)]
    for text, runs in picked:
        if not analyse([(text, runs)], metric=metric, knee_at=knee).curves:
            raise UserError(f"no thread sweep in {text!r}: {why_no_curves(runs, metric=metric)}")
    return analyse(sides_of(picked), metric=metric, knee_at=knee)


def draw_curves(result: Scaling, path: str) -> None:
    """The curves into a PNG or SVG, atomically; ``wrote PATH`` on stderr."""
    check_path(path)
    save(figure(result.curves), path)
    wrote(path)


def sides_of(selections: Sequence[tuple[str, Sequence[Run]]]) -> list[tuple[str, list[Run]]]:
    """Name the sides of ``iowall scaling SEL…``: with one selection, one side per stored run
    label; with several, one side per selection named by its text (``TEXT:LABEL`` when a
    selection holds several labels)."""
    out: list[tuple[str, list[Run]]] = []
    for text, runs in selections:
        by_label: dict[str, list[Run]] = {}
        for r in runs:
            by_label.setdefault(r.label, []).append(r)
        if len(selections) == 1:
            out += list(by_label.items())
        elif len(by_label) == 1:
            out.append((text, list(runs)))
        else:
            out += [(f"{text}:{lab}", rs) for lab, rs in by_label.items()]
    return out
