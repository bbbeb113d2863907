"""The second corpus of induced walls: mechanisms inside a path or below the workload
(request splitting, readahead off, merging off, per-call cost, zram and btrfs compression,
the ext4 journal commit, the btrfs log tree, the XFS log force under O_SYNC, CPU affinity,
request tags, a device shared with a neighbour, the filesystem out of free space on XFS, btrfs
and ext4, unwritten extents converted as direct writes complete on XFS (and split and
converted on ext4), btrfs verifying sha256 checksums as reads complete).

What a kernel developer would say each wall is — the wall kind, its mechanism, the
condition, the control and the ground truth — is committed in tests/corpus2_expected.toml
and READ from there: this module holds only how each kind is induced and how its ground
truth is checked. A kind the toml marks ``dropped`` is kept (its Kind carries the reason)
and left out of ``WALL_KINDS2``.

Built on tests/wall_corpus.py (Kind, Setup, Evidence, Sampler, run_case, score): every kind
here has a ``control`` plan, the same workload with the condition removed, which run_case
runs through the same harness right before the condition; the ground truth needs both.
It is proved from outside iowall:

- the throughput of the condition against the control's (fio's own JSON of each run), by
  the factor the toml states;
- /proc/diskstats of the bed's device, read by the Sampler itself while the fio jobs run:
  the device is the loop (or zram) device under the file a job holds open, and the counters
  are those of the first and the last look at such a job, so they cover the jobs' I/O and
  not the bed's mkfs, the cache drop or the teardown. A condition that is a queue setting
  (``sysfs:queue/max_sectors_kb``, ``read_ahead_kb``, ``nomerges``, ``nr_requests``) is the
  plan's knob on iowall's own ram or loop bed, as the toml says: iowall applies it to the
  bed's device for the point, restores it after, and records it with the run (iowall
  refuses queue knobs on a ``dir:`` bed);
- zram's /sys/block/zram0/mm_stat, snapshotted right before and after the run, and XFS's
  transaction count (/proc/fs/xfs/stat) the same way; a tracepoint's hits (ext4 handling
  unwritten extents) counted by ``perf stat -a`` from before the run to after it;
- the Sampler's looks at the fio job threads (state, kernel stack), their schedstat and
  their Cpus_allowed_list.

The zram and the shared-device kinds provision their bed themselves (zram0; a filesystem on
a loop device over a zero-filled image in /dev/shm, as iowall's ram bed is made), used as
a ``dir:`` bed, because the condition lives outside the run: zram's compressor, and another
fio process writing to the same filesystem for the whole run.

Everything a kind sets up is torn down by its context manager on success and on error: the
loop device's queue settings are put back as they were, then it is unmounted, detached and
its image deleted; zram0 is unmounted and reset (disksize 0, its compression algorithm as
it was); the neighbour writer is killed by its process group. ``clean2`` lists what could be
left behind (the first corpus's ``clean`` and zram0, the loop and zram queue settings, the
neighbour writers, iowall's own bed mounts); ``left_behind(before, after)`` says what
differs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from iowall.probes import tracefs
from tests.wall_corpus import (
    DIR_BED,
    LOOP,
    MIB,
    PREFIX,
    TMPFS,
    Evidence,
    Kind,
    Setup,
    Truth,
    _mounted,
    _plan,
    _run,
    _write,
    clean,
    dev_name,
    diskstats,
    loop_xfs,
    nothing,
    queue_settings,
    versus,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXPECTED_TOML = Path(__file__).with_name("corpus2_expected.toml")
#: the committed expectations, kind by kind (wall, mechanism, said, condition, control, truth)
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads(EXPECTED_TOML.read_text())
ZRAM = Path("/sys/block/zram0")
#: the neighbour writer's file name (and how ``clean2`` finds a leftover one)
NEIGHBOUR = f"{PREFIX}neighbour"
SECTOR = 512
#: what a kind's ``induce`` is: a context manager factory handing the run its Setup
Induce = Callable[[], contextlib.AbstractContextManager[Setup]]


# --------------------------------------------------------------------------------------
# inductions


def ram_fs(size: int, fs: str = "xfs", mount_opts: str = "") -> Induce:
    """An induction: ``fs`` on a loop device over a zero-filled image of ``size`` in
    /dev/shm (iowall's ram bed, made here so that its device is known before the run), the
    plan's ``dir:{bed}``; the snapshot is the device's /proc/diskstats."""

    @contextlib.contextmanager
    def induce() -> Iterator[Setup]:
        with loop_xfs(size, fs=fs, mount_opts=mount_opts, zero_fill=True) as (mnt, devno):
            name = dev_name(devno)
            yield Setup(bed=mnt, snapshot=lambda: {"dev": name, **diskstats(name)})

    return induce


def mm_stat() -> dict[str, int]:
    """/sys/block/zram0/mm_stat by name (Documentation/admin-guide/blockdev/zram.rst)."""
    names = (
        "orig_data_size",
        "compr_data_size",
        "mem_used_total",
        "mem_limit",
        "mem_used_max",
        "same_pages",
        "pages_compacted",
        "huge_pages",
        "huge_pages_since",
    )
    return dict(zip(names, (int(x) for x in (ZRAM / "mm_stat").read_text().split()), strict=False))


def _selected(text: str) -> str:
    """The bracketed choice of a selection file (``[lzo-rle] lzo lz4`` → ``lzo-rle``)."""
    return text[text.index("[") + 1 : text.index("]")] if "[" in text else text.strip()


def xfs_trans() -> int:
    """XFS transactions so far, sync and async (/proc/fs/xfs/stat ``trans``: sync, async,
    empty), on every XFS of the machine."""
    for line in Path("/proc/fs/xfs/stat").read_text().splitlines():
        f = line.split()
        if f and f[0] == "trans":
            return int(f[1]) + int(f[2])
    return 0


@contextlib.contextmanager
def xfs_transactions() -> Iterator[Setup]:
    """No induction: the run on iowall's own bed, with the XFS transaction count as the
    snapshot before and after it (``xfs_trans``)."""
    yield Setup(snapshot=lambda: {"xfs_trans": xfs_trans()})


#: ext4 handling a write into an unwritten extent: the split before the I/O and the
#: conversion after it both pass here (fs/ext4/extents.c)
EXT4_UNWRITTEN_EVENT = "ext4:ext4_ext_handle_unwritten_extents"


def tracepoint_hits(event: str) -> Induce:
    """No induction: the run on iowall's own bed, with ``event``'s hits machine-wide as the
    snapshot, counted by ``perf stat -a -I 500`` (the intervals so far, summed: perf writes
    each as it ends) from before the run to after it. tracefs, which perf needs for a
    tracepoint and would mount for good, is iowall's to mount and unmount (``tracefs``)."""

    @contextlib.contextmanager
    def induce() -> Iterator[Setup]:
        tracefs.acquire()
        with contextlib.ExitStack() as stack:
            stack.callback(tracefs.release)
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="iowall-hits-"))
            out = Path(tmp) / "stat.csv"
            argv = ["perf", "stat", "-a", "-x,", "-I", "500", "-e", event, "-o", str(out)]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                time.sleep(1.0)  # one interval written: the counter is live before the run
                if proc.poll() is not None:
                    why = proc.stderr.read() if proc.stderr else ""
                    raise RuntimeError(f"perf stat -e {event} ended: {why}")
                yield Setup(snapshot=lambda: {"hits": _hits(out)})
            finally:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    return induce


