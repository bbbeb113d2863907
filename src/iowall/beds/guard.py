"""The guard in front of a device bed: every check runs before anything is written, and any
failure is a UserError (exit 2) naming the reason and what to do. Mounted, held, system (/,
/boot, swap) and busy devices are refused outright; a device carrying a signature (as
``wipefs -n`` sees it) only with an allow-list entry *and* ``--wipe`` — the rules mkfs tools
and fio (``allow_mounted_write``) follow, made strict because iowall writes without asking."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..machine.proc import need, run
from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes
from . import blockdev as bd

#: The allow-list; ``IOWALL_DEVICES_FILE`` overrides it (tests, non-standard setups).
DEVICES_FILE = "/etc/iowall/devices"
DEVICES_ENV = "IOWALL_DEVICES_FILE"

#: How a wipefs signature type reads in a sentence.
KINDS = {
    "dos": "a dos partition table",
    "gpt": "a gpt partition table",
    "PMBR": "a protective MBR (gpt)",
    "linux_raid_member": "a RAID member (md) signature",
    "LVM2_member": "an LVM physical volume signature",
    "swap": "a swap signature",
    "isw_raid_member": "a RAID member (Intel) signature",
    "ddf_raid_member": "a RAID member (DDF) signature",
    "crypto_LUKS": "a LUKS header",
    "zfs_member": "a ZFS member signature",
    "bcache": "a bcache signature",
}


@dataclass(frozen=True)
class Host:
    """Where the kernel's view is read from (a fake tree in tests of what cannot be made here)."""

    sys: Path = bd.SYS
    mountinfo: str = "/proc/self/mountinfo"
    swaps: str = "/proc/swaps"


@dataclass(frozen=True)
class Verdict:
    """What the guard found on a device it let through."""

    path: str
    name: str
    size_bytes: int
    signatures: tuple[dict[str, Any], ...] = ()
    allow_listed: bool = False
    passed: tuple[str, ...] = field(default_factory=tuple)

    def facts(self) -> dict[str, Any]:
        return {
            "checks_passed": list(self.passed),
            "allow_listed": self.allow_listed,
            "signatures_found": [describe(s) for s in self.signatures],
        }


def devices_file() -> str:
    return os.environ.get(DEVICES_ENV) or DEVICES_FILE


def allowed(path: str) -> bool:
    """Whether the allow-list names this device (matched by device number, so a
    /dev/disk/by-id/… entry allows /dev/sdb). Entries that do not exist now are skipped."""
    try:
        text = Path(devices_file()).read_text()
    except OSError:
        return False
    want = os.stat(path).st_rdev
    for line in text.splitlines():
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        try:
            st = os.stat(entry)
        except OSError:
            continue
        if bd.kernel_name(entry) and st.st_rdev == want:
            return True
    return False


def not_block(path: str) -> str | None:
    if not os.path.exists(path):
        return "no such device: give a block device such as /dev/sdb"
    if bd.kernel_name(path) is None:
        return "not a block device: give a block device such as /dev/sdb"
    return None


def system_use(name: str, host: Host = Host()) -> str | None:
    """The device, one of its partitions or the storage under it holds /, /boot or active swap
    (a partition's parent disk counts: /dev/vda is refused when /dev/vda1 is /)."""
    mine = bd.extents(name, host.sys)
    for point, other in bd.mounts(host.mountinfo, host.sys):
        if point in bd.SYSTEM_MOUNTS and bd.overlap(mine, bd.extents(other, host.sys)):
            return (
                f"it holds {point} (mounted from /dev/{other}): iowall never writes to the "
                "running system's disk; give a spare disk"
            )
    for other in bd.swaps(host.swaps, host.sys):
        if bd.overlap(mine, bd.extents(other, host.sys)):
            return (
                f"it holds active swap (/dev/{other} in /proc/swaps): swapoff it first, "
                "or give another device"
            )
    return None


def mounted(name: str, host: Host = Host()) -> str | None:
    """The device, a partition of it, a loop device over the same bytes, or a device stacked
    on it is mounted."""
    mine = bd.extents(name, host.sys)
    for point, other in bd.mounts(host.mountinfo, host.sys):
        if bd.overlap(mine, bd.extents(other, host.sys)):
            via = "" if other == name else f" through /dev/{other}, which shares its blocks"
            return f"it is mounted at {point}{via}: unmount it first"
    return None


