"""Why a thread was blocked: the reason one sampled off-CPU kernel stack stands for (pure).

Stacks are folded, root first (``entry_SYSCALL_64;…;io_schedule``), as the ``threadstate``
probe stores them. The reasons are tried in the order of ``REASONS``; the first whose
patterns match any frame decides, because an outer cause owns the waits it makes: an fsync
that waits for writeback is the fsync's time, balance_dirty_pages sleeping is dirty
throttling, reclaim that waits for a folio under writeback is reclaim, and a lock slow path
is the lock's whatever asked for it. What no pattern matches is ``other`` (named by its
leaf frame), never hidden.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache

from .kernel_knowledge import mechanism_of

#: Frames of a call that syncs a file (fsync, fdatasync, an O_SYNC write's vfs_fsync_range,
#: fadvise, sync_file_range, sync): a wait in them is the sync's
SYNC_CALLS: tuple[str, ...] = (
    "do_fsync",
    "__x64_sys_fsync",
    "__x64_sys_fdatasync",
    "vfs_fsync*",
    "*_sync_file",
    "generic_fadvise",
    "__x64_sys_fadvise64",
    "__filemap_fdatawrite_range",
    "filemap_fdatawrite*",
    "filemap_write_and_wait*",
    "xfs_file_fsync",
    "file_write_and_wait_range",
    "__x64_sys_sync_file_range",
    "sync_file_range",
    "io_fsync",
    "blkdev_fsync",
    "__x64_sys_sync*",
    "ksys_sync*",
)
#: Frames of the filesystems' logs: asleep in them is waiting for the log (an fsync's wait,
#: or a transaction's for log space); on a CPU outside a sync call, a transaction's commit
LOG_FRAMES: tuple[str, ...] = ("xlog_*", "xfs_log_force*", "jbd2_*", "btrfs_sync_*")

#: (reason, label, patterns), in the order they are tried.
REASONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # the filesystem short of free space for a reservation: it writes back dirty data (or
    # commits) to free what delayed allocation and its reservations hold, and the caller
    # waits: XFS after ENOSPC, ext4 with its free blocks low (or, out of them, forcing the
    # journal's commit to release freed blocks before a retry), btrfs on a reservation ticket
    # (handle_reserve_ticket is inlined into __reserve_bytes, which sleeps only there)
    (
        "space",
        "the filesystem's free space (an ENOSPC flush)",
        (
            "xfs_flush_inodes",
            "ext4_nonda_switch",
            "ext4_should_retry_alloc",
            "__reserve_bytes",
            "handle_reserve_ticket",
            "wait_reserve_ticket",
            "priority_reclaim_*_space",
        ),
    ),
    (
        "lock",
        "kernel locks (mutex, rwsem)",
        (
            "rwsem_down_*",
            "__mutex_lock*",
            "mutex_lock_*slowpath*",
            "rt_mutex_*slowpath*",
            "percpu_rwsem_wait",
            "__percpu_down_read*",
            "__down_*",
            "down_read_*slowpath*",
            "rwbase_*",
            "__rt_mutex_*",
            "osq_lock",
            "xfs_ilock",
            "xfs_iolock*",
            "inode_lock*",
            "xfs_buf_lock",
            "xfs_buf_find_lock",
            # btrfs's tree block locks (rwsems whose slow path /proc/PID/stack leaves out)
            "btrfs_tree_lock*",
            "btrfs_tree_read_lock*",
            "lock_buffer",
            "__lock_buffer",
            "__folio_lock*",
        ),
    ),
    (
        "reclaim",
        "memory reclaim",
        (
            "try_to_free_mem_cgroup_pages",
            "try_to_free_pages",
            "__alloc_pages_direct_reclaim",
            "__perform_reclaim",
            "mem_cgroup_handle_over_high",
            "reclaim_throttle",
            "shrink_node*",
            "shrink_lruvec",
            "shrink_folio_list",
            "do_try_to_free_pages",
            "memory_max_write",
            "mem_cgroup_out_of_memory",
            "__alloc_pages_direct_compact",
            "compact_zone*",
            "try_charge_memcg",
            "charge_memcg",
        ),
    ),
    ("dirty-throttle", "dirty throttling (balance_dirty_pages)", ("balance_dirty_pages*",)),
    (
        "fsync",
        "fsync and synchronous writeback (fdatasync, fadvise, the log)",
        (*SYNC_CALLS, *LOG_FRAMES),
    ),
    (
        "fault",
        "page faults of mapped files",
        (
            "handle_mm_fault",
            "exc_page_fault",
            "do_user_addr_fault",
            "filemap_fault",
            "__do_fault",
            "do_swap_page",
        ),
    ),
    (
        "block-queue",
        "block-layer queueing (tags, rq-qos)",
        (
            "blk_mq_get_tag",
            "rq_qos_wait",
            "wbt_wait",
            "__rq_qos_throttle",
            "blk_throtl_*",
            "blkcg_maybe_throttle_current",
            "iolatency_*",
            "ioc_rqos_throttle",
        ),
    ),
    (
        "io",
        "I/O completion",
        (
            "io_schedule*",
            "inode_dio_wait*",
            "blkdev_direct_IO*",
            "__blkdev_direct_IO*",
            "iomap_dio_rw",
            "__iomap_dio_rw",
            "submit_bio_wait",
            "folio_wait_bit*",
            "folio_wait_locked*",
            "folio_wait_writeback",
            "__folio_lock*",
            "filemap_get_pages",
            "filemap_read",
            "wait_on_page_*",
            "io_cqring_wait",
            "io_uring_*wait*",
            "blk_*poll*",
            "__wait_on_buffer",
            "bit_wait_io",
            "dio_await_completion",
            "aio_read_events*",
            "read_events",
            "__x64_sys_io_getevents",
            "__x64_sys_io_uring_enter",
            # an io-wq worker running a request blocked where no frame above says why; not
            # ``io_wq_*``: an idle worker waits for work in io_wq_worker ("wait", below)
            "io_wq_submit_work",
            "ext4_*_io_end*",
        ),
    ),
    (
        "worker",
        "kernel workers' work (flush_work, completions)",
        (
            "__flush_work",
            "flush_work",
            "__flush_workqueue",
            "flush_workqueue",
            "drain_workqueue",
            "xfs_inodegc_flush",
            "xfs_flush_inodes",
            "wait_for_completion*",
            "synchronize_rcu*",
            "rcu_barrier",
            "flush_delayed_work",
            "cancel_work_sync",
            "kthread_flush_work",
        ),
    ),
    (
        "sleep",
        "voluntary sleep (nanosleep)",
        (
            "hrtimer_nanosleep",
            "do_nanosleep",
            "common_nsleep",
            "__x64_sys_nanosleep",
            "__x64_sys_clock_nanosleep",
            "schedule_hrtimeout*",
            "msleep*",
        ),
    ),
    (
        "wait",
        "other threads or events (futex, poll, pipes)",
        (
            "futex_*",
            "do_futex",
            "__x64_sys_futex*",
            "do_sys_poll",
            "do_select",
            "core_sys_select",
            "do_epoll_wait",
            "ep_poll",
            "pipe_read",
            "pipe_write",
            "do_wait",
            "kernel_wait4",
            "__x64_sys_wait4",
            "unix_stream_read_generic",
            "wait_woken",
            "sk_wait_data",
            "do_sigtimedwait",
            "__x64_sys_pause",
            "sigsuspend",
            "__x64_sys_rt_sigsuspend",
            "n_tty_read",
            "io_wq_worker",
            "kthread_worker_fn",
            "worker_thread",
        ),
    ),
)
#: Every reason, plus the stack that matched nothing.
ORDER: tuple[str, ...] = tuple(r[0] for r in REASONS) + ("other",)
#: A stack whose leaf is one of these is a task preempted, runnable (not blocked): a runnable
#: task off its CPU has a stack too. Since the ``threadstate`` probe reads each look's state,
#: such a look carries the leaf ``[runnable]`` (probes.threadstate.RUNNABLE); the frames are
#: what older runs, stacks only, can tell.
PREEMPTED = "preempted"
_PREEMPT_LEAF = re.compile(
    r"^(irqentry_exit.*|preempt_schedule.*|_?_cond_resched|"
    r"exit_to_user_mode.*|asm_sysvec_.*|schedule_preempt_disabled|"
    r"raw_irqentry_exit_cond_resched|\[runnable\])$"
)
LABELS: dict[str, str] = {r[0]: r[1] for r in REASONS} | {"other": "other kernel waits"}
#: Reasons that are not work of the point (an idle helper thread waits in these).
IDLE = ("sleep", "wait")
#: Frames that say nothing of why (the scheduler, generic plumbing).
_PLUMBING = re.compile(
    r"^(__schedule|schedule|schedule_timeout|io_schedule|"
    r"do_syscall_64|entry_SYSCALL_64.*|x64_sys_call|__x64_sys_.*|"
    r"ret_from_fork.*|kthread)$"
)
#: ``SYNC_CALLS`` as one pattern: a filesystem's log frames outside one are its
#: transactions' own commit work on a CPU, not a sync
SYNC_CALL = re.compile("|".join(fnmatch.translate(p) for p in SYNC_CALLS))
#: Frames of the XFS, ext4 (jbd2) and btrfs logs: an fsync waiting in them waits for a log force.
LOG_FORCE = re.compile(r"^(xlog_|xfs_log_force|jbd2_|btrfs_sync_log|btrfs_commit_transaction)")


@dataclass(frozen=True)
class Reason:
    """What one blocked stack stands for: the reason and the frame that says so best."""

    reason: str
    function: str


def _compiled() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (name, re.compile("|".join(fnmatch.translate(p) for p in pats))) for name, _, pats in REASONS
    )


_TABLE = _compiled()

#: Tail calls the unwinder cannot see: a function whose last act is a call jumps to it, so
#: its own frame is gone from a stack sampled inside that call. (caller, callee) -> the
#: function between them. xfs_flush_inodes ends in flush_work(): in two stacks of three
#: of creators waiting for it (small-file-writeback, 2026-12-01) only ``xfs_create;__flush_work``.
TAIL_CALLS: dict[tuple[str, str], str] = {
    ("xfs_create", "__flush_work"): "xfs_flush_inodes",
    ("xfs_file_buffered_write", "__flush_work"): "xfs_flush_inodes",
}


@lru_cache(maxsize=8192)
def restore_tail_calls(stack: str) -> str:
    """``stack`` (folded, root first) with the frames of ``TAIL_CALLS`` put back where a
    caller is followed straight by the callee a tail call of theirs reached."""
    frames = stack.split(";")
    out = frames[:1]
    for prev, f in zip(frames, frames[1:], strict=False):
        lost = TAIL_CALLS.get((prev, f))
        if lost is not None:
            out.append(lost)
        out.append(f)
    return ";".join(out)


#: sleeping frames that take an inode's rwsem inline (inode_lock, inode_lock_shared): the
#: slow path is a scheduler function /proc/TID/stack leaves out, so asleep on the lock, the
#: taker shows innermost. On 6.18 ext4's write paths, direct and buffered, are inlined into
#: ext4_file_write_iter; their other sleeps show frames of their own (inode_dio_wait, jbd2,
#: iomap). Only as the sleeping frame: the same function above any other wait is not a lock.
INLINE_LOCK_LEAF = re.compile(r"^(ext4_file_write_iter|ext4_dio_write_iter|ext4_buffered_write_iter)$")


@lru_cache(maxsize=8192)
def classify(stack: str) -> Reason:
    """The reason of one folded blocked stack (root first). The function named is the
    leaf-most frame that matched the reason (for ``other``: the leaf-most frame that is not
    scheduler plumbing). A preempted task's stack is :data:`PREEMPTED`, not a reason."""
    frames = [f for f in stack.split(";") if f]
    if frames and _PREEMPT_LEAF.match(frames[-1]):
        return Reason(PREEMPTED, frames[-1])
    leaf = leaf_of(stack)
    if INLINE_LOCK_LEAF.match(leaf):
        return Reason("lock", leaf)
    for name, rx in _TABLE:
        for f in reversed(frames):
            if rx.match(f):
                return Reason(name, f)
    return Reason("other", leaf_of(stack) or "(empty stack)")


