"""How ``limits`` sizes its points for the machine it is on: the job counts, the bed, the bytes
each write and read point moves (from the kernel's dirty threshold read after provisioning, so
buffered writes cross it), and the memory-copy ceiling's threads; every number it picks is
explained in notes. Pure arithmetic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...vocab.errors import UserError
from ...vocab.units import GIB, MIB, fmt_bytes

BS = 2 << 20
FILES_PER_JOB = 10
#: Buffered writes should move at least this multiple of the dirty threshold.
DIRTY_MULTIPLE = 2.0
#: Points that would last under ~2 s are too short to explain (start-up and ends weigh too
#: much): every I/O point runs for at least this long (fio time_based, pass after pass over
#: its files); a full run's write pass still moves twice the dirty threshold, which this
#: machine copied in 0.6 s, so every point it prints is explained (docs/usage.md).
QUICK_RUNTIME_S = 3
WRITE_RUNTIME_S = 3
READ_RUNTIME_S = 3


#: The fewest distinct job counts a default sweep has: enough for a USL fit (iowall scaling).
MIN_JOB_COUNTS = 4


def _powers(cpus: int) -> list[int]:
    """Powers of two up to twice the CPU count, the CPU count itself and twice it."""
    out, j = [], 1
    while j <= 2 * cpus:
        out.append(j)
        j *= 2
    return sorted(set(out + [cpus, 2 * cpus]))


def default_jobs(cpus: int, quick: bool = False) -> list[int]:
    """``_powers(cpus)``; where that gives fewer than MIN_JOB_COUNTS counts (small machines),
    1, 2, 3 … up to MIN_JOB_COUNTS, so that `iowall scaling` can fit the USL. ``--quick``
    keeps ``_powers(cpus)`` (1, 2 and 4 on 2 CPUs): the scaling is seen, not fitted."""
    jobs = _powers(cpus)
    return jobs if quick or len(jobs) >= MIN_JOB_COUNTS else list(range(1, MIN_JOB_COUNTS + 1))


def describe_jobs(cpus: int, quick: bool = False) -> str:
    """Why ``default_jobs(cpus, quick)`` picked what it picked, for the report's notes."""
    cpu_words = f"{cpus} CPU" + ("" if cpus == 1 else "s")
    powers = f"powers of two up to twice the {cpu_words}, and the CPU count itself"
    if len(_powers(cpus)) >= MIN_JOB_COUNTS:
        return powers
    if quick:
        return (
            f"{powers} (--quick: a full run adds counts up to {MIN_JOB_COUNTS}, the "
            "fewest a scaling fit needs)"
        )
    return (
        f"every count up to {MIN_JOB_COUNTS}: powers of two up to twice the "
        f"{cpu_words} give fewer than the {MIN_JOB_COUNTS} counts a scaling fit needs"
    )


def parse_jobs(text: str, what: str = "--jobs") -> list[int]:
    """``1,2,4`` → [1, 2, 4]; every count a positive whole number (``what``: the option, for
    the messages)."""
    try:
        jobs = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UserError(f"{what} {text!r}: give whole numbers separated by commas, e.g. 1,2,4") from None
    if not jobs or jobs[0] < 1:
        raise UserError(f"{what} {text!r}: job counts must be at least 1")
    return jobs


