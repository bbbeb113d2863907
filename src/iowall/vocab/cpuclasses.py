"""Vocabulary of CPU attribution: the classes of thread a point's CPU time is split into (the
``tasks`` probe measures them, ``explain`` names them), in the order reports list them."""

from __future__ import annotations

#: class → how reports name it.
TITLES: dict[str, str] = {
    "workload": "workload threads (fio, engine)",
    "io_uring": "io_uring workers",
    "loop": "loop workers of the bed",
    "flusher": "flush kworkers of the bed",
    "kswapd": "kswapd",
    "fs": "filesystem workers",
    "kthreads": "other kernel threads",
    "iowall": "iowall itself (probes)",
    "neighbours": "other processes (neighbours)",
    "steal": "steal (hypervisor)",
}
#: Every class a thread can be in (plus steal), in report order.
CLASSES: tuple[str, ...] = tuple(TITLES)
#: What no class accounts for.
UNATTRIBUTED = "unattributed"
