"""Guests of `iowall ab` on this machine, for the suite and benchmarks/faults.py: the Debian
kernels it boots (unpacked once into a cache kept between runs), the tiny plan they run, and
what a guest's qemu and spool can be found by."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from iowall.bundle.files import read_bundle

OLD = "linux-image-6.1.0-50-amd64-unsigned"
NEW = "linux-image-6.12.111+deb12-amd64-unsigned"
#: Unpacked kernels, kept between runs (about 400 MiB each; nothing is installed). Not
#: under /tmp or /var/tmp: the guest has its own, and must see the modules.
KERNELS = os.path.expanduser("~/.cache/iowall-ab-test")

PLAN = """label = "ab-tiny"
repeat = 1
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "32M"
direct = 0
[bed]
kind = "ram"
fs = "xfs"
size = "320M"
"""


def qemus_naming(part: str) -> list[int]:
    """The qemu processes whose command line names ``part`` (a boot's shared directory)."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd and part in cmd:
            out.append(int(d.name))
    return out


def bundle_uuids(files: Iterable[Path]) -> set[str]:
    """The uuids of the runs in these bundle files (a spool's); a file renamed away or not
    yet whole between the listing and the read is skipped (the next poll reads it)."""
    seen: set[str] = set()
    for f in files:
        try:
            seen |= {r.uuid for r in read_bundle(str(f))}
        except Exception:
            pass
    return seen