def leaf_of(stack: str) -> str:
    """The leaf-most frame that is not scheduler plumbing: where the task actually sleeps
    (``rq_qos_wait`` under an fsync, ``xlog_wait_on_iclog`` under a log force)."""
    return next((f for f in reversed(stack.split(";")) if f and not _PLUMBING.match(f)), "")


#: a system call's own entry frame: ``__x64_sys_fadvise64``, or, where that wrapper is
#: inlined into the dispatcher (``write`` on 6.18: ``do_syscall_64;ksys_write``), its body
_SYSCALL_FRAME = re.compile(r"^(?:__x64_sys_|__do_sys_|__se_sys_|ksys_)(\w+)$")


def syscall_of(stack: str) -> str:
    """The system call a stack is in (``fadvise64`` for ``…;__x64_sys_fadvise64;…``,
    ``write`` for ``…;do_syscall_64;ksys_write;…``), or ''."""
    for f in stack.split(";"):
        m = _SYSCALL_FRAME.match(f)
        if m:
            return m.group(1)
    return ""


def caller_of(stack: str, reason: str) -> str:
    """The first frame above the reason's own machinery: who took the lock, who entered
    reclaim (``xfs_file_buffered_write`` for an rwsem slow path)."""
    frames = [f for f in stack.split(";") if f]
    rx = dict(_TABLE).get(reason)
    if rx is None:
        return ""
    hit = max((i for i, f in enumerate(frames) if rx.match(f)), default=None)
    if hit is None:
        return ""
    first = min(i for i, f in enumerate(frames) if rx.match(f))
    for f in reversed(frames[:first]):
        if not _PLUMBING.match(f) and not f.startswith(("down_", "up_", "mutex_lock")):
            return f
    return frames[hit]


