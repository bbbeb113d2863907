"""Which of a point's threads did its work (pure): the budget counts those and names the rest.

A thread is a worker when it moved its share of the bytes, was on a CPU, or was blocked for
work (not sleeping or waiting on other threads); a helper, left out, when it moved none of
the bytes and slept or waited most of its looks while the work went on elsewhere: beside
I/O that shows in read/write bytes, or in a process of its own whose threads all only wait
while another process works (fio's parent, its jobs forked: libaio and io_uring submit
without counting bytes, and its main thread, on a CPU 9% of its time and waiting in pselect
the rest, was counted beside the one job and made the wall "waiting on other threads").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .offcpu import IDLE

#: One thread over its part of the window: its document, counters' change, the probe's times of
#: the two looks its counters' change lies between, samples by reason
Measured = tuple[Mapping[str, Any], dict[str, float], tuple[float, float], dict[str, float]]

#: a thread is the point's worker when it moved at least this share of the busiest thread's
#: bytes through read/write calls, or was on a CPU this share of its time, or was blocked
#: for work (not sleeping or waiting on other threads) this share of its samples. Bytes, not
#: syscalls: fio's helper thread reads /proc and /sys files as often as a throttled job writes
WORKER_IO_SHARE = 0.01
#: ... and at least this many bytes (libaio and io_uring submit without counting any: fio's
#: helper thread, reading a few /proc files a second, must not become the busiest "worker")
WORKER_MIN_BYTES = 1 << 20
WORKER_CPU_SHARE = 0.05
WORKER_BLOCKED_SHARE = 0.10
#: ... but a thread that moved none of the bytes and slept or waited on other threads this
#: share of its samples is a helper whatever its CPU, when the point's I/O shows in bytes or
#: its whole process only waits while another works: fio's main and helper threads in an
#: emulated guest were on a CPU 6% and 9% of their time (each look at /proc emulated),
#: asleep or waiting 90% and 87%, beside one writer
WORKER_IDLE_SHARE = 0.5


def _idle(d: Mapping[str, float], reasons: Mapping[str, float]) -> bool:
    return sum(reasons.get(r, 0) for r in IDLE) / (d["samples"] or 1.0) >= WORKER_IDLE_SHARE


def workers(measured: Sequence[Measured]) -> tuple[list[Measured], list[str]]:
    """The threads that did the point's work by the ``WORKER_*`` thresholds (bytes against the
    busiest thread's, time on a CPU unless a helper, samples blocked for work), and the
    others' names (``comm (tid)``)."""
    max_bytes = max((m[1]["rchar"] + m[1]["wchar"] for m in measured), default=0.0)
    floor = max(WORKER_MIN_BYTES, WORKER_IO_SHARE * max_bytes)
    looks = [(_idle(d, r), d["rchar"] + d["wchar"] >= floor) for _, d, _, r in measured]
    busy = {
        int(m[0].get("pid", -1))
        for m, (idle, moved) in zip(measured, looks, strict=True)
        if moved or not idle
    }
    out: list[Measured] = []
    left: list[str] = []
    for (th, d, span, reasons), (idle, moved) in zip(measured, looks, strict=True):
        working = sum(n for r, n in reasons.items() if r not in IDLE) / (d["samples"] or 1.0)
        alone = int(th.get("pid", -1)) not in busy and bool(busy)  # its process only waits
        helper = idle and (max_bytes >= WORKER_MIN_BYTES or alone)
        if (
            moved
            or (d["exec_ns"] / 1e9 >= WORKER_CPU_SHARE * (span[1] - span[0]) and not helper)
            or working >= WORKER_BLOCKED_SHARE
        ):
            out.append((th, d, span, reasons))
        else:
            left.append(f"{th.get('comm')} ({th.get('tid')})")
    return out, left
