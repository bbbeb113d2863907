"""A real block device as the bed (``--bed device:/dev/X``), behind the guard: checked, wiped
only when allow-listed and ``--wipe`` is given, then formatted and mounted (a filesystem bed)
or handed to fio raw (``raw_devices``: tag-fairness, and bdev-rwmix's partitions form)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..machine.proc import need, run
from ..vocab.errors import UserError
from . import blockdev as bd
from .base import Bed, BedSpec
from .guard import Verdict, check_all

#: The refusal of a device list where a filesystem is made.
ONE_DEVICE = (
    "--bed {spec}: a filesystem bed takes one device; a list of devices is the "
    "partitions form, for raw recipes (bdev-rwmix)"
)


def device_facts(name: str) -> dict[str, Any]:
    """Model, serial, vendor (when sysfs has them), size and rotational of a device; a
    partition's come from its disk."""
    disk = bd.parent(name) or name
    d = bd.block_dir(disk)
    out: dict[str, Any] = {
        "name": name,
        "size_bytes": bd.size_bytes(name),
        "rotational": bd.read(d / "queue" / "rotational") == "1",
        "removable": bd.read(d / "removable") == "1",
    }
    if disk != name:
        out["disk"] = disk
    for key, p in (
        ("model", d / "device" / "model"),
        ("vendor", d / "device" / "vendor"),
        ("serial", d / "device" / "serial"),
        ("serial", d / "serial"),
        ("wwid", d / "device" / "wwid"),
    ):
        v = bd.read(p)
        if v and key not in out:
            out[key] = v
    return out


def wipe(v: Verdict) -> str:
    """``wipefs -a`` on a device the guard let through with signatures; returns wipefs's own
    listing of what it erased. A partition table's partitions are re-read and must be gone."""
    had = bd.partitions(v.name)
    listing = run([need("wipefs", "util-linux"), "-a", v.path]).stdout.strip()
    if had:
        run(["blockdev", "--rereadpt", v.path], check=False)
        left = bd.partitions(v.name)
        if left:
            raise UserError(
                f"{v.path}: wiped its partition table but the kernel still shows "
                f"{', '.join(left)}: run 'partx -d {v.path}' and retry"
            )
    return listing


def guard_devices(bed: Bed, spec: BedSpec, need_bytes: int) -> list[Verdict]:
    """Guard every device of the spec, wipe the allowed ones that carry signatures (saying what
    was erased in the bed's notes), and record their facts."""
    if os.geteuid() != 0:
        raise UserError("a device bed needs root (it writes the device): run as root")
    verdicts = check_all(spec.paths, need_bytes=need_bytes, wipe=spec.wipe)
    facts = []
    for v in verdicts:
        f = {"path": v.path, **device_facts(v.name), "guard": v.facts()}
        if v.signatures:
            listing = wipe(v)
            f["wiped"] = listing.splitlines()
            bed.notes.append(
                f"wiped {v.path} before use (listed in the allow-list, --wipe): "
                + "; ".join(listing.splitlines())
            )
        facts.append(f)
    bed.facts.update(backing="device", devices=facts)
    return verdicts


def provision_device(
    bed: Bed, spec: BedSpec, fs: str, need_bytes: int, mkfs_opts: str, mount_opts: str
) -> None:
    """Guard → (wipe) → mkfs → mount on a private directory; the teardown unmounts and erases
    the filesystem iowall made, so the device is left blank for the next run."""
    if len(spec.paths) != 1:
        raise UserError(ONE_DEVICE.format(spec=spec))
    (v,) = guard_devices(bed, spec, need_bytes)
    bed.record_device(v.path)
    bed.remember({"undo": "wipefs", "device": v.path, "devno": bed.devno})
    bed.format_and_mount(v.path, fs, mkfs_opts, mount_opts)
    model = bed.facts["devices"][0].get("model") or v.name
    bed.notes.append(
        f"device bed: {fs} made on {v.path} ({model}); it is erased again "
        "(wipefs -a) when the bed is torn down"
    )


def check_count(spec: BedSpec, count: int, recipe: str) -> None:
    """A UserError when a device bed gives another number of devices than ``recipe`` takes:
    said before the guard looks at any of them (a recipe's options step calls it)."""
    if spec.kind == "device" and len(spec.paths) != count:
        raise UserError(
            f"{recipe} needs {count} device{'s' if count != 1 else ''}"
            + (" (one per partition)" if count > 1 else "")
            + f", --bed {spec} gives {len(spec.paths)}"
            + (
                f": list {count} partitions, e.g. device:/dev/sdb1,/dev/sdb2,/dev/sdb3,/dev/sdb4"
                if count > 1
                else ""
            )
        )


@contextlib.contextmanager
def raw_devices(
    spec: BedSpec, *, need_bytes: int, count: int | None = None, recipe: str = ""
) -> Iterator[Bed]:
    """The devices of a device bed, guarded (and wiped if allowed), with no filesystem: fio
    writes the block device nodes. ``count`` devices exactly when given."""
    if count is not None:
        check_count(spec, count, recipe)
    bed = Bed(spec)
    try:
        guard_devices(bed, spec, need_bytes)
        bed.record_device(spec.paths[0])
        bed.devices = [bd.kernel_name(p) or os.path.basename(p) for p in spec.paths]
        bed.path = bed.private_dir("raw-")
        bed.facts.update(fs="none (raw block devices)", partitions=list(spec.paths))
        yield bed
    finally:
        bed.teardown()