@dataclass(frozen=True)
class Sizing:
    """How much data each point moves and why; ``notes`` say what was scaled."""

    bed_bytes: int
    write_bytes: int
    read_bytes: int
    jobs: tuple[int, ...]
    memcopy_threads: tuple[int, ...]
    memcopy_bytes_per_thread: int
    quick: bool
    #: time-based points: seconds each write / read point runs (0: until its bytes are moved)
    write_runtime_s: int = 0
    read_runtime_s: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def plan_bed_size(
    *,
    bed_kind: str,
    mem_available: int,
    dirty_ratio: int,
    dirty_bytes: int,
    quick: bool,
    size_override: int | None,
) -> int:
    """Size of the bed to provision: big enough for the write set (2x the dirty threshold the
    kernel will have once the bed exists) plus the read set, within half of free memory for a
    RAM-backed bed. Pure arithmetic; the threshold is re-read after provisioning."""
    if size_override:
        return size_override
    if quick:
        return 5 * GIB
    read = 4 * GIB
    if dirty_bytes:
        need = int((DIRTY_MULTIPLE * dirty_bytes + read) * 1.15) + 256 * MIB
    elif bed_kind == "ram":  # the image itself is not dirtyable memory: it lowers the threshold
        r = dirty_ratio / 100.0
        need = int(
            (1.15 * (DIRTY_MULTIPLE * r * mem_available + read) + 256 * MIB) / (1 + 1.15 * DIRTY_MULTIPLE * r)
        )
    else:
        need = int((DIRTY_MULTIPLE * dirty_ratio / 100.0 * mem_available + read) * 1.15) + 256 * MIB
    need = max(need, 4 * GIB)
    if bed_kind == "ram":
        need = min(need, mem_available // 2)
    return need >> 20 << 20


def memory_need(bed_bytes: int, mem_total: int) -> int:
    """The most memory a limits run on a bed of ``bed_bytes`` can allocate: the bed twice (a
    ram bed's image, and the page cache of the files in it, which cannot exceed the bed),
    the memory-copy buffers (at most a sixteenth of memory, ``size_points``) and 1 GiB for
    the generators; what the guest-memory hold touches."""
    return 2 * bed_bytes + mem_total // 16 + GIB


def size_points(
    *, free_bytes: int, dirty_threshold: int, cpus: int, mem_total: int, jobs: Sequence[int], quick: bool
) -> Sizing:
    """Data per write and read point from the bed's free space and ``dirty_threshold``, the
    kernel's own figure (nr_dirty_threshold in /proc/vmstat, sysinfo.dirty_thresholds_bytes)
    read after the bed was provisioned; every number it picks is explained in ``notes``."""
    notes: list[str] = []
    max_jobs = max(jobs)
    usable = int(free_bytes * 0.85)
    read = min((2 * GIB) if quick else (4 * GIB), int(usable * 0.4)) // BS * BS
    read = max(read, max_jobs * 4 * BS)
    if quick:
        write = 2 * GIB
    else:
        write = int(DIRTY_MULTIPLE * dirty_threshold)
    write = max(write, max_jobs * FILES_PER_JOB * BS)
    if write + read > usable:
        write = usable - read
    if write < max_jobs * FILES_PER_JOB * BS:
        raise UserError(
            f"the bed has {fmt_bytes(free_bytes)} free: too little for {max_jobs} jobs "
            f"x {FILES_PER_JOB} files of 2 MiB blocks; pass a larger --size or fewer --jobs"
        )
    ratio = write / dirty_threshold if dirty_threshold else float("inf")
    notes.append(
        f"each write point writes {fmt_bytes(write)} in all ({FILES_PER_JOB} files per job), "
        f"{ratio:.1f}x the dirty threshold ({fmt_bytes(dirty_threshold)}, nr_dirty_threshold "
        "read from /proc/vmstat after the bed was provisioned); buffered writes end with "
        "fsync, so their time includes writeback"
    )
    if ratio < 1.0:
        notes.append(
            "the write set is smaller than the dirty threshold: buffered writes are "
            "absorbed by the page cache before any throttling, and their figure is "
            "mostly memory copy plus the fsync" + (" of each pass (--quick)" if quick else "")
        )
    elif ratio < DIRTY_MULTIPLE * 0.95:
        notes.append(
            f"the bed could not hold {DIRTY_MULTIPLE:.0f}x the dirty threshold: "
            "pass a larger --size for a longer throttled phase"
        )
    write_rt = QUICK_RUNTIME_S if quick else WRITE_RUNTIME_S
    read_rt = QUICK_RUNTIME_S if quick else READ_RUNTIME_S
    notes.append(
        f"each read point reads for {read_rt} s, pass after pass over a pool of "
        f"{fmt_bytes(read)} of files laid out once (its pages dropped before each "
        "pass, so every pass reads the device), after dropping caches"
    )
    if write_rt:
        what = "--quick: each" if quick else "each"
        notes.append(
            f"{what} write point writes for {write_rt} s, pass after pass over "
            "its files, each pass ending with fsync as fio's end_fsync does (a "
            "buffered pass overwrites the clean pages the last one left in the page "
            "cache), so that no point is too short to explain (under 2 s)"
        )
    mc_threads = tuple(sorted({min(j, cpus) for j in jobs}))
    mc_bytes = min(512 * MIB, max(64 * MIB, (mem_total // 16) // (2 * max(mc_threads)))) >> 20 << 20
    return Sizing(
        bed_bytes=0,
        write_bytes=write,
        read_bytes=read,
        jobs=tuple(jobs),
        memcopy_threads=mc_threads,
        memcopy_bytes_per_thread=mc_bytes,
        quick=quick,
        write_runtime_s=write_rt,
        read_runtime_s=read_rt,
        notes=tuple(notes),
    )
