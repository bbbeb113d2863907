"""Can uncached buffered I/O (RWF_DONTCACHE, 0x80, kernels >= 6.14) be measured here, and by
whom: ``dontcache_support`` tries the flag in a directory; ``fio_uncached_flag`` observes the
flag the installed fio's ``uncached=1`` really passes to pwritev2 (fio 3.33 passes 0x40, which
kernels >= 6.11 read as RWF_ATOMIC), so iowall never trusts a fio that sets the old flag.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
import time

from ..machine.atomic import write_text
from ..machine.dirs import state_dir
from ..machine.journal import scratch_dir
from ..machine.proc import dies_with_us, need, run
from ..probes import tracefs

RWF_DONTCACHE = 0x80
#: What 0x40 means since 6.11; fio 3.33's uncached=1 passes it.
RWF_ATOMIC = 0x40
DONTCACHE_KERNEL = (6, 14)
CACHE_FILE = "fio-uncached.json"
_FLAGS = re.compile(r"\bflags: (0x[0-9a-fA-F]+)")


def kernel_version(release: str | None = None) -> tuple[int, int]:
    """(major, minor) of a kernel release string (the running kernel's by default)."""
    m = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def fs_type(path: str) -> str:
    """The filesystem type of the mount holding ``path``, matched by device number in
    /proc/self/mountinfo ('' when not found)."""
    dev = os.stat(path).st_dev
    want = f"{os.major(dev)}:{os.minor(dev)}"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 2 and fields[2] == want and right:
                return right.split()[0]
    return ""


def dontcache_support(directory: str) -> tuple[bool, str]:
    """Whether a 4 KiB pwritev2 and preadv2 with RWF_DONTCACHE work on a temporary file in
    ``directory`` (removed after), and why not in plain words: the kernel predates the flag, or
    the filesystem lacks it (both give EOPNOTSUPP: told apart by the kernel version)."""
    kernel = kernel_version()
    fs = fs_type(directory) or "this filesystem"
    fd, path = tempfile.mkstemp(prefix=".iowall-dontcache-", dir=directory)
    try:
        buf = bytearray(b"\xa5" * 4096)
        try:
            os.pwritev(fd, [buf], 0, RWF_DONTCACHE)
            os.preadv(fd, [buf], 0, RWF_DONTCACHE)
        except OSError as e:
            if e.errno == errno.EOPNOTSUPP:
                if kernel < DONTCACHE_KERNEL:
                    return False, (
                        f"kernel {kernel[0]}.{kernel[1]} predates RWF_DONTCACHE "
                        f"({DONTCACHE_KERNEL[0]}.{DONTCACHE_KERNEL[1]}): EOPNOTSUPP"
                    )
                return False, f"{fs} does not support RWF_DONTCACHE (EOPNOTSUPP)"
            return False, f"RWF_DONTCACHE I/O in {directory} failed: {e.strerror}"
    finally:
        os.close(fd)
        os.unlink(path)
    return True, f"{fs} supports RWF_DONTCACHE (a 4 KiB write and read with flag 0x80 worked)"


def fio_uncached_flag() -> int | None:
    """The RWF flag the installed fio passes to pwritev2 for ``uncached=1``, observed with
    perf (cached per fio version in the state directory); None when it cannot be observed."""
    return observe_fio_uncached()[0]


def fio_dontcache_ok() -> tuple[bool, str]:
    """True only when fio's ``uncached=1`` was seen passing RWF_DONTCACHE (0x80); the reason
    says what was seen and who generates the uncached stream instead."""
    flag, why = observe_fio_uncached()
    if flag == RWF_DONTCACHE:
        return True, f"{why}: fio generates the uncached stream"
    return False, f"{why}: the engine generates the uncached stream"


def observe_fio_uncached() -> tuple[int | None, str]:
    """(flag or None, what was seen), from the cache or a fresh observation."""
    version = run([need("fio", "fio"), "--version"]).stdout.strip() or "fio"
    cache = state_dir() / CACHE_FILE
    known = _read_cache(str(cache))
    seen = known.get(version, {}).get("flag")
    if isinstance(seen, int):
        return seen, describe(version, seen)
    flag, why = _observe(version)
    if flag is not None:
        known[version] = {"flag": flag, "observed_at": time.time(), "kernel": os.uname().release}
        write_text(str(cache), json.dumps(known, indent=1, sort_keys=True) + "\n", what="fio flag cache")
    return flag, why


def describe(version: str, flag: int) -> str:
    """Plain words for what fio's uncached=1 passes."""
    if flag == RWF_DONTCACHE:
        return f"{version}'s uncached=1 passes RWF_DONTCACHE 0x80"
    if flag == RWF_ATOMIC:
        return f"{version}'s uncached=1 passes 0x40 (RWF_ATOMIC since 6.11), not RWF_DONTCACHE 0x80"
    return f"{version}'s uncached=1 passes {flag:#x}, not RWF_DONTCACHE 0x80"


def _read_cache(path: str) -> dict[str, dict[str, object]]:
    """The cache file: fio version → what was observed ({} when missing or unreadable)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, dict)}


def _observe(version: str) -> tuple[int | None, str]:
    """One 4 KiB pvsync2 write with uncached=1 under ``perf record -e
    syscalls:sys_enter_pwritev2`` (tracefs mounted for it), and the flags argument seen."""
    if shutil.which("perf") is None:
        return None, (
            f"perf is not installed, so the flag {version}'s uncached=1 passes "
            "cannot be observed (apt-get install linux-perf)"
        )
    try:
        tracefs.acquire()
    except Exception as e:  # noqa: BLE001 - any failure means: cannot observe
        return None, f"cannot observe {version}'s uncached=1: {e}"
    try:
        with scratch_dir("iowall-fio-flag-") as tmp:
            data = os.path.join(tmp, "perf.data")
            rec = run(
                dies_with_us(
                    [
                        "perf",
                        "record",
                        "-q",
                        "-o",
                        data,
                        "-e",
                        "syscalls:sys_enter_pwritev2",
                        "--",
                        "fio",
                        "--name=flag",
                        "--ioengine=pvsync2",
                        "--uncached=1",
                        "--rw=write",
                        "--bs=4k",
                        "--size=4k",
                        f"--filename={tmp}/f",
                        "--output-format=terse",
                    ]
                ),
                check=False,
                timeout=60,
            )
            if not os.path.exists(data):
                tail = (rec.stderr or rec.stdout).strip().splitlines()
                return None, (
                    f"perf could not trace {version}'s pwritev2: {tail[-1] if tail else 'no perf.data'}"
                )
            out = run(
                dies_with_us(["perf", "script", "-i", data, "-F", "comm,trace"]), check=False, timeout=60
            ).stdout
    finally:
        tracefs.release()
    flags = [
        int(m.group(1), 16)
        for line in out.splitlines()
        if line.split() and line.split()[0] == "fio" and (m := _FLAGS.search(line))
    ]
    if not flags:
        return None, (
            f"{version} made no pwritev2 call with uncached=1 under perf "
            "(no uncached option, or not pvsync2): fio cannot be trusted with it"
        )
    return flags[0], describe(version, flags[0])
