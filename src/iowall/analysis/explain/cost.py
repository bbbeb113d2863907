"""Pure: the cost of each I/O, from the workload's budget and the device side: its on-CPU
time per read/write call, per MiB and per I/O."""

from __future__ import annotations

from .budget import Budget
from .device import Device
from .facts import Cost


def cost_of(b: Budget, dev: Device) -> Cost | None:
    """The cost of each I/O: the workload's CPU time per I/O (fio's own count: libaio and
    io_uring submit many per call, through calls no counter sees), per MiB, and per
    read/write call with calls per second where those calls moved the workload's bytes.
    Rates are over the seconds the threads' counts cover (``Budget.counted_s``), and fio's
    bytes are its rate times those seconds: a job thread seen from 1.07 s to 4.71 s of a
    window from 0.96 s to 4.95 s made 2.16 million calls a second over the window and 2.37
    million while it was seen, fio's own 2.36 million I/Os a second."""
    oncpu = b.oncpu_s
    span = b.counted_s
    if not oncpu or not span:
        return None
    calls, moved = b.calls, b.moved_bytes
    fio_bytes = (dev.workload_bytes_per_s or 0.0) * span
    per_call: dict[str, float] = {}
    # read/write calls count only when they carried the I/O (not fio's reads of /proc
    # beside libaio's submissions: 3 bytes a call)
    if calls and moved and (not fio_bytes or moved >= 0.5 * fio_bytes):
        per_call = {
            "calls_per_s": round(calls / span, 1),
            "cpu_us_per_call": round(oncpu / calls * 1e6, 3),
            "bytes_per_call": round(moved / calls),
        }
    total = fio_bytes or moved
    per_io: dict[str, float] = {}
    if fio_bytes and dev.io_bytes:
        ios = fio_bytes / dev.io_bytes
        per_io = {"ios_per_s": round(ios / span, 1), "cpu_us_per_io": round(oncpu / ios * 1e6, 3)}
    return Cost(
        round(oncpu, 4),
        round(b.totals.get("user", 0.0) / oncpu, 4),
        cpu_ms_per_mib=round(oncpu / (total / 2**20) * 1e3, 4) if total else None,
        **per_call,
        **per_io,
    )
