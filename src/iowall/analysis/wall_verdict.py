"""A wall verdict and the formatting its sentences share (``analysis.wall``,
``analysis.device_wall``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Wall:
    """The verdict: its kind, one sentence with its numbers, the share of time it holds."""

    kind: str
    sentence: str
    share: float
    evidence: dict[str, Any] = field(default_factory=dict)


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def us(s: float) -> str:
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def rate(b: float) -> str:
    return f"{b / 2**30:.2f} GiB/s" if b >= 2**30 else f"{b / 2**20:.0f} MiB/s"
