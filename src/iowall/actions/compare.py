"""`compare` and `plot compare`: the run sets named on the command line, loaded and compared."""

from __future__ import annotations

from ..analysis.regress.compare import FLOOR, CompareResult, Side, compare, selectable, shared_run
from ..analysis.regress.env_numbers import with_metrics
from ..store import Store
from ..vocab.errors import UserError
from ..vocab.units import parse_floor
from .selection import compared_field, load_all, store_only


def compare_sets(
    sets: list[str] | None,
    base: str | None,
    new: list[str] | None,
    metric: list[str] | None,
    floor: str,
    db: str | None,
) -> CompareResult:
    """Load the run sets named on the command line and compare them (`compare`, `plot compare`).
    Sides that share a run (the same selection twice, or overlapping ones) are refused."""
    fl = parse_floor(floor)
    texts = list(sets or [])
    if base is not None or new:
        if texts:
            raise UserError("give the run sets either as arguments or as --base/--new, not both")
        if base is None or not new:
            raise UserError("--base and --new go together")
        texts = [base, *new]
    if len(texts) < 2:
        raise UserError(
            "compare needs a base and at least one new run set, e.g. 'iowall compare base patched'"
        )
    store = None if all(".json" in t for t in texts) else Store.existing(db)
    return compare_selections(store, texts, metric, fl)


def compare_selections(
    store: Store | None,
    texts: list[str],
    metric: list[str] | None,
    floor: float = FLOOR,
    *,
    files: bool = True,
) -> CompareResult:
    """The first selection against each of the others, point by point: `iowall compare` and
    the dashboard's compare page alike (``files=False``: the dashboard reads its store only,
    never a bundle file named in a URL). Sides that share a run are refused; a comparison
    with no point measured on both sides is a UserError saying why."""
    if not files:
        texts = [store_only(t) for t in texts]
    loaded = load_all(store, texts, metrics=with_metrics(selectable(metric)))  # and the env's
    sides = [Side(sel.describe(), runs) for sel, runs in loaded]
    shared = shared_run(sides)
    if shared is not None:
        run, i, j = shared
        what = (
            f"{texts[i]!r} is given twice"
            if texts[i] == texts[j]
            else f"run {run} is in both {texts[i]!r} and {texts[j]!r}"
        )
        raise UserError(f"{what}: the sides of a comparison must not share runs")
    res = compare(sides[0], sides[1:], metrics=metric, floor=floor, compared=compared_field(texts))
    if not res.rows:
        why = "; ".join(f"{u.side}: {u.point_text}: {u.reason}" for u in res.unpaired[:3])
        raise UserError(
            "nothing to compare: no point and metric measured on both sides" + (f" ({why})" if why else "")
        )
    return res