def held(name: str, host: Host = Host()) -> str | None:
    """Something is stacked on the device or a partition of it (device-mapper, md, LVM):
    sysfs ``holders`` is not empty."""
    for n in [name, *bd.partitions(name, host.sys)]:
        holders = bd.listing(n, "holders", host.sys)
        if holders:
            return (
                f"/dev/{n} is held by {', '.join(holders)} (device-mapper, md or LVM): "
                "stop what is stacked on it first"
            )
    return None


def read_only(name: str, host: Host = Host()) -> str | None:
    if bd.read(bd.block_dir(name, host.sys) / "ro") == "1":
        return "it is read-only (sysfs ro=1): give a writable device"
    return None


def busy(path: str) -> str | None:
    """The kernel's own word: an exclusive open fails while anything holds the device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
    except OSError as e:
        if e.errno == errno.EBUSY:
            return (
                "it is busy (an exclusive open fails: something holds it open): find the "
                "user with 'lsof' or 'fuser -v', stop it, and retry"
            )
        return f"it cannot be opened ({e.strerror})"
    os.close(fd)
    return None


def too_small(name: str, need_bytes: int, host: Host = Host()) -> str | None:
    have = bd.size_bytes(name, host.sys)
    if have < need_bytes:
        return (
            f"it has {fmt_bytes(have)} and the bed needs {fmt_bytes(need_bytes)}: "
            "give a larger device (or a smaller --size)"
        )
    return None


def signatures(path: str) -> list[dict[str, Any]]:
    """What ``wipefs -n --json`` finds: filesystems, partition tables, RAID, LVM, swap…"""
    out = run([need("wipefs", "util-linux"), "-n", "--json", path]).stdout.strip()
    if not out:
        return []
    sigs: list[dict[str, Any]] = json.loads(out).get("signatures", [])
    return sigs


def describe(sig: dict[str, Any]) -> str:
    t = str(sig.get("type", "?"))
    what = KINDS.get(t) or (f"an {t} filesystem" if t[:1].lower() in "aeiox" else f"a {t} filesystem")
    return f"{what} at offset {sig.get('offset', '?')}"


def check(path: str, *, need_bytes: int, wipe: bool, host: Host = Host()) -> Verdict:
    """Run every check on ``path``; a UserError for the first that fails, else the Verdict."""

    def refuse(reason: str) -> UserError:
        return UserError(f"refusing {path}: {reason}")

    reason = not_block(path)
    if reason:
        raise refuse(reason)
    name = bd.kernel_name(path, host.sys) or ""
    steps: list[tuple[str, Callable[[], str | None]]] = [
        ("not /, /boot or swap", lambda: system_use(name, host)),
        ("not mounted", lambda: mounted(name, host)),
        ("no holders", lambda: held(name, host)),
        ("writable", lambda: read_only(name, host)),
        ("not busy", lambda: busy(path)),
        (f"at least {fmt_bytes(need_bytes)}", lambda: too_small(name, need_bytes, host)),
    ]
    passed = []
    for what, step in steps:
        reason = step()
        if reason:
            raise refuse(reason)
        passed.append(what)
    sigs = signatures(path)
    listed = allowed(path)
    if sigs:
        found = "; ".join(describe(s) for s in sigs)
        if not listed:
            raise refuse(
                f"it carries {found} (wipefs -n); list it in {devices_file()} and pass --wipe to overwrite it"
            )
        if not wipe:
            raise refuse(
                f"it carries {found} (wipefs -n) and is listed in {devices_file()}: pass --wipe to erase it"
            )
        passed.append(f"signatures allowed to be wiped (listed in {devices_file()}, --wipe)")
    else:
        passed.append("no signature (wipefs -n)")
    return Verdict(
        path=path,
        name=name,
        size_bytes=bd.size_bytes(name, host.sys),
        signatures=tuple(sigs),
        allow_listed=listed,
        passed=tuple(passed),
    )


def check_all(paths: list[str], *, need_bytes: int, wipe: bool) -> list[Verdict]:
    """Check every device, and refuse a list whose devices share blocks with each other."""
    verdicts = [check(p, need_bytes=need_bytes, wipe=wipe) for p in paths]
    for i, a in enumerate(verdicts):
        for b in verdicts[i + 1 :]:
            if bd.overlap(bd.extents(a.name), bd.extents(b.name)):
                raise UserError(
                    f"refusing {a.path} and {b.path}: they share blocks (the same "
                    "device, or one inside the other); give separate devices"
                )
    return verdicts
