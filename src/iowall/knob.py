"""The knob syntax: what ``sysctl:vm.dirty_ratio``, ``sysfs:queue/max_sectors_kb``,
``sysfs:/sys/ABSOLUTE/PATH``, ``xfs:extsize``, ``mkfs`` and ``mount`` mean, as a value type.

It is vocabulary (plans, ``--set``, compare's pairing and stored runs all speak it), so it
lives in the model layer; applying and restoring knobs is ``iowall.knobs``.
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
SYNTAX = ("sysctl:NAME (sysctl:vm.dirty_ratio), sysfs:ATTR of the bed's device "
          "(sysfs:queue/max_sectors_kb), sysfs:/sys/ABSOLUTE/PATH, xfs:extsize, mkfs, mount")


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
    elif kind == "sysfs":
        if rest.startswith("/"):
            norm = os.path.normpath(rest)
            if not norm.startswith("/sys/"):
                raise UserError(f"knob {name!r}: an absolute sysfs path must be under /sys/")
            rest = norm
        elif ".." in rest.split("/"):
            raise UserError(f"knob {name!r}: a relative sysfs path may not contain '..'")
    elif kind == "xfs" and rest not in XFS_KNOBS:
        raise UserError(f"unknown knob {name!r}: the xfs knobs are "
                        + ", ".join(f"xfs:{k}" for k in XFS_KNOBS))
    return Knob(kind, rest)