def _hits(path: Path) -> int:
    """The counts of a ``perf stat -x, -I`` file so far (time,count,unit,event,…), summed."""
    total = 0
    for line in path.read_text().splitlines() if path.exists() else []:
        f = line.split(",")
        if len(f) > 1 and f[1].strip().isdigit():
            total += int(f[1])
    return total


@contextlib.contextmanager
def zram_xfs(disksize: int = 1 << 30, algorithm: str = "lzo-rle") -> Iterator[Setup]:
    """zram0 with ``algorithm`` and ``disksize``, XFS on it, mounted under
    /run/iowall-corpus: the plan's ``dir:{bed}``; the snapshot is its mm_stat and
    diskstats. On exit: unmounted, ``echo 1 > reset`` (disksize 0 again), the compression
    algorithm put back as it was. Refuses a zram0 already in use (disksize not 0)."""
    if not ZRAM.is_dir():
        raise RuntimeError("no /sys/block/zram0 (zram module not loaded)")
    if (ZRAM / "disksize").read_text().strip() != "0":
        raise RuntimeError("zram0 is in use (disksize is not 0): not touching it")
    old_alg = _selected((ZRAM / "comp_algorithm").read_text())
    os.makedirs("/run/iowall-corpus", exist_ok=True)
    mnt = tempfile.mkdtemp(prefix="mnt-", dir="/run/iowall-corpus")
    try:
        _write(ZRAM / "comp_algorithm", algorithm)
        _write(ZRAM / "disksize", disksize)
        _run("mkfs.xfs", "-q", "-f", "/dev/zram0")
        _run("mount", "-t", "xfs", "/dev/zram0", mnt)
        yield Setup(bed=mnt, snapshot=lambda: {**mm_stat(), **diskstats("zram0")})
    finally:
        for _ in range(50):
            if not _mounted(mnt) or subprocess.run(["umount", mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        busy = _mounted(mnt)
        if busy:  # still held open: detached from the tree now, freed when the last user goes
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        os.rmdir(mnt)
        _write(ZRAM / "reset", 1)  # EBUSY while a lazily unmounted XFS still holds it
        if _selected((ZRAM / "comp_algorithm").read_text()) != old_alg:
            _write(ZRAM / "comp_algorithm", old_alg)
        if busy:
            raise RuntimeError(f"{mnt} stayed busy for 10 s: unmounted lazily")


@contextlib.contextmanager
def writer_beside(mnt: str, dev: str) -> Iterator[int]:
    """Another fio process (its own session) writing 1 MiB direct I/O (libaio, depth 16) to
    a file of ``mnt`` for as long as the block lasts; yields once ``dev`` shows its writes.
    Killed on exit (SIGKILL to it and to its job processes, waited for until they have
    exited)."""
    argv = [
        "fio",
        f"--name={NEIGHBOUR}",
        f"--filename={mnt}/{NEIGHBOUR}",
        "--rw=write",
        "--bs=1M",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--size=1G",
        "--time_based=1",
        "--runtime=900",
        "--output=/dev/null",
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        w0 = diskstats(dev).get("wr_sectors", 0)
        t0 = time.monotonic()
        while diskstats(dev).get("wr_sectors", 0) - w0 < 256 * MIB // SECTOR:
            if proc.poll() is not None:
                raise RuntimeError(f"the neighbour writer exited {proc.returncode} before writing")
            if time.monotonic() - t0 > 20:
                raise RuntimeError("the neighbour writer wrote less than 256 MiB in 20 s")
            time.sleep(0.05)
        yield proc.pid
    finally:
        # fio runs each job in a process of its own session: kill the parent and its jobs
        pids = [proc.pid, *_descendants(proc.pid)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        for _ in range(200):  # a job, reaped by init, holds the file until it has exited
            if not any(_alive(pid) for pid in pids):
                break
            time.sleep(0.05)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for t in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                kids = [int(c) for c in t.read_text().split()]
                out += kids
                todo += kids
    return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (a zombie has let go of its files)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] not in "ZX"


def shared_device(size: int) -> Induce:
    """``ram_fs(size)`` with the neighbour writer beside the run for its whole life."""
    bed = ram_fs(size)

    @contextlib.contextmanager
    def induce() -> Iterator[Setup]:
        with bed() as setup:
            with writer_beside(setup.bed, setup.snapshot()["dev"]):
                yield setup

    return induce


# --------------------------------------------------------------------------------------
# the ground truths: each checks exactly what the toml's ``truth`` says, and says every number


def requests(e: Evidence, rw: str) -> tuple[int, int, int]:
    """/proc/diskstats of the bed's device over the fio jobs' I/O (the Sampler's first and
    last look at a job with a file open on it): (requests, merged, sectors) of ``rw`` (rd or
    wr)."""
    a, b = e.samples.disk_first, e.samples.disk_last
    n, m, s = ("reads", "rd_merged", "rd_sectors") if rw == "rd" else ("writes", "wr_merged", "wr_sectors")
    return b.get(n, 0) - a.get(n, 0), b.get(m, 0) - a.get(m, 0), b.get(s, 0) - a.get(s, 0)


def _req_text(e: Evidence, rw: str) -> str:
    if not e.samples.disk:
        return "no job was seen with a file open on a loop or zram device"
    n, m, s = requests(e, rw)
    word = "reads" if rw == "rd" else "writes"
    per = f"{s / n:.1f}" if n else "-"
    return f"{e.samples.disk}: {n} {word} ({m} merged), {s} sectors, {per} sectors per request"


def t_split(e: Evidence) -> Truth:
    n, _, s = requests(e, "wr")
    per_ok = n > 0 and s / n <= 9
    fast, vs = versus(e, 0.7)
    ctl = f"; control: {_req_text(e.control, 'wr')}" if e.control else ""
    return Truth(
        per_ok and fast,
        f"diskstats {_req_text(e, 'wr')} (needs <= 9; fio writes 1 MiB = 2048 sectors){ctl}; {vs}",
    )


def t_no_readahead(e: Evidence) -> Truth:
    n, _, s = requests(e, "rd")
    per_ok = n > 0 and s / n <= 16
    fast, vs = versus(e, 0.5)
    done = int(e.job().get("read", {}).get("io_bytes", 0))
    ctl = f"; control: {_req_text(e.control, 'rd')}" if e.control else ""
    return Truth(
        per_ok and fast,
        f"diskstats {_req_text(e, 'rd')} (needs <= 16; fio reads 1 MiB = "
        f"2048 sectors), {s * SECTOR / MIB:.0f} MiB read from the device for fio's "
        f"{done / MIB:.0f} MiB{ctl}; {vs}",
    )


def t_not_merged(e: Evidence) -> Truth:
    n, m, s = requests(e, "wr")
    cond_ok = n > 0 and m == 0 and s / n <= 9
    ctl_merged = requests(e.control, "wr")[1] if e.control else 0
    fast, vs = versus(e, 0.8)
    ctl = f"control: {_req_text(e.control, 'wr')}" if e.control else "no control"
    return Truth(
        cond_ok and ctl_merged > 0 and fast,
        f"diskstats {_req_text(e, 'wr')} (needs 0 merged and <= 9 per "
        f"request); {ctl} (needs merged > 0); {vs}",
    )


def t_per_call(e: Evidence) -> Truth:
    run = e.samples.running()
    fast, vs = versus(e, 0.5)
    return Truth(
        run >= 0.8 and fast,
        f"job thread on a CPU or runnable in {run:.1%} of looks (needs >= 80%; {e.samples.summary()}); {vs}",
    )


def _mm(e: Evidence) -> str:
    pages = e.after.get("orig_data_size", 0) // 4096
    return (
        f"{pages} pages stored, {e.after.get('same_pages', 0)} same-filled, "
        f"{e.after.get('huge_pages', 0)} incompressible (huge), compressed data "
        f"{e.after.get('compr_data_size', 0) / MIB:.0f} MiB"
    )


def t_zram(e: Evidence) -> Truth:
    pages = e.after.get("orig_data_size", 0) // 4096
    same = e.after.get("same_pages", 0)
    run = e.samples.running()
    fast, vs = versus(e, 0.6)
    ctl = f"; control (zero buffers): {_mm(e.control)}" if e.control else ""
    return Truth(
        pages > same and run >= 0.6 and fast,
        f"zram0 mm_stat after the run: {_mm(e)} (needs stored > same-filled){ctl}; job thread "
        f"on a CPU or runnable in {run:.1%} of looks (needs >= 60%; {e.samples.summary()}); {vs}",
    )


def t_zram_read(e: Evidence) -> Truth:
    """The file read is stored compressed (compressed data smaller than the original, pages
    not same-filled), the reader on a CPU decompressing, and slower than zero-filled pages."""
    pages = e.after.get("orig_data_size", 0) // 4096
    same = e.after.get("same_pages", 0)
    orig, compr = e.after.get("orig_data_size", 0), e.after.get("compr_data_size", 0)
    run = e.samples.running()
    fast, vs = versus(e, 0.6)
    ctl = f"; control (zero-filled): {_mm(e.control)}" if e.control else ""
    return Truth(
        0 < compr < orig and pages > same and run >= 0.6 and fast,
        f"zram0 mm_stat after the run: {_mm(e)}, of {orig / MIB:.0f} MiB stored (needs compressed < "
        f"stored, stored > same-filled){ctl}; job thread on a CPU or runnable in {run:.1%} of looks "
        f"(needs >= 60%; {e.samples.summary()}); {vs}",
    )


#: frames of a thread waiting in fsync/fdatasync (or for the writeback it started)
FSYNC = ("fsync", "file_write_and_wait", "filemap_fdatawait", "file_check_and_advance_wb_err")


def _asleep(e: Evidence, frames: tuple[str, ...], most: float, least: float = 0.3, what: str = "") -> Truth:
    share = e.samples.in_stack(*frames)
    fast, vs = versus(e, most)
    return Truth(
        share >= least and fast,
        f"job thread asleep in {what or 'fsync paths'} in {share:.1%} of looks (needs >= "
        f"{least:.0%}; {e.samples.summary()}); {vs}",
    )


def t_btrfs_compression(e: Evidence) -> Truth:
    return _asleep(e, (*FSYNC, "btrfs_sync_file", "btrfs_wait_ordered", "btrfs_start_ordered"), 0.6)


def t_ext4_journal(e: Evidence) -> Truth:
    return _asleep(
        e, (*FSYNC, "jbd2", "ext4_sync_file", "ext4_force_commit"), 0.8, what="jbd2 or fsync paths"
    )


def t_btrfs_log(e: Evidence) -> Truth:
    writes = int(e.job().get("write", {}).get("total_ios", 0))
    sync = e.job().get("sync", {})
    # fio counts fsyncs in sync.total_ios; an fdatasync only as a sample of sync's latency
    syncs = max(int(sync.get("total_ios", 0)), int(sync.get("lat_ns", {}).get("N", 0)))
    t = _asleep(e, (*FSYNC, "btrfs_sync_file", "btrfs_sync_log"), 0.5)
    return Truth(
        writes > 0 and syncs >= 0.9 * writes and t.held,
        f"fio JSON: {syncs} syncs for {writes} writes (needs >= 0.9 per write); {t.detail}",
    )


def t_dsync_log(e: Evidence) -> Truth:
    return _asleep(
        e,
        (*FSYNC, "xfs_log_force", "xfs_file_fsync", "generic_write_sync"),
        0.5,
        what="log-force or fsync paths",
    )


def t_cpu_affinity(e: Evidence) -> Truth:
    masks = e.samples.cpus
    pinned = bool(masks) and all(v == "0" for v in masks.values())
    r = e.samples.run_delay_share()
    fast, vs = versus(e, 0.7)
    ctl = sorted(set(e.control.samples.cpus.values())) if e.control else []
    return Truth(
        pinned and r >= 0.3 and fast,
        f"Cpus_allowed_list of the {len(masks)} job threads: {sorted(set(masks.values()))} "
        f"(needs all 0; the control's: {ctl}); schedstat: they waited on the runqueue "
        f"{r:.1%} of their on-CPU + waiting time (needs >= 30%); {vs}",
    )


def t_unwritten(e: Evidence) -> Truth:
    """XFS transactions (sync + async) per write: the conversion's, one or more a write."""
    return _conversions_truth(e, "xfs_trans", "/proc/fs/xfs/stat: {per:.3f} transactions per write", 0.5)


def t_ext4_unwritten(e: Evidence) -> Truth:
    """ext4's unwritten-extent handler hits per write: the split before it, the conversion after."""
    return _conversions_truth(e, "hits", f"{EXT4_UNWRITTEN_EVENT}: {{per:.3f}} hits per write", 1.0)


def _conversions_truth(e: Evidence, key: str, what: str, need: float) -> Truth:
    """Held when the writes into unwritten extents each pay the conversion (``key`` per write at
    least ``need``), the control's overwrites do not (< 0.05) and the case is at most 0.5x it."""
    per = _per_write(e, key)
    ctl = _per_write(e.control, key) if e.control else None
    fast, vs = versus(e, 0.5)
    ctl_text = f"{ctl:.3f} in the control" if ctl is not None else "no control"
    return Truth(
        per >= need and ctl is not None and ctl < 0.05 and fast,
        f"{what.format(per=per)} (needs >= {need:g}), {ctl_text} (needs < 0.05); {vs}",
    )


def _per_write(e: Evidence, key: str) -> float:
    """A machine-wide counter's growth over the run (the bed's filesystem is the only one at
    work) per write fio completed."""
    writes = int(e.job().get("write", {}).get("total_ios", 0))
    grown = e.after.get(key, 0) - e.before.get(key, 0)
    return grown / writes if writes else 0.0


#: frames of a direct write waiting for I/O: a drain of the inode's direct I/O, or its own
DIO_WAIT = ("inode_dio_wait", "__iomap_dio_rw")


def _submit_waits(e: Evidence, waits: tuple[str, ...]) -> float:
    """Looks asleep inside io_submit in one of ``waits``: the asynchronous call waiting as a
    synchronous one does."""
    return e.samples.share(
        lambda s: (
            s.state != "R"
            and any("io_submit" in f for f in s.stack)
            and any(any(w in f for w in waits) for f in s.stack)
        )
    )


#: frames of a buffered read waiting for the page cache to read a folio
PAGE_WAIT = ("folio_wait_bit", "folio_wait_locked", "filemap_get_pages")


def t_buffered_aio(e: Evidence) -> Truth:
    """The reader asleep in io_submit for the page cache's read, the direct control's not."""
    return _waits_truth(
        e,
        lambda x: _submit_waits(x, PAGE_WAIT),
        f"job thread asleep inside io_submit in {'/'.join(PAGE_WAIT)}",
    )


def t_bfq(e: Evidence) -> Truth:
    """The submitter on a CPU (fio's own CPU share and the looks) and slower than under none."""
    cpu = e.cpu_share()
    run = e.samples.running()
    fast, vs = versus(e, 0.7)
    return Truth(
        cpu >= 0.9 and run >= 0.6 and fast,
        f"fio's CPU (usr + sys) {cpu:.0%} of its runtime (needs >= 90%); job thread on a CPU or "
        f"runnable in {run:.0%} of looks (needs >= 60%; {e.samples.summary()}); {vs}",
    )


def t_append_dio(e: Evidence) -> Truth:
    """The writer asleep in io_submit for a direct write's I/O, the control's writer not."""
    return _waits_truth(
        e, lambda x: _submit_waits(x, DIO_WAIT), f"job thread asleep inside io_submit in {'/'.join(DIO_WAIT)}"
    )


#: frames of a direct write waiting in XFS's write path: for its IOLOCK, or draining the I/O
DIO_PATH = ("xfs_ilock_iocb_for_write", *DIO_WAIT)


#: ext4's: its inode lock, whose slow path /proc/TID/stack leaves out (ext4_dio_write_iter and
#: its checks are inlined into ext4_file_write_iter here), or the forced wait for its own I/O
EXT4_DIO_PATH = ("ext4_file_write_iter", "__iomap_dio_rw")


def _punted_waits(e: Evidence, path: tuple[str, ...] = DIO_PATH, innermost: bool = False) -> float:
    """Looks at the job's tasks that were io-wq workers (``io_wq_submit_work``) asleep in a
    direct write's path (``path``; with ``innermost``, in its innermost frame shown)."""
    return e.samples.share(
        lambda s: (
            s.state != "R"
            and any("io_wq_submit_work" in f for f in s.stack)
            and (
                bool(s.stack) and any(w in s.stack[0] for w in path)
                if innermost
                else any(any(w in f for w in path) for f in s.stack)
            )
        )
    )


def t_uring_append_dio(e: Evidence) -> Truth:
    """The job's io-wq workers asleep in XFS's direct-write path, the control's not."""
    return _waits_truth(e, _punted_waits, f"io-wq workers asleep in {'/'.join(DIO_PATH)}")


def t_ext4_uring_append_dio(e: Evidence) -> Truth:
    """The job's io-wq workers asleep in ext4's direct-write path, the control's not."""
    return _waits_truth(
        e,
        lambda x: _punted_waits(x, EXT4_DIO_PATH, innermost=True),
        f"io-wq workers asleep in {'/'.join(EXT4_DIO_PATH)} (innermost)",
    )


def _waits_truth(e: Evidence, share_of: Callable[[Evidence], float], what: str) -> Truth:
    """Held when ``share_of`` the looks (a wait of the job's tasks) is half or more, the
    control's under a tenth, and the case is at most 0.5x the control."""
    share = share_of(e)
    ctl = share_of(e.control) if e.control else None
    fast, vs = versus(e, 0.5)
    ctl_text = f"the control's in {ctl:.1%}" if ctl is not None else "no control"
    return Truth(
        share >= 0.5 and ctl is not None and ctl < 0.1 and fast,
        f"{what} in {share:.1%} of the looks (needs >= 50%; {e.samples.summary()}), {ctl_text} "
        f"(needs < 10%); {vs}",
    )


def t_btrfs_csum(e: Evidence) -> Truth:
    return _asleep(e, ("__iomap_dio_rw", "btrfs_direct_read"), 0.5, least=0.4, what="the direct read's wait")


def t_tags(e: Evidence) -> Truth:
    return _asleep(e, ("blk_mq_get_tag",), 0.8, what="blk_mq_get_tag")


def t_shared_device(e: Evidence) -> Truth:
    _, _, rd = requests(e, "rd")
    _, _, wr = requests(e, "wr")
    # the reader's own: what it read, and the file it laid out first (written on this device)
    read = int(e.job().get("read", {}).get("io_bytes", 0))
    laid = READER_FILE
    own = (read + laid) / SECTOR
    dev = rd + wr
    share = own / dev if dev else 1.0
    fast, vs = versus(e, 0.5)
    return Truth(
        dev > 0 and share <= 0.2 and fast,
        f"diskstats {e.samples.disk}: {rd} sectors read and {wr} written over the reader's I/O; "
        f"the reader's own {own:.0f} (fio read {read / MIB:.0f} MiB, laid out "
        f"{laid / MIB:.0f} MiB): {share:.1%} of the device's (needs <= 20%); {vs}",
    )


#: the callers of xfs_flush_inodes: its last call, ``flush_work``, is a tail call, so in
#: about two stacks of three its own frame is gone and ``__flush_work`` sits right under them
SPACE_CALLERS = ("xfs_create", "xfs_file_buffered_write")


def _space_flush(stack: list[str]) -> bool:
    """A stack (innermost first) waiting for XFS's ENOSPC flush: through xfs_flush_inodes,
    or through ``__flush_work`` called straight from one of its callers (the tail call)."""
    for i, f in enumerate(stack):
        if "xfs_flush_inodes" in f:
            return True
        if "__flush_work" in f and i + 1 < len(stack) and any(c in stack[i + 1] for c in SPACE_CALLERS):
            return True
    return False


def t_space_flush(e: Evidence) -> Truth:
    share = e.samples.share(lambda s: s.state != "R" and _space_flush(s.stack))
    fast, vs = versus(e, 0.7)
    return Truth(
        share >= 0.3 and fast,
        f"job thread asleep in xfs_flush_inodes (or __flush_work from {' or '.join(SPACE_CALLERS)}) in "
        f"{share:.1%} of looks (needs >= 30%; {e.samples.summary()}); {vs}",
    )


def t_space_btrfs(e: Evidence) -> Truth:
    return _asleep(
        e,
        ("__reserve_bytes", "handle_reserve_ticket", "wait_reserve_ticket"),
        0.7,
        what="__reserve_bytes (a reservation ticket)",
    )


def t_space_ext4(e: Evidence) -> Truth:
    return _asleep(e, ("ext4_nonda_switch",), 0.7, what="ext4_nonda_switch")


# --------------------------------------------------------------------------------------
# the kinds: plans (condition, control) and inductions; expectations from the toml


def _axes(plan: str, knobs: dict[str, int | str]) -> str:
    """``plan`` with a one-value axis per bed queue knob (``{"max_sectors_kb": 4}`` →
    ``"sysfs:queue/max_sectors_kb" = 4``; a word, such as a scheduler's name, quoted): applied
    by iowall to the bed's device for the point, restored after it, and recorded with the run."""
    return plan + "[axes]\n" + "".join(f'"sysfs:queue/{k}" = {_toml(v)}\n' for k, v in knobs.items())


def _toml(v: int | str) -> str:
    return f'"{v}"' if isinstance(v, str) else str(int(v))


def _ram(fs: str = "xfs", mount_opts: str = "", size: str = "", mkfs_opts: str = "") -> str:
    bed = f'kind = "ram"\nfs = "{fs}"'
    if mount_opts:
        bed += f'\nmount_opts = "{mount_opts}"'
    if mkfs_opts:
        bed += f'\nmkfs_opts = "{mkfs_opts}"'
    if size:
        bed += f'\nsize = "{size}"'
    return bed


def _loop(fs: str, size: str = "4G") -> str:
    """The loop bed (an image on the disk, the loop device with direct I/O) with ``fs``."""
    return f'kind = "loop"\nfs = "{fs}"\nsize = "{size}"'


def _kind(
    name: str,
    workload: str,
    control: str,
    truth: Callable[[Evidence], Truth],
    *,
    bed: str = DIR_BED,
    control_bed: str | None = None,
    knobs: dict[str, int | str] | None = None,
    induce: Induce = nothing,
    control_induce: Induce | None = None,
    timed: bool = True,
) -> Kind:
    """A Kind whose expectations (wall, mechanism, condition, host_dependent, dropped) are
    the toml's; ``knobs`` (sysfs:queue ATTR → value) go into the condition's plan only;
    ``timed`` off ends both plans when their files are written (``_plan``)."""
    x = EXPECTED[name]
    plan = _plan(name, workload, bed, timed=timed)
    if knobs:
        plan = _axes(plan, knobs)
    return Kind(
        name,
        x["wall"],
        plan,
        induce,
        truth,
        what=x["condition"],
        host_dependent=bool(x.get("host_dependent", False)),
        mechanism=x["mechanism"],
        control=_plan(f"{name}-control", control, bed if control_bed is None else control_bed, timed=timed),
        control_induce=control_induce,
        dropped=str(x.get("dropped", "")),
    )


W1M = 'rw = "write"\nbs = "1M"\nsize = "512M"\ndirect = 1\nioengine = "psync"'
R1M = 'rw = "read"\nbs = "1M"\nsize = "512M"\ndirect = 0\ninvalidate = 1\nioengine = "psync"'
DR1M = 'rw = "read"\nbs = "1M"\nsize = "512M"\ndirect = 1\nioengine = "psync"'
W4K_QD32 = (
    'rw = "write"\nbs = "4k"\nsize = "256M"\ndirect = 1\nioengine = "libaio"\niodepth = 32\n'
    "[workload.options]\niodepth_batch_submit = 32\niodepth_batch_complete_min = 32"
)
TMPFS_READ = 'rw = "read"\nbs = "{bs}"\nsize = "512M"\ndirect = 0\nioengine = "psync"'
BTRFS_W = (
    'rw = "write"\nbs = "1M"\nsize = "512M"\ndirect = 0\nioengine = "psync"\nfsync = 64\n'
    "[workload.options]\nbuffer_compress_percentage = 50"
)
W16K = 'rw = "write"\nbs = "16k"\nsize = "256M"\ndirect = 0\nioengine = "psync"'
#: fio lays the file out (buffered, then fsync) before its job; the job's reads are direct
CSUM_READ = 'rw = "read"\nbs = "1M"\nsize = "1G"\ndirect = 1\nioengine = "psync"'
#: direct writes that extend a new file: no fallocate, so every write starts at its size
APPEND_QD32 = (
    'rw = "write"\nbs = "4k"\nsize = "1G"\ndirect = 1\nioengine = "libaio"\niodepth = 32\nfallocate = "none"'
)
#: APPEND_QD32 through io_uring
APPEND_URING = APPEND_QD32.replace('"libaio"', '"io_uring"')
#: direct 4 KiB random reads at iodepth 32 of a 256 MiB file: on the ram bed, a submitter on a CPU
RR4K_QD32 = 'rw = "randread"\nbs = "4k"\nsize = "256M"\ndirect = 1\nioengine = "libaio"\niodepth = 32'
#: random reads through libaio of a file fio lays out first (and drops from the cache)
RR4K_AIO = 'rw = "randread"\nbs = "4k"\nsize = "1G"\ndirect = {direct}\nioengine = "libaio"\niodepth = 32'
#: fio lays the file out in full (written) before the job, which then overwrites it
OVERWRITE = "\n[workload.options]\noverwrite = 1"
RW4K_QD32 = 'rw = "randwrite"\nbs = "4k"\nsize = "2G"\ndirect = 1\nioengine = "libaio"\niodepth = 32'
W4K_PREALLOC = 'rw = "write"\nbs = "4k"\nsize = "2G"\ndirect = 1\nioengine = "psync"\nfallocate = "native"'
AFFINE = 'rw = "read"\nbs = "1M"\nsize = "512M"\ndirect = 0\nioengine = "psync"\njobs = 2'
RR4K_QD64 = 'rw = "randread"\nbs = "4k"\nsize = "256M"\ndirect = 1\nioengine = "libaio"\niodepth = 64'
#: the shared-device reader's file (laid out by fio on the device before it reads)
READER_FILE = 256 * MIB
RR4K = f'rw = "randread"\nbs = "4k"\nsize = "{READER_FILE // MIB}M"\ndirect = 1\nioengine = "psync"'
#: 4 KiB files created and written by one job, a file per write, through the page cache:
#: fio creates each file when it opens it (no layout, no fallocate), writes its 4 KiB and
#: closes it. Not time-based: a pass over the files again would overwrite them (no creates);
#: fio's shared-memory pool holds 200,000 files (300,000 fail its assertion in alloc_new_file)
SMALL_FILES = (
    'rw = "write"\nbs = "4k"\nsize = "800M"\ndirect = 0\nioengine = "psync"\n'
    '[workload.options]\nnrfiles = 200000\nfilesize = "4k"\ncreate_on_open = 1\nopenfiles = 1\n'
    'file_service_type = "sequential"\nfallocate = "none"\ninvalidate = 0'
)

KINDS2: dict[str, Kind] = {
    k.name: k
    for k in [
        _kind("split", W1M, W1M, t_split, bed=_ram(), knobs={"max_sectors_kb": 4}),
        _kind("no-readahead", R1M, R1M, t_no_readahead, bed=_ram(), knobs={"read_ahead_kb": 0}),
        _kind("not-merged", W4K_QD32, W4K_QD32, t_not_merged, bed=LOOP, knobs={"nomerges": 2}),
        _kind(
            "per-call",
            TMPFS_READ.format(bs="1k"),
            TMPFS_READ.format(bs="1M"),
            t_per_call,
            bed=TMPFS,
        ),
        _kind(
            "zram-compression",
            W1M,
            W1M + "\n[workload.options]\nzero_buffers = 1",
            t_zram,
            induce=zram_xfs,
        ),
        _kind(
            "zram-decompression",
            DR1M + "\n[workload.options]\nbuffer_compress_percentage = 50",
            DR1M + "\n[workload.options]\nzero_buffers = 1",
            t_zram_read,
            induce=zram_xfs,
        ),
        _kind(
            "btrfs-compression",
            BTRFS_W,
            BTRFS_W,
            t_btrfs_compression,
            bed=_ram("btrfs", "compress-force=zstd:3", "2G"),
            control_bed=_ram("btrfs", size="2G"),
        ),
        _kind(
            "ext4-journal",
            W16K + "\nfsync = 1",
            W16K + "\nfsync = 1",
            t_ext4_journal,
            bed=_ram("ext4", "data=journal"),
            control_bed=_ram("ext4", "data=ordered"),
        ),
        _kind("btrfs-log", W16K + "\nfdatasync = 1", W16K, t_btrfs_log, bed=_ram("btrfs")),
        _kind(
            "dsync-log",
            W4K_PREALLOC + "\n[workload.options]\nsync = 1",
            W4K_PREALLOC,
            t_dsync_log,
            bed=_ram(),
        ),
        _kind(
            "cpu-affinity",
            AFFINE + '\n[workload.options]\ncpus_allowed = "0"\ncpus_allowed_policy = "shared"',
            AFFINE,
            t_cpu_affinity,
            bed=TMPFS,
        ),
        _kind(
            "tags",
            RR4K_QD64,
            RR4K_QD64,
            t_tags,
            bed=LOOP,
            knobs={"nr_requests": 4},
        ),
        _kind(
            "space-flush",
            SMALL_FILES,
            SMALL_FILES,
            t_space_flush,
            bed=_ram(size="1G"),
            control_bed=_ram(size="8G"),
            timed=False,
        ),
        _kind(
            "space-btrfs",
            SMALL_FILES,
            SMALL_FILES,
            t_space_btrfs,
            bed=_ram("btrfs", size="1G"),
            control_bed=_ram("btrfs", size="8G"),
            timed=False,
        ),
        _kind(
            "space-ext4",
            SMALL_FILES,
            SMALL_FILES,
            t_space_ext4,
            bed=_ram("ext4", size="1G", mkfs_opts="-i 4096"),
            control_bed=_ram("ext4", size="8G", mkfs_opts="-i 4096"),
            timed=False,
        ),
        _kind(
            "shared-device",
            RR4K,
            RR4K,
            t_shared_device,
            induce=shared_device(2 << 30),
            control_induce=ram_fs(2 << 30),
        ),
        _kind(
            "unwritten",
            RW4K_QD32 + '\nfallocate = "native"',
            RW4K_QD32 + '\nfallocate = "none"\n[workload.options]\noverwrite = 1',
            t_unwritten,
            bed=_ram(size="4G"),
            induce=xfs_transactions,
        ),
        _kind(
            "ext4-unwritten",
            RW4K_QD32 + '\nfallocate = "native"',
            RW4K_QD32 + '\nfallocate = "none"\n[workload.options]\noverwrite = 1',
            t_ext4_unwritten,
            bed=_ram("ext4", size="4G"),
            induce=tracepoint_hits(EXT4_UNWRITTEN_EVENT),
        ),
        _kind(
            "btrfs-csum",
            CSUM_READ,
            CSUM_READ,
            t_btrfs_csum,
            bed=_ram("btrfs", size="3G", mkfs_opts="--csum sha256"),
            control_bed=_ram("btrfs", size="3G"),
        ),
        _kind("append-dio", APPEND_QD32, APPEND_QD32 + OVERWRITE, t_append_dio, bed=_loop("xfs")),
        _kind("ext4-append-dio", APPEND_QD32, APPEND_QD32 + OVERWRITE, t_append_dio, bed=_loop("ext4")),
        _kind(
            "uring-append-dio", APPEND_URING, APPEND_URING + OVERWRITE, t_uring_append_dio, bed=_loop("xfs")
        ),
        _kind(
            "ext4-uring-append-dio",
            APPEND_URING,
            APPEND_URING + OVERWRITE,
            t_ext4_uring_append_dio,
            bed=_loop("ext4"),
        ),
        _kind("bfq", RR4K_QD32, RR4K_QD32, t_bfq, bed=_ram(), knobs={"scheduler": "bfq"}),
        _kind(
            "buffered-aio",
            RR4K_AIO.format(direct=0),
            RR4K_AIO.format(direct=1),
            t_buffered_aio,
            bed=_loop("xfs"),
        ),
    ]
}

assert set(KINDS2) == set(EXPECTED), (
    f"tests/corpus2_expected.toml and KINDS2 disagree: {sorted(set(KINDS2) ^ set(EXPECTED))}"
)

#: the kinds run on this machine, in the toml's order (those marked ``dropped`` left out)
WALL_KINDS2 = tuple(k for k in EXPECTED if not KINDS2[k].dropped)


# --------------------------------------------------------------------------------------
# what could be left behind


def _block_queues() -> dict[str, dict[str, str]]:
    return {p.name: queue_settings(p.name) for p in sorted(Path("/sys/block").glob("loop*"))} | (
        {"zram0": queue_settings("zram0")} if ZRAM.is_dir() else {}
    )


def _neighbours() -> list[str]:
    out = []
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            argv = p.read_bytes().split(b"\0")
            if argv and argv[0].endswith(b"fio") and any(NEIGHBOUR.encode() in a for a in argv):
                out.append(p.parent.name)
    return sorted(out)


def clean2() -> dict[str, Any]:
    """The first corpus's ``clean()`` and: zram0's disksize and compression algorithm, the
    queue settings of every loop device and of zram0, the neighbour writers still alive, and
    mounts of iowall's own beds. Compare two calls with ``left_behind``."""
    out: dict[str, Any] = dict(clean())
    if ZRAM.is_dir():
        out["zram0"] = [
            f"disksize={(ZRAM / 'disksize').read_text().strip()}",
            f"comp_algorithm={_selected((ZRAM / 'comp_algorithm').read_text())}",
        ]
    out["queues"] = _block_queues()
    out["neighbours"] = _neighbours()
    with open("/proc/self/mounts") as f:
        out["iowall_mounts"] = [line.split()[1] for line in f if line.split()[1].startswith("/run/iowall/")]
    return out


def _settled(dev: str, settings: dict[str, str]) -> dict[str, str]:
    """A device's queue settings as compared: a loop device's read_ahead_kb only as 0 or
    not, since the kernel sets it anew at each attach (128 over a file in /dev/shm, 2560 over
    one on the virtio disk with direct I/O, whatever it was before) and a detached device
    keeps its last attach's value; 0 is the one value a corpus writes."""
    if dev.startswith("loop") and "read_ahead_kb" in settings:
        return {**settings, "read_ahead_kb": "0" if settings["read_ahead_kb"] == "0" else "not 0"}
    return settings


def left_behind(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What differs between two ``clean2()``: every entry but ``queues`` as a pair; for
    queues, each device whose settings changed (``_settled``), and each device that appeared
    meanwhile (a loop device made by ``losetup --find``) whose settings are not those most
    devices of its kind had before. Empty: nothing was left behind."""
    diff: dict[str, Any] = {k: (before.get(k), after.get(k)) for k in after if k != "queues"}
    diff = {k: v for k, v in diff.items() if v[0] != v[1]}
    old = {d: _settled(d, v) for d, v in before.get("queues", {}).items()}
    new = {d: _settled(d, v) for d, v in after.get("queues", {}).items()}
    usual = Counter(repr(sorted(v.items())) for k, v in old.items() if k.startswith("loop"))
    common = usual.most_common(1)[0][0] if usual else ""
    queues: dict[str, tuple[Any, dict[str, str]]] = {}
    for dev, settings in new.items():
        if dev in old and old[dev] != settings:
            queues[dev] = (old[dev], settings)
        elif dev not in old and common and repr(sorted(settings.items())) != common:
            queues[dev] = ("(new)", settings)
    if queues:
        diff["queues"] = queues
    return diff