#: an asynchronous submission's own frame: its I/O completes after the call returns (an
#: io_submit; io_uring's io-wq worker issuing a write it could not issue without blocking:
#: its kiocb is asynchronous too, so a direct I/O waits for itself there only when forced)
ASYNC_SUBMIT = ("io_submit_one", "io_wq_submit_work")
#: the frame of io_uring's io-wq worker running a request for a job
IO_WQ = "io_wq_submit_work"
#: the write paths a direct write takes above its filesystem's lock (XFS's aligned and
#: unaligned paths, ext4's, btrfs's, iomap's); ext4's direct path is inlined into
#: ext4_file_write_iter on 6.18, which its buffered writes share (io-wq runs buffered writes of
#: one file one at a time, hashed by inode, so its workers do not queue on that lock for them)
DIRECT_WRITE_PATH = re.compile(
    r"^(xfs_file_dio_write.*|ext4_dio_write_iter|ext4_file_write_iter|btrfs_direct_write|__?iomap_dio_rw)$"
)
#: what an io-wq worker asleep on an inode's lock inside a direct write stands for
WQ_QUEUED = "io-wq-queued"
#: where a direct I/O sleeps waiting for its own completion (the wait loop of __iomap_dio_rw)
DIO_OWN_WAIT = ("__iomap_dio_rw", "iomap_dio_rw")
#: what a direct I/O asleep in its own wait inside an asynchronous submission stands for
FORCED_WAIT = "dio-serialised"
#: where a buffered I/O sleeps for the page cache: a folio being read (locked) or written back
PAGE_CACHE_WAIT = re.compile(r"^(folio_wait_bit.*|folio_wait_locked.*|__folio_lock.*|folio_wait_writeback)$")
#: what a buffered I/O asleep for the page cache inside an asynchronous submission stands for
SYNC_BUFFERED = "buffered-aio"


