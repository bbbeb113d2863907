"""The Why of a `limits` run: each buffered point explained on its median run
(``analysis.explain``), the peak of each direction first, named as the report says it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...model import Run
from ..explain.context import representative
from ..explain.facts import Explanation
from ..explain.run import explain
from .limits import LimitsSummary


@dataclass(frozen=True)
class PointWhy:
    """One buffered point of a `limits` run explained on its median run: its direction, job
    count and the explanation, whose point is named as the report says it (``buffered write
    at 2 jobs, the peak``)."""

    direction: str
    jobs: int
    explanation: Explanation

    def to_json(self) -> dict[str, Any]:
        return {**self.explanation.to_json(), "direction": self.direction, "jobs": self.jobs}


def why_limits(summary: LimitsSummary, runs: Sequence[Run]) -> list[PointWhy]:
    """The Why of a `limits` run: every buffered point explained on its median run (the rules
    that fire, the nearest misses, where the CPU time went), the peak of each direction (per
    filesystem block size) first."""
    out: list[PointWhy] = []
    by_id = {r.id: r for r in runs}
    for block in summary.blocks:
        for direction in ("write", "read"):
            rows = [r for r in summary.rows if r.direction == direction and r.buffered and r.block == block]
            peak = max(rows, key=lambda r: r.buffered.median if r.buffered else 0.0, default=None)
            for row in sorted(rows, key=lambda r: (r is not peak, r.jobs)):
                assert row.buffered is not None
                group = [by_id[i] for i in row.buffered.run_ids if i in by_id]
                run = representative(group, f"{direction}_bw_bytes_per_s")
                if run is None:
                    continue
                tag = ", the peak" if row is peak else ""
                jobs = f"{row.jobs} job" + ("" if row.jobs == 1 else "s")
                where = f" ({block} blocks)" if block else ""
                e = replace(explain(run, runs), point=f"buffered {direction} at {jobs}{where}{tag}")
                out.append(PointWhy(direction, row.jobs, e))
    return out
