"""Pure: what lies below the guest's kernel: the hypervisor running other work on this VM's
CPUs (steal). The guest's threads, the bed's workers among them (a loop device's worker *is*
the device), wait for their vCPUs beside whatever state the budget shows them in: their I/O
waits and CPU times stretch alike. The state that holds the time stays the workload's wall
(the explain corpus's induced walls held their ground truth under 15-29% steal); the steal is
said beside it, and a kernel developer measures such a point again.

Seen on this VM (docs/benchmarks.md, "The host's steal, observed rather than induced"): six
runs of a small plan at 10.5-25.6% steal read 33-46 MiB/s where 28 runs under 2% read 59-108;
a loop device's requests took 104 us against about 21-25."""

from __future__ import annotations

from collections.abc import Sequence

from ...vocab.units import fmt_share
from .verdict import Wall

#: Steal of at least this share of all CPU time is said in full beside the wall.
STEAL_WALL = 0.10
#: Steal of at least this share, below ``STEAL_WALL``, is noted beside the wall.
STEAL_NOTE = 0.02


def steal_sentence(steal: float | None, under: Wall | None) -> str | None:
    """The host's steal said beside the wall when it (the share of all CPU time the
    hypervisor gave to other work) is at least ``STEAL_WALL``, naming the wall (``under``) it
    stretched; else None."""
    if steal is None or steal < STEAL_WALL:
        return None
    stretched = ""
    if under is not None:
        stretched = f" ({under.kind}, {fmt_share(under.share)} of the time, is what it stretched)"
    return (
        f"The host's steal: the hypervisor ran other work on this VM's CPUs for "
        f"{fmt_share(steal)} of the CPU time during the point, so the workload's threads and "
        f"the workers that serve them (the bed's, the flushers) waited for their vCPUs in "
        f"every state the budget shows{stretched}: the point measured the host as much as the "
        "kernel; measure it again when the host is quiet."
    )


def steal_note(steal: float | None) -> str | None:
    """A note of the host's steal from ``STEAL_NOTE`` up to ``STEAL_WALL``; else None."""
    if steal is None or not STEAL_NOTE <= steal < STEAL_WALL:
        return None
    return (
        f"The host took {fmt_share(steal)} of this VM's CPU time (steal) during the point: "
        "every figure here carries it."
    )


def runs_note(steals: Sequence[float]) -> str | None:
    """A report's note on the runs of a batch the host took CPU time from (each run's
    ``verdict.STEAL``; those of at least ``STEAL_NOTE``), or None when none was."""
    hit = [x for x in steals if x >= STEAL_NOTE]
    if not hit:
        return None
    lo, hi = f"{min(hit):.1%}", f"{max(hit):.1%}"
    span = lo if lo == hi else f"{lo}-{hi}"
    return (
        f"the host took {span} of the CPU time (steal) during {len(hit)} of {len(steals)} runs: "
        f"their figures carry it ('iowall explain RUN' says what it stretched from {STEAL_WALL:.0%})"
    )
