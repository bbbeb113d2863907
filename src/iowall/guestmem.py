"""Guest memory on a VM whose host takes freed memory back (virtio-balloon free page
reporting). The host discards reported pages, so the next first touch of such a page costs a
host fault: measured on this kind of VM, 18 GiB touched at 0.4 GiB/s the first time and 1 GiB/s
the second. Every page-cache page a buffered point allocates after a cache drop may pay it,
and buffered I/O then reads 5-7x slower than the same I/O on backed memory (fio's buffered
read: 550 MiB/s, 4 GiB/s after the touch). Direct I/O allocates no page cache and never pays.

``hold_guest_memory`` keeps reporting off while iowall measures (``page_reporting_order``
above the largest page order, journaled and restored like any knob) and touches the free
memory once, so page cache comes from memory the host has backed."""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from dataclasses import dataclass

from .knob import Knob
from .knobs import KnobSession
from .sysinfo import meminfo
from .units import GIB, MIB, fmt_bytes

REPORTING_ORDER = Knob("sysfs", "/sys/module/page_reporting/parameters/page_reporting_order")
#: Above MAX_PAGE_ORDER (10): no free block is ever large enough to be reported.
OFF_ORDER = 11
#: Memory left untouched, so that the touch itself never pushes the kernel into reclaim.
KEEP_FREE = 1 * GIB
CHUNK = 64 * MIB
#: Memory touched a second time, to measure what backed memory costs to touch.
AGAIN = 512 * MIB


@dataclass(frozen=True)
class GuestMemory:
    """What ``hold_guest_memory`` did: the reporting order it found, what it touched, how
    fast (GiB/s; a slow touch means the host had not backed the pages)."""

    order_before: str
    touched_bytes: int
    seconds: float
    #: GiB/s of touching memory again right after (backed memory: the rate to compare with)
    again_rate: float = 0.0

    @property
    def rate(self) -> float:
        return self.touched_bytes / self.seconds if self.seconds > 0 else 0.0

    def note(self) -> str:
        """The report's sentence on it."""
        return (f"this VM hands freed memory back to its host (free page reporting, order "
                f"{self.order_before}), so fresh page cache would pay host faults: reporting "
                f"held off during the run (restored after), and {fmt_bytes(self.touched_bytes)} "
                f"of free memory touched once first, at {self.rate / GIB:.1f} GiB/s "
                f"(touched again: {self.again_rate / GIB:.1f} GiB/s)")


def reporting_order() -> str | None:
    """The free page reporting order in force, or None where nothing reports (bare metal,
    no virtio-balloon reporting)."""
    try:
        with open(REPORTING_ORDER.path()) as f:
            return f.read().strip()
    except OSError:
        return None


def touch(nbytes: int) -> float:
    """Write one byte in every page of ``nbytes`` of fresh anonymous memory, freed after;
    the seconds it took."""
    nbytes = nbytes // CHUNK * CHUNK
    if nbytes <= 0:
        return 0.0
    start = time.monotonic()
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        base = ctypes.c_char.from_buffer(buf)
        addr = ctypes.addressof(base)
        for off in range(0, nbytes, CHUNK):
            ctypes.memset(addr + off, 1, CHUNK)
        del base
    finally:
        buf.close()
    return time.monotonic() - start


def hold_guest_memory(ks: KnobSession) -> GuestMemory | None:
    """On a VM with free page reporting (and as root): reporting off through ``ks`` (restored
    when ``ks`` is), the free memory touched once; what was done, or None where there is
    nothing to do."""
    before = reporting_order()
    if before is None or os.geteuid() != 0 or before == str(OFF_ORDER):
        return None
    ks.set(REPORTING_ORDER, OFF_ORDER)
    free = meminfo().get("MemFree", 0) - KEEP_FREE
    seconds = touch(free)
    again = touch(AGAIN)
    return GuestMemory(before, max(0, free // CHUNK * CHUNK), seconds,
                       AGAIN / again if again > 0 else 0.0)