def blocked_mechanism(stack: str) -> str:
    """The mechanism a sleeping stack stands for: the kernel-knowledge table's, and one thing
    only the sleeping frame tells. A direct I/O waits for itself in ``__iomap_dio_rw`` only
    when the call is synchronous or its filesystem forced the wait (IOMAP_DIO_FORCE_WAIT);
    an io_submit is never synchronous, so asleep there inside one, the filesystem serialised
    it (ext4's extending or unaligned direct writes). A buffered I/O asleep for the page cache
    inside one ran in the call: libaio is asynchronous only for direct I/O (an io-wq worker
    runs buffered I/O that way by design, beside others). An io-wq worker asleep on a lock
    inside a direct write (XFS's iolock, ext4's i_rwsem) is a job's write queued behind the
    one holding it (``WQ_QUEUED``)."""
    frames = [f for f in stack.split(";") if f and f != "[runnable]"]
    if not any(f in ASYNC_SUBMIT for f in frames):
        return mechanism_of(stack)
    leaf = leaf_of(";".join(frames))
    if leaf in DIO_OWN_WAIT:
        return FORCED_WAIT
    mech = mechanism_of(stack)
    if IO_WQ in frames:
        queued = classify(stack).reason == "lock" and any(DIRECT_WRITE_PATH.match(f) for f in frames)
        return WQ_QUEUED if queued else mech
    return SYNC_BUFFERED if PAGE_CACHE_WAIT.match(leaf) else mech
