"""Guest memory on a VM whose host takes freed memory back (virtio-balloon free page
reporting). The host discards reported pages, so the next first touch of such a page costs a
host fault: measured on this kind of VM, 18 GiB touched at 0.4 GiB/s the first time and 1 GiB/s
the second. Every page-cache page a buffered point allocates after a cache drop may pay it,
and buffered I/O then reads 5-7x slower than the same I/O on backed memory (fio's buffered
read: 550 MiB/s, 4 GiB/s after the touch). Direct I/O allocates no page cache and never pays.

``hold_guest_memory`` keeps reporting off while iowall measures (``page_reporting_order``
above the largest page order, journaled and restored like any knob) and touches the free
memory once, so page cache comes from memory the host has backed. A touch made under a hold
that still lasts is not made again (``TOUCHED``): memory freed while reporting is off stays
backed, so a second touch under the same hold only costs time (20-30 s here).

A caller that knows how much memory its run can allocate (``need``: `limits` does) touches only
that: pages freed while reporting is off go back to the head of the free lists, and the
reported ones wait at their tail (``__putback_isolated_page``, FPI_TO_TAIL), so the run's
allocations come from the touched pages first. Measured here: after 8 GiB touched, 6 GiB more
allocated at 1.6-2.0 GiB/s, the rate of backed memory, against 0.8-1.0 GiB/s with no touch."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..machine import journal
from ..machine.atomic import write_text
from ..machine.cgroups import locate, memory_room
from ..machine.sysinfo import meminfo
from ..vocab.knob import Knob
from ..vocab.units import GIB, MIB, fmt_bytes
from .knob_session import KnobSession

REPORTING_ORDER = Knob("sysfs", "/sys/module/page_reporting/parameters/page_reporting_order")
#: Above MAX_PAGE_ORDER (10): no free block is ever large enough to be reported.
OFF_ORDER = 11
#: Memory left untouched, so that the touch itself never pushes the kernel into reclaim.
KEEP_FREE = 1 * GIB
#: Room left untouched inside a memory-limited cgroup (iowall itself, fio, page cache).
KEEP_FREE_CG = 64 * MIB
CHUNK = 64 * MIB
#: Memory touched a second time, to measure what backed memory costs to touch.
AGAIN = 512 * MIB
#: The last complete touch, machine-wide: this boot's id, the journal entry of the reporting
#: hold it was made under (the undo that restores the order), what it touched and when.
#: While that entry is pending and the order still reads ``OFF_ORDER``, reporting has been
#: off since the touch, so every page it touched is still backed.
TOUCHED = Path("/run/iowall/guest-memory.json")


@dataclass(frozen=True)
class GuestMemory:
    """What ``hold_guest_memory`` did: the reporting order it found, what it touched, how
    fast (GiB/s; a slow touch means the host had not backed the pages)."""

    order_before: str
    touched_bytes: int
    seconds: float
    #: GiB/s of touching memory again right after (backed memory: the rate to compare with)
    again_rate: float = 0.0
    #: why less than the free memory was touched (a memory cgroup's limit), or ""
    capped: str = ""
    #: seconds since an earlier touch under the same hold, when this one was not needed
    earlier_s: float | None = None
    #: what the caller said its run can allocate (touched instead of all free memory), or 0
    need: int = 0

    @property
    def rate(self) -> float:
        return self.touched_bytes / self.seconds if self.seconds > 0 else 0.0

    def note(self) -> str:
        """The report's sentence on it."""
        held = (
            "reporting already held off"
            if self.order_before == str(OFF_ORDER)
            else "reporting held off during the run (restored after)"
        )
        lead = (
            f"this VM hands freed memory back to its host (free page reporting, order "
            f"{self.order_before}), so fresh page cache would pay host faults: {held}, "
        )
        if self.earlier_s is not None:
            return lead + (
                f"and the free memory was touched {self.earlier_s:.0f} s ago under the same "
                f"hold ({fmt_bytes(self.touched_bytes)}), reporting off since: still backed, "
                "not touched again"
            )
        what = (
            f"{fmt_bytes(self.touched_bytes)} of free memory (what this run can allocate; "
            "pages freed under the hold are handed out before those the host took back)"
            if self.need
            else f"{fmt_bytes(self.touched_bytes)} of free memory"
        )
        return (
            lead + f"and {what} touched once first, at {self.rate / GIB:.1f} GiB/s "
            f"(touched again: {self.again_rate / GIB:.1f} GiB/s)"
            + (f"; {self.capped}" if self.capped else "")
        )


