"""Pure: the gate's verdicts read against what else took the CPUs on each side
(``env_numbers.busier``: other processes, the host's steal), a row at a time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...model import Run
from .env_numbers import busier
from .gate import GateResult

#: why a row that passed while the base runs were the busier is inconclusive
HIDDEN = "a fall as large as what that took from the base would not show"


def machine_busier(res: GateResult, base: Sequence[Run], new: Sequence[Run]) -> GateResult:
    """Regressions measured while something else took more of the CPUs during their point's
    new runs than during its base runs (``env_numbers.busier``: other processes, the host's
    steal) are inconclusive: from these runs the fall is the machine's or the change's; a rerun
    with nothing else running decides. The mirror holds for the rows that can fail the gate:
    one that passed (same, or better) while the base runs were the busier is inconclusive too,
    since the base then measured less than the machine does and a fall as large as what was
    taken from it hides in that. Each row is read with its own runs (a steal episode during one
    point leaves the others' verdicts alone); rows whose runs are not known by id are read with
    the whole sides."""
    b_by = {r.id: r for r in base if r.id is not None}
    n_by = {r.id: r for r in new if r.id is not None}
    whole: dict[bool, tuple[str, ...]] = {}  # the whole sides' reading, made once if a row needs it
    out = []
    for v in res.verdicts:
        falls = v.status == "regression"
        if not falls and not (v.gating and v.status in ("same", "improvement")):
            out.append(v)
            continue
        b = [b_by[i] for i in v.row.base_runs if i in b_by]
        n = [n_by[i] for i in v.row.new_runs if i in n_by]
        if b and n:
            taken = _taken(b, n, falls)
        else:
            if falls not in whole:
                whole[falls] = _taken(base, new, falls)
            taken = whole[falls]
        why = "the machine's, or a regression; rerun" if falls else f"{HIDDEN}; measure the base again"
        out.append(
            replace(
                v,
                status="inconclusive",
                reason=f"q = {v.q_value:.2g}, but {'; '.join(taken)}: {why} where nothing else runs",
                base_busier=not falls,
            )
            if taken
            else v
        )
    return replace(res, verdicts=tuple(out))


def _taken(base: Sequence[Run], new: Sequence[Run], falls: bool) -> tuple[str, ...]:
    """What took more of the CPUs during the new runs (a row that fell) or during the base
    runs (a row that passed), as ``busier`` says it."""
    return busier(base, new) if falls else busier(new, base, ("base", "new"))
