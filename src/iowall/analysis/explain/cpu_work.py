"""Pure: the kernel mechanisms (``analysis.explain.kernel_knowledge``) that are work on a CPU,
and how much of the workload's kernel on-CPU time one of them holds: enough to name a CPU
wall's mechanism, or only a part of it to say beside the path the wall names."""

from __future__ import annotations

from ...vocab.units import fmt_share
from .budget import Budget
from .kernel_knowledge import meaning

#: mechanisms of the kernel knowledge table that are work on a CPU (not a wait's machinery)
CPU_WORK = (
    "compression",
    "checksum",
    "encryption",
    "page-zeroing",
    "block-allocation",
    "unwritten-conversion",
    "page-tables",
    "spinlock",
    "io-scheduler",
)
#: a named kernel mechanism holding at least this share of the kernel on-CPU time names it
KERNEL_MECHANISM = 0.30
#: ... and at least this share is said as a part of the path's time, naming nothing (set at
#: a tenth after ext4's unwritten extents held 17% of a writer's kernel time, the rest of it
#: their lookups in the extent tree, which the table cannot tell from any block mapping)
KERNEL_MECHANISM_PART = 0.10


def _largest(b: Budget) -> tuple[str, float, float] | None:
    """The ``CPU_WORK`` mechanism with the most kernel on-CPU seconds, its seconds and its
    share of the workload's kernel time; None without kernel time or a named stack."""
    kernel = b.totals.get("kernel", 0.0)
    named = [(k, v) for k, v in b.cpu_mechanisms.items() if k in CPU_WORK]
    if not kernel or not named:
        return None
    k, v = max(named, key=lambda kv: kv[1])
    return k, v, v / kernel


def kernel_mechanism(b: Budget) -> tuple[str, float] | None:
    """The named mechanism (not the generic copy or writeback) that holds at least
    ``KERNEL_MECHANISM`` of the workload's kernel on-CPU time, with its seconds; None when
    none does (the path and the function are named instead)."""
    got = _largest(b)
    return (got[0], got[1]) if got and got[2] >= KERNEL_MECHANISM else None


def mechanism_part(b: Budget) -> str:
    """``"; 17% of the kernel time in unwritten-conversion (…)"`` when the largest named
    mechanism holds ``KERNEL_MECHANISM_PART`` of the kernel time but not enough to name the
    wall; ``""`` otherwise."""
    got = _largest(b)
    if got is None or not KERNEL_MECHANISM_PART <= got[2] < KERNEL_MECHANISM:
        return ""
    return f"; {fmt_share(got[2])} of the kernel time in {got[0]} ({meaning(got[0])})"
