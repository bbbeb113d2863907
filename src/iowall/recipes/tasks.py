"""The task most seed recipes run: prepare, drop caches, one fio job; a fill point ends on
ENOSPC as ``filled`` with fio's partial numbers."""

from __future__ import annotations

from collections.abc import Callable

from ..measure.runner import Outcome, Partial, Task
from ..model import Point
from ..workloads.fio import FioFailure, JobFile, run_fio


def fio_task(
    point: Point,
    job: Callable[[], JobFile],
    *,
    title: str,
    weight: float = 1.0,
    prepare: Callable[[], None] | None = None,
    cleanup: Callable[[], None] | None = None,
    drop: Callable[[Partial], object] | None = None,
    expect_enospc: bool = False,
) -> Task:
    """A task that prepares, drops caches (``drop``: a Session's ``drop_caches``, which knows
    the rules without root) and runs one fio job."""

    def execute(partial: Partial) -> Outcome:
        if prepare:
            prepare()
        if drop is not None:
            drop(partial)
        try:
            res = run_fio(job(), origin_s=partial.origin_s)
        except FioFailure as e:
            if expect_enospc and (e.result.metrics and _enospc(e)):
                if cleanup:
                    cleanup()
                return Outcome(
                    status="filled",
                    metrics=e.result.metrics,
                    artifacts=e.result.artifacts(),
                    series=e.result.series,
                    notes=("fio stopped on ENOSPC (the fill's expected end)",),
                )
            partial.artifacts.extend(e.result.artifacts())
            raise
        if cleanup:
            cleanup()
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series)

    return Task(point, execute, weight=weight, title=title)


def _enospc(e: FioFailure) -> bool:
    text = f"{e} {e.result.stderr}".lower()
    errs = {int(j.get("error", 0)) for j in e.result.raw.get("jobs", [])}
    return 28 in errs or "no space" in text or "enospc" in text
