"""What every bed shares: its spec, its facts, and a stack of undo steps torn down in reverse."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..machine import journal
from ..machine.proc import need, run
from ..machine.signals import shielded
from ..vocab.errors import IowallError, UserError

KINDS = ("ram", "loop", "tmpfs", "dir", "device")
FILESYSTEMS = ("xfs", "ext4", "btrfs")
#: Queue attributes recorded as bed facts (they shape what the block layer does).
QUEUE_ATTRS = (
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "nr_requests",
    "scheduler",
    "logical_block_size",
    "physical_block_size",
    "rotational",
    "nomerges",
    "read_ahead_kb",
    "wbt_lat_usec",
    "max_segments",
    "max_segment_size",
)
MKFS = {
    "xfs": ("mkfs.xfs", "xfsprogs", ["-f", "-q"]),
    # Lazy inode-table and journal init would run in a kworker during the measurement.
    "ext4": ("mkfs.ext4", "e2fsprogs", ["-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"]),
    "btrfs": ("mkfs.btrfs", "btrfs-progs", ["-f", "-q"]),
}
#: mkfs options that keep mkfs from discarding the device: on a loop device discard punches
#: holes in the image, which undoes a ram bed's zero-filled image (measured: a 5 GiB image
#: fell to 0.07 GiB of shmem after mkfs.xfs, so the first pass paid page allocation again).
#: ext4's is an extended option, joined to the -E above (mke2fs keeps only the last -E).
NO_DISCARD = {"xfs": ["-K"], "ext4": ["nodiscard"], "btrfs": ["-K"]}


@dataclass(frozen=True)
class BedSpec:
    """A bed as the user names it: ``ram``, ``loop``, ``tmpfs``, ``dir:PATH`` or
    ``device:PATH[,PATH…]`` (``wipe``: ``--wipe`` was given, spelled ``device+wipe:…``)."""

    kind: str
    path: str = ""
    wipe: bool = False

    @staticmethod
    def parse(text: str) -> BedSpec:
        """Parse ``--bed``; unknown kinds are a UserError listing the known ones."""
        kind, _, rest = text.partition(":")
        if kind == "dir":
            if not rest:
                raise UserError("--bed dir:PATH needs a directory, e.g. --bed dir:/mnt/scratch")
            return BedSpec("dir", rest)
        if kind in ("device", "device+wipe"):
            paths = [p.strip() for p in rest.split(",") if p.strip()]
            if not paths or not all(p.startswith("/") for p in paths):
                raise UserError(
                    "--bed device:PATH needs block devices by absolute path, e.g. "
                    "--bed device:/dev/sdb or device:/dev/sdb1,/dev/sdb2"
                )
            return BedSpec("device", ",".join(paths), wipe=kind == "device+wipe")
        if kind in ("ram", "loop", "tmpfs") and not rest:
            return BedSpec(kind)
        raise UserError(f"unknown bed {text!r}: use ram (default), loop, tmpfs, dir:PATH or device:/dev/X")

    @property
    def paths(self) -> list[str]:
        """The devices of a device bed, in the order given."""
        return self.path.split(",") if self.path else []

    def __str__(self) -> str:
        if self.kind == "device":
            return f"device{'+wipe' if self.wipe else ''}:{self.path}"
        return f"dir:{self.path}" if self.kind == "dir" else self.kind


def bed_with_wipe(text: str | None, wipe: bool) -> str | None:
    """``--bed`` with ``--wipe`` folded in (the bed text is what travels to recipes and plans);
    a UserError when --wipe is given without a device bed."""
    if not wipe:
        return text
    spec = BedSpec.parse(text or "ram")
    if spec.kind != "device":
        raise UserError(
            "--wipe applies to --bed device:/dev/X only (it erases the signatures of an allow-listed device)"
        )
    return str(replace(spec, wipe=True))


class Bed:
    """A place where I/O lands, provisioned and later torn down; ``facts`` describe it."""

    def __init__(self, spec: BedSpec) -> None:
        self.spec = spec
        self.path = ""
        self.device: str | None = None
        self.devno: str | None = None
        self.devices: list[str] = []
        self.facts: dict[str, Any] = {"kind": spec.kind}
        self.notes: list[str] = []
        self._undo: list[tuple[dict[str, Any], Path]] = []

    # -- undo stack ---------------------------------------------------------------------
    def remember(self, action: dict[str, Any]) -> None:
        """Journal an undo step before the thing it undoes exists."""
        self._undo.append((action, journal.add(action)))

    def teardown(self) -> None:
        """Undo every step in reverse, shielded from signals; the first failure is raised last."""
        first: Exception | None = None
        with shielded():
            while self._undo:
                action, token = self._undo.pop()
                try:
                    if action["undo"] == "umount":
                        umount(str(action["path"]))
                    elif action["undo"] == "losetup":
                        detach_loop(str(action["device"]))
                    elif action["undo"] == "wipefs":
                        erase_own(str(action["device"]), str(action["devno"]))
                    else:
                        journal.undo(action)
                    journal.done(token)
                except Exception as e:  # keep tearing down the rest
                    first = first or e
        if first is not None:
            raise first

    # -- helpers for subclasses ----------------------------------------------------------
    def private_dir(self, prefix: str) -> str:
        """A new directory under /run/iowall, journaled for removal."""
        base = Path("/run/iowall")
        base.mkdir(parents=True, exist_ok=True)
        d = tempfile.mkdtemp(prefix=prefix, dir=base)
        self.remember({"undo": "rmdir", "path": d})
        return d

    def attach_loop(self, image: str, *, direct_io: bool, offset: int = 0, sizelimit: int = 0) -> str:
        """``losetup --find --show`` on an image (optionally at an offset); journaled for detach."""
        need("losetup", "util-linux")
        argv = ["losetup", "--find", "--show", f"--direct-io={'on' if direct_io else 'off'}"]
        if offset:
            argv += ["--offset", str(offset)]
        if sizelimit:
            argv += ["--sizelimit", str(sizelimit)]
        # journaled before the kernel attaches (losetup names the device only after): a kill
        # in between would leave an attached loop no journal knew of
        intent = {"undo": "losetup", "backing": os.path.realpath(image), "offset": offset}
        token = journal.add(intent)
        try:
            dev = run(argv + [image]).stdout.strip()
        except BaseException:
            with shielded():
                journal.undo(intent)
                journal.done(token)
            raise
        self._undo.append(({**intent, "device": dev}, token))
        return dev

    def format_and_mount(
        self, dev: str, fs: str, mkfs_opts: str, mount_opts: str, *, discard: bool = True
    ) -> None:
        """mkfs + mount on a private mount point; records the facts of both. ``discard=False``
        keeps mkfs from discarding the device (a ram bed's image stays allocated)."""
        if fs not in MKFS:
            raise UserError(f"unknown filesystem {fs!r}: use xfs (default), ext4 or btrfs")
        tool, pkg, base_opts = MKFS[fs]
        opts = list(base_opts)
        if not discard and fs == "ext4":
            opts[opts.index("-E") + 1] += "," + ",".join(NO_DISCARD[fs])
        elif not discard:
            opts += NO_DISCARD[fs]
        argv = [need(tool, pkg), *opts, *shlex.split(mkfs_opts), dev]
        run(argv)
        mnt = self.private_dir("mnt-")
        margv = ["mount", "-t", fs]
        if mount_opts:
            margv += ["-o", mount_opts]
        self.remember({"undo": "umount", "path": mnt})
        run(margv + [dev, mnt])
        self.path = mnt
        self.facts.update(
            fs=fs, mkfs_opts=mkfs_opts, mkfs_cmd=" ".join(argv[1:-1]), mount_opts=mount_options(mnt)
        )
        if fs == "xfs" and shutil.which("xfs_info"):
            self.facts["fs_info"] = run(["xfs_info", mnt], check=False).stdout.strip()

    def record_device(self, dev: str) -> None:
        """Facts of the block device under the bed: maj:min, queue settings, loop details."""
        st = os.stat(dev)
        if not stat.S_ISBLK(st.st_mode):
            return
        self.device = dev
        self.devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        self.devices = [os.path.basename(dev)]
        self.facts.update(device=dev, devno=self.devno, queue=queue_facts(dev), **device_kind_facts(dev))

    def record_space(self) -> None:
        """Block size and capacity of the mounted filesystem."""
        sv = os.statvfs(self.path)
        self.facts.update(
            block_size=sv.f_bsize,
            capacity_bytes=sv.f_blocks * sv.f_frsize,
            free_bytes=sv.f_bavail * sv.f_frsize,
        )

    def free_bytes(self) -> int:
        """Space left for the workload right now."""
        sv = os.statvfs(self.path)
        return sv.f_bavail * sv.f_frsize


def device_kind_facts(dev: str) -> dict[str, dict[str, str]]:
    """What a block device is, for the device side of explain: a loop device's backing file
    and whether it does direct I/O (``{"loop": …}``), zram's compressor (``{"zram": …}``)."""
    name = os.path.basename(os.path.realpath(dev))
    sysdir = Path(f"/sys/block/{name}")
    loop = sysdir / "loop"
    if loop.is_dir():
        return {
            "loop": {
                f: (loop / f).read_text().strip()
                for f in ("backing_file", "dio", "offset", "sizelimit")
                if (loop / f).exists()
            }
        }
    comp = sysdir / "comp_algorithm"
    if comp.exists():
        algs = comp.read_text().split()
        chosen = next((a.strip("[]") for a in algs if a.startswith("[")), "")
        return {"zram": {"comp_algorithm": chosen}}
    return {}


def queue_facts(dev: str) -> dict[str, str]:
    """The queue attributes of a block device from sysfs."""
    name = os.path.basename(os.path.realpath(dev))
    q = Path(f"/sys/class/block/{name}/queue")
    if not q.is_dir():  # a partition: the queue belongs to its parent
        q = Path(f"/sys/class/block/{name}/../queue")
    out = {}
    for a in QUEUE_ATTRS:
        try:
            out[a] = (q / a).read_text().strip()
        except OSError:
            pass
    return out


def mount_options(path: str) -> str:
    """Options the kernel reports for a mount point (what is really in force)."""
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if parts[1] == real:
                return parts[3]
    return ""


def umount(path: str) -> None:
    """Unmount, retrying while busy, lazily as a last resort."""
    if not journal._is_mounted(path):
        return
    for _ in range(20):
        r = run(["umount", path], check=False)
        if r.returncode == 0 or not journal._is_mounted(path):
            return
        time.sleep(0.25)
    run(["umount", "-l", path], check=False)
    if journal._is_mounted(path):
        raise IowallError(f"could not unmount {path}")


def detach_loop(dev: str) -> None:
    """Detach a loop device and wait until the kernel has let go of its backing file."""
    run(["losetup", "-d", dev], check=False)
    name = os.path.basename(dev)
    for _ in range(40):
        if not Path(f"/sys/block/{name}/loop/backing_file").exists():
            return
        time.sleep(0.05)


def erase_own(dev: str, devno: str) -> None:
    """Erase the signatures of the filesystem iowall made on a device bed, so that the device
    is left blank as the guard found it (or wiped it), unless the node now names another device."""
    st = os.stat(dev)
    if f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" == devno:
        run(["wipefs", "-a", "-q", dev])
