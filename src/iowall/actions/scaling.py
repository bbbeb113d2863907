"""`scaling` and `plot scaling`: each selection a side, its thread sweeps analysed, and the
curves drawn."""

from __future__ import annotations

from ..analysis.sweep import Scaling, analyse, sides_of, why_no_curves
from ..errors import UserError
from ..report.emit import wrote
from ..report.plots import check_path, save
from ..report.scaling import figure
from ..selection import load_all
from ..store import Store


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