#: where a device that reports free pages to its host would be bound: a virtio balloon
#: (its ``features``: one character a bit, VIRTIO_BALLOON_F_REPORTING is bit 5) and Hyper-V's
#: balloon driver
VIRTIO_BALLOONS = Path("/sys/bus/virtio/drivers/virtio_balloon")
HV_BALLOON = Path("/sys/bus/vmbus/drivers/hv_balloon")
VIRTIO_BALLOON_F_REPORTING = 5


def reporting_device(virtio: Path = VIRTIO_BALLOONS, hyperv: Path = HV_BALLOON) -> bool | None:
    """Whether a device that reports free pages to the host is bound: a virtio balloon
    offering VIRTIO_BALLOON_F_REPORTING, or a Hyper-V balloon; None when neither bus is
    there to ask (no virtio or vmbus in sysfs: nothing says, so the order decides)."""
    if not virtio.parent.parent.is_dir() and not hyperv.parent.parent.is_dir():
        return None
    for feats in virtio.glob("virtio*/features"):
        try:
            bits = feats.read_text().strip()
        except OSError:
            continue
        if len(bits) > VIRTIO_BALLOON_F_REPORTING and bits[VIRTIO_BALLOON_F_REPORTING] == "1":
            return True
    # a bound vmbus device is a symlink named by its GUID (``module`` is a symlink too)
    return hyperv.is_dir() and any(p.is_symlink() and p.name.count("-") == 4 for p in hyperv.iterdir())


def reporting_order() -> str | None:
    """The free page reporting order in force, or None where nothing reports: no
    ``page_reporting`` parameter (a kernel built without it), -1, which newer kernels show
    until a device registers for reporting (bare metal, a VM with no virtio-balloon
    reporting), or no reporting device bound at all: older kernels show 11 there, which
    would read as held off and cost a touch of all free memory (200 s of the emulated
    guests of `ab` in the suite)."""
    try:
        with open(REPORTING_ORDER.path()) as f:
            order = f.read().strip()
    except OSError:
        return None
    if order.startswith("-") or reporting_device() is False:
        return None
    return order


def split(nbytes: int, n: int) -> list[range]:
    """Each of ``n`` workers' chunk offsets in ``nbytes`` (a whole number of chunks),
    dealt in turn so that they advance through memory together."""
    return [range(i * CHUNK, nbytes, n * CHUNK) for i in range(n)]


def touch(nbytes: int, threads: int | None = None) -> float:
    """Write every page of ``nbytes`` of fresh anonymous memory, freed after; the seconds it
    took. One thread per CPU iowall may use (``ctypes.memset`` releases the GIL): the host
    backs the pages' first touches in parallel, 10 GiB in 8.5-8.7 s with 2 threads here
    against 16.6-18.7 s with one (3 rounds each, reporting on for 30 s before each)."""
    nbytes = nbytes // CHUNK * CHUNK
    if nbytes <= 0:
        return 0.0
    n = threads or len(os.sched_getaffinity(0))
    start = time.monotonic()
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.c_char.from_buffer(buf)
    addr = ctypes.addressof(base)
    shares = split(nbytes, n)
    stop = threading.Event()
    done = [threading.Event() for _ in range(n)]

    def part(i: int) -> None:
        try:
            for off in shares[i]:
                if stop.is_set():
                    return
                ctypes.memset(addr + off, 1, CHUNK)
        finally:
            done[i].set()

    started = []
    try:
        for i in range(n):
            w = threading.Thread(target=part, args=(i,), daemon=True)
            started.append(i)  # before start(): an interrupt inside it may follow the spawn
            try:
                w.start()
            except RuntimeError:  # no thread was made: nothing will set its event
                started.pop()
                raise
        for i in started:
            done[i].wait()
    finally:  # interrupted: every worker stops after its chunk, before the memory goes. Its
        stop.set()  # own event, not join/is_alive: a join that SIGINT interrupted can leave
        # is_alive() False while the thread still runs (a segfault, seen). A worker not seen
        # to end within 10 s (never started) leaves the mapping to the process's exit.
        if all([done[i].wait(10) for i in started]):
            del base
            buf.close()
    return time.monotonic() - start


