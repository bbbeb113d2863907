"""The knob syntax: what ``sysctl:vm.dirty_ratio``, ``sysfs:queue/max_sectors_kb``,
``sysfs:/sys/kernel/mm/transparent_hugepage/…``, ``xfs:extsize``, ``mkfs`` and ``mount`` mean,
as a value type, and which knobs iowall will touch at all (``allowed``, ``check_value``).

It is vocabulary (plans, ``--set``, compare's pairing and stored runs all speak it), so it
lives in ``vocab/``, under every layer; applying and restoring knobs is ``iowall.tuning.knob_session``.

Only knobs whose effect on the I/O paths is known are accepted: sysctls under ``vm.`` and
``fs.`` (less the ones that act, panic or weaken security) and a short named list; sysfs only
the bed's own queue and bdi attributes and transparent hugepages. A plan that arrives from
another machine cannot suspend, reboot or reconfigure this one (docs/safety.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .errors import IowallError, UserError

#: Kinds of knob and what each is written as.
KINDS = ("sysctl", "sysfs", "xfs", "mkfs", "mount")
#: Knobs without a ``kind:`` prefix.
BARE = ("mkfs", "mount")
#: XFS knobs understood after ``xfs:``.
XFS_KNOBS = ("extsize",)
#: sysctls that come in ratio/bytes pairs: writing one zeroes the other, so the old setting is
#: restored through whichever of the two was in force.
PAIRS = {
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
}
SYNTAX = (
    "sysctl:NAME (sysctl:vm.dirty_ratio), sysfs:ATTR of the bed's device "
    "(sysfs:queue/max_sectors_kb, sysfs:bdi/max_ratio), "
    "sysfs:/sys/kernel/mm/transparent_hugepage/ATTR, xfs:extsize, mkfs, mount"
)

#: sysctl namespaces iowall sets: the page cache, writeback, reclaim and filesystem limits.
SYSCTL_SPACES = ("vm.", "fs.")
#: sysctls outside those spaces whose effect on an I/O measurement is known.
SYSCTL_NAMED = (
    "kernel.numa_balancing",
    "kernel.sched_autogroup_enabled",
    "kernel.perf_event_max_sample_rate",
    "kernel.perf_cpu_time_max_percent",
)
#: refused although under vm./fs.: writing them is an action with nothing to restore
#: (drop_caches, compact_memory, stat_refresh, binfmt_misc), or it can panic the machine or
#: weaken its security.
SYSCTL_REFUSED = (
    "vm.drop_caches",
    "vm.compact_memory",
    "vm.stat_refresh",
    "vm.panic_on_oom",
    "vm.mmap_min_addr",
    "vm.unprivileged_userfaultfd",
    "vm.oom_kill_allocating_task",
    "vm.memory_failure_early_kill",
    "vm.memory_failure_recovery",
    "fs.suid_dumpable",
)
SYSCTL_REFUSED_SPACES = ("fs.binfmt_misc.", "fs.protected_", "fs.verity.")
#: sysfs trees of the bed's own device that knobs may write (relative to /sys/class/block/DEV).
DEVICE_TREES = ("queue", "bdi")
#: absolute sysfs trees knobs may write.
SYSFS_TREES = ("/sys/kernel/mm/transparent_hugepage/",)
#: integer ranges the kernel documents (Documentation/admin-guide/sysctl/vm.rst,
#: ABI/stable/sysfs-block, ABI/testing/sysfs-class-bdi); None: unbounded on that side.
RANGES: dict[str, tuple[int | None, int | None]] = {
    "sysctl:vm.dirty_ratio": (0, 100),
    "sysctl:vm.dirty_background_ratio": (0, 100),
    "sysctl:vm.dirty_bytes": (8192, None),  # two pages; 0 is refused (set dirty_ratio)
    "sysctl:vm.dirty_background_bytes": (0, None),
    "sysctl:vm.dirty_expire_centisecs": (0, None),
    "sysctl:vm.dirty_writeback_centisecs": (0, None),
    "sysctl:vm.dirtytime_expire_seconds": (0, None),
    "sysctl:vm.swappiness": (0, 200),
    "sysctl:vm.vfs_cache_pressure": (0, None),
    "sysctl:vm.watermark_scale_factor": (1, 3000),
    "sysctl:vm.watermark_boost_factor": (0, None),
    "sysctl:vm.min_free_kbytes": (0, None),
    "sysctl:vm.overcommit_memory": (0, 2),
    "sysctl:vm.page-cluster": (0, 31),
    "sysctl:vm.compaction_proactiveness": (0, 100),
    "sysctl:vm.extfrag_threshold": (0, 1000),
    "sysctl:vm.laptop_mode": (0, None),
    "sysctl:vm.zone_reclaim_mode": (0, 15),
    "sysctl:kernel.numa_balancing": (0, 3),
    "sysctl:kernel.sched_autogroup_enabled": (0, 1),
    "sysctl:kernel.perf_cpu_time_max_percent": (0, 100),
    "sysctl:kernel.perf_event_max_sample_rate": (1, None),
    "sysfs:queue/read_ahead_kb": (0, None),
    "sysfs:queue/nr_requests": (4, None),  # BLKDEV_MIN_RQ
    "sysfs:queue/max_sectors_kb": (4, None),  # and at most max_hw_sectors_kb (tuning/knob_session.py)
    "sysfs:queue/rq_affinity": (0, 2),
    "sysfs:queue/nomerges": (0, 2),
    "sysfs:queue/rotational": (0, 1),
    "sysfs:queue/iostats": (0, 1),
    "sysfs:queue/add_random": (0, 1),
    "sysfs:queue/io_poll_delay": (-1, None),
    "sysfs:queue/wbt_lat_usec": (-1, None),
    "sysfs:bdi/read_ahead_kb": (0, None),
    "sysfs:bdi/min_ratio": (0, 100),
    "sysfs:bdi/max_ratio": (0, 100),
    "sysfs:bdi/min_ratio_fine": (0, 1_000_000),
    "sysfs:bdi/max_ratio_fine": (0, 1_000_000),
    "sysfs:bdi/strict_limit": (0, 1),
    "sysfs:bdi/min_bytes": (0, None),
    "sysfs:bdi/max_bytes": (0, None),
}


@dataclass(frozen=True)
class Knob:
    """One knob, by kind and name (``Knob("sysctl", "vm.dirty_ratio")``)."""

    kind: str
    name: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind in BARE else f"{self.kind}:{self.name}"

    @property
    def shapes_bed(self) -> bool:
        """mkfs and mount options are applied by provisioning a bed with them."""
        return self.kind in BARE

    @property
    def needs_bed(self) -> bool:
        """Relative sysfs attributes and XFS hints act on the bed; the rest are global."""
        return self.kind == "xfs" or (self.kind == "sysfs" and not self.name.startswith("/"))

    def path(self, device_dir: str = "") -> str:
        """The file a sysctl or sysfs knob is written to; a relative sysfs attribute is
        under ``device_dir`` (``/sys/class/block/<dev>``, see ``knobs.device_sysfs_dir``)."""
        if self.kind == "sysctl":
            return "/proc/sys/" + self.name.replace(".", "/")
        if self.kind == "sysfs":
            if self.name.startswith("/"):
                return self.name
            if not device_dir:
                raise UserError(f"knob {self} needs a bed with a block device (ram or loop)")
            return os.path.join(device_dir, self.name)
        raise IowallError(f"{self} is not a file knob")


def looks_like_knob(name: str) -> bool:
    """True for names in knob syntax (a known ``kind:`` prefix or a bare knob name)."""
    kind, sep, _ = name.partition(":")
    return name in BARE or (bool(sep) and kind in KINDS)


def parse_knob(name: str) -> Knob:
    """``sysctl:vm.dirty_ratio`` → Knob; a UserError for anything that is not a knob."""
    if name in BARE:
        return Knob(name)
    kind, sep, rest = name.partition(":")
    if not sep or kind not in KINDS or kind in BARE:
        raise UserError(f"unknown knob {name!r}: use {SYNTAX}")
    if not rest:
        raise UserError(f"knob {name!r} needs a name after '{kind}:'")
    if kind == "sysctl":
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", rest) or ".." in rest:
            raise UserError(f"knob {name!r}: a sysctl name looks like vm.dirty_ratio")
        _allowed_sysctl(name, rest)
    elif kind == "sysfs":
        rest = _allowed_sysfs(name, rest)
    elif kind == "xfs" and rest not in XFS_KNOBS:
        raise UserError(
            f"unknown knob {name!r}: the xfs knobs are " + ", ".join(f"xfs:{k}" for k in XFS_KNOBS)
        )
    return Knob(kind, rest)


def _allowed_sysctl(name: str, rest: str) -> None:
    """A UserError for a sysctl outside the spaces and names iowall knows the effect of."""
    if rest in SYSCTL_REFUSED or rest.startswith(SYSCTL_REFUSED_SPACES):
        raise UserError(
            f"refusing knob {name!r}: iowall does not write {rest} (an action, a "
            "panic or a security setting, not an I/O setting; docs/safety.md)"
        )
    if not (rest.startswith(SYSCTL_SPACES) or rest in SYSCTL_NAMED):
        raise UserError(
            f"refusing knob {name!r}: iowall sets sysctls under vm. and fs. and "
            f"{', '.join(SYSCTL_NAMED)} only (docs/safety.md)"
        )


def _allowed_sysfs(name: str, rest: str) -> str:
    """The normalised sysfs name, or a UserError for a file outside the bed's queue and bdi
    attributes and transparent hugepages."""
    if rest.startswith("/"):
        norm = os.path.normpath(rest)
        if not any(norm.startswith(t) for t in SYSFS_TREES):
            hint = (
                " (for the bed's device write it relative: sysfs:queue/ATTR or sysfs:bdi/ATTR)"
                if norm.startswith(("/sys/block/", "/sys/class/block/", "/sys/class/bdi/", "/sys/devices/"))
                else ""
            )
            raise UserError(
                f"refusing knob {name!r}: iowall writes sysfs only under "
                f"{', '.join(SYSFS_TREES)} and the bed's own queue/ and bdi/ "
                f"attributes{hint} (docs/safety.md)"
            )
        return norm
    parts = rest.split("/")
    if ".." in parts or "." in parts or "" in parts:
        raise UserError(f"knob {name!r}: a relative sysfs path is a plain path such as queue/max_sectors_kb")
    if parts[0] not in DEVICE_TREES or len(parts) < 2 or (parts[0] == "bdi" and len(parts) != 2):
        raise UserError(
            f"refusing knob {name!r}: of the bed's device iowall writes only "
            "queue/ATTR (and queue/iosched/ATTR) and bdi/ATTR (docs/safety.md)"
        )
    return rest


def check_value(knob: Knob, value: object) -> None:
    """A UserError for a value outside what the kernel documents for ``knob`` (RANGES), or a
    non-integer for a ranged knob; values the kernel alone can judge pass through."""
    rng = RANGES.get(str(knob))
    if rng is None:
        return
    lo, hi = rng
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise UserError(f"knob {knob} = {value!r}: give a whole number")
    try:
        v = int(str(value).strip())
    except ValueError:
        raise UserError(f"knob {knob} = {value!r}: give a whole number") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        takes = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
        raise UserError(f"knob {knob} = {value}: out of range (the kernel takes {takes})")
