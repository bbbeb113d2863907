"""Pure: what a plan's fio points will measure beside what they name, said before they run.

One caveat so far, measured (docs/explain.md, "lock-one-file"): a time-based buffered
write point with fio's ``invalidate`` on (its default) begins every pass over a file with
``fadvise(DONTNEED)``, so its writers write the file back themselves; on a one-file
workload that writeback took 16-25% of the writers' time and hid a lock that cost 27-44%.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..vocab.units import id_ranges
from .model import PlanPoint, Workload

WRITES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"})


def _on(v: Any) -> bool:
    return str(v).strip().lower() not in ("", "0", "false", "none")


def _fadvise_writeback(fio: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    """A point whose writers write back in fio's ``fadvise(DONTNEED)`` at each pass: buffered
    time-based writes with ``invalidate`` not turned off (in the plan or in its options)."""
    both = {**options, **fio}
    buffered = (
        both.get("mode", "buffered") == "buffered"
        and not _on(both.get("direct", 0))
        and _on(both.get("buffered", 1))
    )
    return (
        str(both.get("rw", "read")) in WRITES
        and _on(both.get("time_based", 0))
        and buffered
        and _on(both.get("invalidate", 1))
    )


def fio_caveats(points: Sequence[PlanPoint], workload: Workload) -> tuple[str, ...]:
    """The caveats of the points that have them, by point number (1 on, as the plan lists
    them); none for a job file's points (its sections are fio's to read)."""
    if workload.jobfile:
        return ()
    hit = [i for i, pp in enumerate(points, 1) if _fadvise_writeback(pp.fio, workload.options)]
    if not hit:
        return ()
    return (
        f"point{'s' if len(hit) > 1 else ''} {id_ranges(hit)}: time-based buffered writes with "
        "fio's invalidate on (its default): fio drops each file's pages with fadvise(DONTNEED) "
        "before every pass over it, so the writers write the file back themselves and the "
        "point measures that writeback too; invalidate = 0 measures the writes alone",
    )