def hold_guest_memory(ks: KnobSession, need: int | None = None) -> GuestMemory | None:
    """On a VM with free page reporting (and as root): reporting off through ``ks`` (restored
    when ``ks`` is), the free memory touched once, or only ``need`` bytes of it (what the run
    can allocate, when the caller knows); what was done, or None where there is nothing to
    do. Touched even where reporting is already off: memory the guest has not touched since
    boot is not backed by the host either (a fresh CI VM); but not again when a touch of as
    much was made under the hold still in force (``earlier_touch``)."""
    before = reporting_order()
    if before is None or os.geteuid() != 0:
        return None
    if before != str(OFF_ORDER):
        ks.set(REPORTING_ORDER, OFF_ORDER)
    mark = earlier_touch(before)
    if mark is not None and (mark.get("complete", True) or (need is not None and int(mark["bytes"]) >= need)):
        return GuestMemory(
            before, int(mark["bytes"]), 0.0, earlier_s=max(0.0, time.time() - float(mark["at"]))
        )
    free = meminfo().get("MemFree", 0) - KEEP_FREE
    partial = need is not None and need < free
    free, capped = touchable(min(free, need) if partial and need is not None else free)
    seconds = touch(free)
    twice = min(AGAIN, max(0, free // CHUNK * CHUNK))
    again = touch(twice)
    touched = max(0, free // CHUNK * CHUNK)
    hold = _hold_entry()
    if hold is not None and not capped:
        mark_touch(hold, touched, complete=not partial)
    rate = twice / again if again > 0 else 0.0
    return GuestMemory(before, touched, seconds, rate, capped, need=need if partial and need else 0)


def _holds() -> set[str]:
    """The pending journal entries (by name) that will restore the reporting order: the
    holds in force; none when nothing iowall journaled holds it (set by hand)."""
    path = REPORTING_ORDER.path()
    return {p.name for p, a in journal.pending() if a.get("undo") == "write" and a.get("path") == path}


def _hold_entry() -> str | None:
    """The oldest hold in force (reporting has been off since it), or None."""
    holds = _holds()
    return min(holds) if holds else None


def mark_touch(hold: str, nbytes: int, complete: bool = True) -> None:
    """Record a touch made under the hold journaled as ``hold``: of all free memory
    (``complete``), or of what one run said it can allocate."""
    doc = {"boot": journal.boot_id(), "hold": hold, "bytes": nbytes, "at": time.time(), "complete": complete}
    TOUCHED.parent.mkdir(parents=True, exist_ok=True)
    write_text(TOUCHED, json.dumps(doc), what="guest-memory touch record")


def earlier_touch(order: str) -> dict[str, float | str] | None:
    """The record of a complete touch still in force: this boot, reporting off now (``order``
    as found) and the hold it was made under still pending, so that no page it touched has
    been reported since. None otherwise (touch again)."""
    if order != str(OFF_ORDER) or reporting_order() != str(OFF_ORDER):
        return None
    try:
        mark = json.loads(TOUCHED.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(mark, dict) or mark.get("boot") != journal.boot_id():
        return None
    return mark if mark.get("hold") in _holds() and "bytes" in mark and "at" in mark else None


def nothing_to_hold() -> str:
    """Why ``hold_guest_memory`` had nothing to do on this machine."""
    return "this machine does no free page reporting" if reporting_order() is None else "not root"


def touchable(free: int) -> tuple[int, str]:
    """How much of ``free`` may be touched, and why less: memory touched is charged to this
    process's memory cgroup, so inside a limited one only its room less KEEP_FREE_CG (the
    touch must never push the group into reclaim or its OOM killer)."""
    room = memory_room(locate())
    if room is None or room.free_bytes - KEEP_FREE_CG >= free:
        return free, ""
    cap = max(0, room.free_bytes - KEEP_FREE_CG)
    return cap, (
        f"touched only {fmt_bytes(cap // CHUNK * CHUNK)}: memory cgroup {room.path} "
        f"is limited to {fmt_bytes(room.limit_bytes)} "
        f"({fmt_bytes(room.usage_bytes)} in use)"
    )
