"""Lock-contention tables side by side: base (a) and patched (b), joined by caller and type.

Seed 000 shows two ``perf lock contention`` tables one after the other and leaves the reader
to pair the rows; ``join_contention`` pairs them and computes the differences. Rows are the
``locks`` probe's table (``lock_contention.json``): mappings with ``caller``, ``type``,
``contended``, ``total_wait_s``, ``max_wait_s`` (``stack`` optional). perf prints one row
per distinct stack, so one caller can appear several times (seed 000's three
``blkdev_llseek+0x31`` spinlock rows): those are summed before the join.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LockTotals:
    """One side's totals for a (caller, type): rows with different stacks summed."""

    contended: int = 0
    total_wait_s: float = 0.0
    max_wait_s: float = 0.0
    rows: int = 0

    @property
    def avg_wait_s(self) -> float:
        """Mean wait per contention (0 when perf counted none)."""
        return self.total_wait_s / self.contended if self.contended else 0.0


@dataclass(frozen=True)
class JoinedLock:
    """A caller's contention in both tables and the differences (b - a)."""

    caller: str
    type: str
    a: LockTotals
    b: LockTotals

    @property
    def delta_contended(self) -> int:
        return self.b.contended - self.a.contended

    @property
    def delta_wait_s(self) -> float:
        return self.b.total_wait_s - self.a.total_wait_s

    @property
    def wait_ratio(self) -> float | None:
        """b / a total wait (None when a has none)."""
        return self.b.total_wait_s / self.a.total_wait_s if self.a.total_wait_s else None


@dataclass(frozen=True)
class LockComparison:
    """Two sides' contention joined by caller: each side's selector and the runs it summed."""

    a: str
    a_runs: tuple[int, ...]
    b: str
    b_runs: tuple[int, ...]
    rows: tuple[JoinedLock, ...]


def _totals(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], LockTotals]:
    out: dict[tuple[str, str], LockTotals] = {}
    for r in rows:
        key = (str(r["caller"]), str(r["type"]))
        t = out.get(key, LockTotals())
        out[key] = LockTotals(
            t.contended + int(r["contended"]),
            t.total_wait_s + float(r["total_wait_s"]),
            max(t.max_wait_s, float(r.get("max_wait_s", 0.0))),
            t.rows + 1,
        )
    return out


def join_contention(
    a_rows: Iterable[Mapping[str, Any]], b_rows: Iterable[Mapping[str, Any]]
) -> list[JoinedLock]:
    """Full outer join of two contention tables on (caller, type); a side without the caller
    has zeros. Sorted by the larger of the two total waits, largest first."""
    a, b = _totals(a_rows), _totals(b_rows)
    keys = list(a) + [k for k in b if k not in a]
    joined = [JoinedLock(k[0], k[1], a.get(k, LockTotals()), b.get(k, LockTotals())) for k in keys]
    joined.sort(key=lambda j: (-max(j.a.total_wait_s, j.b.total_wait_s), j.caller, j.type))
    return joined


def fmt_wait(seconds: float, signed: bool = False) -> str:
    """A wait the way perf prints it: ``64.69 h``, ``769.04 us``, ``12 ns``."""
    sign = ("+" if seconds > 0 else "-" if seconds < 0 else "") if signed else ("-" if seconds < 0 else "")
    s = abs(seconds)
    for unit, scale in (("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{sign}{s / scale:.2f} {unit}"
    return f"{sign}{s * 1e9:.0f} ns"


def _fit(text: str, width: int) -> str:
    """Shorten a caller to ``width``, keeping its ``+0x`` offset."""
    if len(text) <= width:
        return text
    name, plus, off = text.rpartition("+")
    if not plus:
        return text[: width - 1] + "~"
    keep = width - len(off) - 2
    return name[:keep] + "~+" + off if keep > 0 else text[: width - 1] + "~"


HEADER = (
    f"{'contended':>10} {'contended':>10} {'delta':>11} {'wait':>9} {'wait':>9} "
    f"{'delta':>10} {'type':<9} caller"
)
HEADER2 = f"{'(a)':>10} {'(b)':>10} {'contended':>11} {'(a)':>9} {'(b)':>9} {'wait':>10} {'':<9}"


def format_locks_table(rows: Sequence[JoinedLock], width: int = 100) -> str:
    """Plain text, one line per caller, no wider than ``width`` (callers are shortened)."""
    lines = [HEADER, HEADER2.rstrip(), ""]
    for j in rows:
        left = (
            f"{j.a.contended:>10} {j.b.contended:>10} {j.delta_contended:>+11} "
            f"{fmt_wait(j.a.total_wait_s):>9} {fmt_wait(j.b.total_wait_s):>9} "
            f"{fmt_wait(j.delta_wait_s, signed=True):>10} {j.type:<9} "
        )
        lines.append(left + _fit(j.caller, max(8, width - len(left))))
    return "\n".join(lines)
