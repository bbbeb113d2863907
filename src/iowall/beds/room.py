"""Beds that live in memory (ram: an image in /dev/shm; tmpfs) are charged to the memory
cgroup of the process that fills them. One that needs more than the group allows is refused
before anything is allocated: inside the limit, the image's fallocate is OOM-killed and
leaves the image behind."""

from __future__ import annotations

from ..machine.cgroups import MemoryRoom, locate, memory_room
from ..vocab.errors import UserError
from ..vocab.units import MIB, fmt_bytes

#: Kinds whose size is memory charged to iowall's group (the ram image, tmpfs pages).
IN_MEMORY = ("ram", "tmpfs")
#: Left to the rest of the run inside the group: iowall itself, fio, their page cache.
MARGIN = 64 * MIB


def refusal(kind: str, need: int, room: MemoryRoom, least: int = 0) -> str | None:
    """Pure: the one-line reason a ``kind`` bed of ``need`` bytes does not fit in ``room``,
    or None when it does (with MARGIN to spare); a smaller size is suggested only when one of
    at least ``least`` bytes would fit."""
    if need + MARGIN <= room.free_bytes:
        return None
    fits = (room.free_bytes - MARGIN) // MIB * MIB
    limit = "memory.max/high" if room.version == 2 else "memory.limit_in_bytes"
    advice = (
        f"give the bed at most {fmt_bytes(fits)} (--size / [bed] size), or run iowall outside that cgroup"
        if fits >= max(least, 1)
        else "run iowall outside that cgroup"
    )
    return (
        f"the {kind} bed needs {fmt_bytes(need)} of memory, but this process's memory "
        f"cgroup {room.path} (cgroup v{room.version}) is limited to "
        f"{fmt_bytes(room.limit_bytes)} ({limit}) with {fmt_bytes(room.usage_bytes)} in use "
        f"({fmt_bytes(room.reclaimable_bytes)} of it reclaimable cache): {advice}"
    )


def check_memory_room(kind: str, need: int, least: int = 0) -> None:
    """A UserError when an in-memory bed of ``need`` bytes (``least``: the smallest it may be)
    does not fit in the memory cgroup this process runs in (the tightest limit on its path)."""
    if kind not in IN_MEMORY:
        return
    room = memory_room(locate())
    reason = refusal(kind, need, room, least) if room is not None else None
    if reason:
        raise UserError(reason)
