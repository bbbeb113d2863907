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


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def us(s: float) -> str:
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def size(b: float) -> str:
    """A request or I/O size: ``4 KiB``, ``1 MiB``, ``1.5 KiB``."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            v = b / scale
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{b:.0f} B"


def rate(b: float) -> str:
    return f"{b / 2**30:.2f} GiB/s" if b >= 2**30 else f"{b / 2**20:.0f} MiB/s"


def who_of(b: Budget) -> str:
    """The workload as sentences name it: ``fio``, ``fio (4 threads)``, ``the workload``."""
    comms = sorted({t.comm for t in b.threads})
    n = len(b.threads)
    name = comms[0] if len(comms) == 1 else "the workload"
    return f"{name} ({n} thread{'s' if n != 1 else ''})" if n > 1 else name
