"""A wall verdict and the formatting its sentences share (``analysis.explain.wall``,
``analysis.explain.device``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .budget import Budget

#: ``decide``'s context key for ``wall.lock_turns`` as a share of the workload's time
TURNS = "lock_turn_share"


@dataclass(frozen=True)
class Wall:
    """The verdict: its kind (the state that holds the time, or the mechanism below it),
    one sentence with its numbers, the share of time it holds, and the mechanism inside the
    path a kernel developer would name (``""`` when none is known: ``analysis.explain.kernel_knowledge``)."""

    kind: str
    sentence: str
    share: float
    evidence: dict[str, Any] = field(default_factory=dict)
    mechanism: str = ""


def who_of(b: Budget) -> str:
    """The workload as sentences name it: ``fio``, ``fio (4 threads)``, ``the workload``."""
    comms = sorted({t.comm for t in b.threads})
    n = len(b.threads)
    name = comms[0] if len(comms) == 1 else "the workload"
    return f"{name} ({n} thread{'s' if n != 1 else ''})" if n > 1 else name
