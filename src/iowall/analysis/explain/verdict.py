"""A wall verdict (``analysis.explain.wall`` and the modules that name each kind of wall)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: ``decide``'s context key for ``wall.lock_turns`` as a share of the workload's time
TURNS = "lock_turn_share"
#: ``decide``'s context key: 1.0 when the point's workload is fio (its own habits can be named)
FIO = "workload_fio"
#: ``decide``'s context key: the share of all CPU time the hypervisor took (the cpu probe's)
STEAL = "cpu_steal_share"


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
