"""Kernel knowledge: well-known kernel functions turned into the mechanisms a kernel developer
names (pure data, one row a mechanism; docs/explain.md "Kernel knowledge").

A stack (folded, root first, as the ``threadstate`` and ``profile`` probes store them) stands
for the mechanism of the row it matches. When several rows match, the row of the higher
rank wins: an *owner* (a journal commit, a log force, compression, a request tag) owns the
generic machinery it waits in or calls (writeback, the copy), so a log-tree commit waiting
for its blocks' writeback is the log tree's, and lzo inside the writeback of zram is the
compression's. Among rows of one rank the leaf-most match wins. What the table does not know
is ``""``: the caller names it by its function and caller, never by a guess.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache

from .kernel_paths import RULES as PATH_RULES

#: the copy path's frames, as the CPU-path table knows them
COPY_PATTERNS: tuple[str, ...] = next(r[3] for r in PATH_RULES if r[0] == "copy")

#: an owner: the mechanism that makes the wait or the work
OWNER = 3
#: a mechanism of its own that an owner may call into (page tables, locks, faults)
INNER = 2
#: generic machinery: named only when no owner or inner row matches
GENERIC = 1


@dataclass(frozen=True)
class Mechanism:
    """One row: the mechanism's name, its rank, the frames that mean it, one line of what it is."""

    name: str
    rank: int
    patterns: tuple[str, ...]
    meaning: str


def _globs(text: str) -> tuple[str, ...]:
    """A row's patterns written as words (long rows read as a few lines, not one per line)."""
    return tuple(text.split())


#: The table. Patterns are fnmatch globs on function names (without ``_[k]`` or offsets).
TABLE: tuple[Mechanism, ...] = (
    # -- on a CPU: work the kernel does per byte ---------------------------------------------
    Mechanism(
        "compression",
        OWNER,
        _globs(
            "lzo1x_* lzorle* lz4_compress* LZ4_compress* lz4_decompress* LZ4_decompress* "
            "zstd_compress* ZSTD_compress* ZSTD_*Block* ZSTD_encode* HUF_compress* zstd_decompress* "
            "ZSTD_decompress* zlib_deflate* deflate_* zlib_inflate* zcomp_compress zcomp_decompress "
            "btrfs_compress_* compress_file_range *_compress_folios *_compress_pages"
        ),
        "data compressed or decompressed by the CPU (zram in the submitter's context, btrfs in its workers)",
    ),
    Mechanism(
        "checksum",
        # inner, not an owner: a checksum is computed for something (btrfs's data read, an
        # extent block a conversion splits, a journal's commit block), and what it is for
        # owns it; with no owner in the stack (btrfs's endio workers) it names the work itself
        INNER,
        _globs(
            "crc32c* crc32_* __crc32c* crc_pcl crc32c_pcl* xxh64* xxh32* blake2b* sha256_* "
            "csum_partial* btrfs_csum_* btrfs_calculate_block_csum* btrfs_check_read_bio "
            "btrfs_lookup_bio_sums xfs_verify_cksum xfs_start_cksum* ext4_chksum jbd2_chksum"
        ),
        "checksums computed or verified per block (btrfs data checksums, metadata CRCs)",
    ),
    Mechanism(
        "encryption",
        OWNER,
        _globs("aesni_* aes_* *_aes_* xts_* chacha* crypt_convert* kcryptd_* fscrypt_*crypt* blk_crypto_*"),
        "data encrypted or decrypted by the CPU (dm-crypt, fscrypt, inline crypto fallback)",
    ),
    Mechanism(
        "page-zeroing",
        OWNER,
        _globs(
            "clear_page* clear_user* __clear_user clear_huge_page folio_zero_* zero_user_segments "
            "iomap_zero_* clear_highpage* folio_zero_user process_huge_page"
        ),
        "pages zeroed before use (fresh page-cache folios, holes, huge pages)",
    ),
    Mechanism(
        "block-allocation",
        OWNER,
        (
            "xfs_bmapi_write",
            "xfs_bmap_btalloc*",
            "xfs_alloc_vextent*",
            "xfs_alloc_ag_vextent*",
            "ext4_mb_new_blocks",
            "ext4_mb_regular_allocator",
            "ext4_mb_*scan*",
            "find_free_extent*",
            "btrfs_reserve_extent",
        ),
        "the filesystem allocating blocks (extents) for new data",
    ),
    Mechanism(
        "unwritten-conversion",
        OWNER,
        (
            "xfs_iomap_write_unwritten",
            "xfs_dio_write_end_io",
            # deeper than xfs_bmapi_write (block-allocation, the same rank): leaf-most wins, so
            # the conversion's extent work under it is the conversion's, not an allocation's
            "xfs_bmapi_convert_unwritten",
            "xfs_bmap_add_extent_unwritten_real",
            "ext4_convert_unwritten*",
            "ext4_end_io_rsv_work",
            "ext4_ext_convert_to_initialized",
            "ext4_ext_handle_unwritten_extents",
            # its callee, for the split before a write into an unwritten extent and the
            # conversion after: the caller is inlined into ext4_ext_map_blocks on 6.18
            "ext4_split_convert_extents",
        ),
        "unwritten (preallocated) extents split around a write into them and converted to written "
        "ones when its I/O completes, a transaction each",
    ),
    Mechanism(
        "page-tables",
        INNER,
        (
            "unmap_page_range",
            "zap_pte_range",
            "zap_pmd_range",
            "__pte_alloc*",
            "pte_alloc*",
            "set_pte_range",
            "flush_tlb_*",
            "native_flush_tlb*",
            "tlb_finish_mmu",
            "copy_pte_range",
            "change_protection*",
            "change_pte_range",
            "filemap_map_pages",
            "next_uptodate_folio",
            "do_set_pte",
        ),
        "page-table work: mapping, unmapping and TLB flushes (mmap I/O, munmap, fault-around)",
    ),
    Mechanism(
        "loop-worker",
        OWNER,
        (
            "loop_process_work",
            "loop_workfn",
            "loop_rootcg_workfn",
            "lo_rw_aio*",
            "lo_write_simple",
            "lo_read_simple",
        ),
        "the loop device's worker thread doing each request against its backing file",
    ),
    # -- blocked: who makes the wait ---------------------------------------------------------
    Mechanism(
        "journal-commit",
        OWNER,
        (
            "jbd2_log_wait_commit",
            "jbd2_complete_transaction",
            "jbd2_journal_force_commit*",
            "jbd2_trans_will_send_data_barrier",
            "ext4_force_commit",
        ),
        "ext4's jbd2 journal commit: an fsync waits for the running transaction to be written",
    ),
    Mechanism(
        "journal-space",
        OWNER,
        (
            "add_transaction_credits",
            "__jbd2_log_wait_for_space",
            "jbd2_log_wait_for_space",
            "jbd2_log_do_checkpoint",
            "wait_transaction_locked",
            "wait_transaction_switching",
        ),
        "jbd2 journal space or a locked transaction: a handle waits until a checkpoint or commit frees room",
    ),
    Mechanism(
        "log-force",
        OWNER,
        (
            "xlog_wait_on_iclog",
            "xfs_log_force*",
            "xlog_force_*",
            "xlog_cil_force*",
            "xlog_wait",
        ),
        "the XFS log forced to disk: an fsync or O_SYNC write waits for its log write",
    ),
    Mechanism(
        "cache-flush",
        OWNER,
        ("blkdev_issue_flush",),
        "a cache flush (REQ_PREFLUSH) the fsync sent: it completes when the device has put what it "
        "acknowledged on stable media (a loop device: after its worker has done the requests queued "
        "before it, and fsync of its backing file)",
    ),
    Mechanism(
        "log-space",
        OWNER,
        ("xlog_grant_head_wait", "xlog_grant_head_check", "xfs_log_reserve", "xlog_ticket_*"),
        "XFS log space: a transaction waits for room in the log (the tail must move first)",
    ),
    Mechanism(
        "log-tree",
        OWNER,
        (
            "btrfs_sync_log",
            "btrfs_log_dentry_safe",
            "btrfs_log_inode*",
            "wait_log_commit",
            "wait_for_writer",
            "btrfs_wait_tree_log_extents",
        ),
        "btrfs's log tree: an fsync logs the inode and commits the log tree and the super blocks",
    ),
    Mechanism(
        "transaction-commit",
        OWNER,
        ("btrfs_commit_transaction", "wait_current_trans", "btrfs_wait_for_commit"),
        "a full btrfs transaction commit",
    ),
    Mechanism(
        "space-flush",
        OWNER,
        (
            "xfs_flush_inodes",
            "ext4_nonda_switch",
            "ext4_should_retry_alloc",
            "handle_reserve_ticket",
            "wait_reserve_ticket",
            "priority_reclaim_*_space",
            # not btrfs's __reserve_bytes: asleep there is a ticket's wait (offcpu's "space"),
            # but on a CPU it is every reservation's own bookkeeping
        ),
        "the filesystem short of free space for a reservation: it writes back dirty data (XFS "
        "every dirty inode after ENOSPC, ext4 when its free blocks run low) or flushes and commits "
        "(btrfs, while the reservation waits on a ticket) so that what delayed allocation and "
        "reservations hold becomes real, smaller allocations",
    ),
    Mechanism(
        "dio-serialised",
        OWNER,
        # also ``offcpu.blocked_mechanism``: a direct I/O asleep in its own wait inside io_submit
        ("inode_dio_wait*",),
        "the filesystem serialising an inode's direct I/O: a direct write that extends the file "
        "or is not block-aligned (or, on ext4, lands in unwritten extents) waits for the inode's "
        "direct I/O in flight to drain (inode_dio_wait) or for its own completion before its "
        "call returns (IOMAP_DIO_FORCE_WAIT), so the I/O goes one at a time",
    ),
    Mechanism(
        "buffered-aio",
        OWNER,
        (),  # no frame of its own: ``offcpu.blocked_mechanism`` tells it from the sleeping frame
        "buffered I/O submitted asynchronously: libaio is asynchronous only for direct I/O, so a "
        "buffered read runs inside io_submit and waits there for the page cache to read its folio",
    ),
    Mechanism(
        "io-wq-queued",
        OWNER,
        (),  # no frame of its own: ``offcpu.blocked_mechanism`` tells it from the worker's stack
        "io_uring's io-wq workers asleep on an inode's lock inside a direct write: writes io_uring "
        "could not issue without blocking, handed to workers that queue behind the one holding it",
    ),
    Mechanism(
        "io-scheduler",
        OWNER,
        _globs(
            "bfq_* __bfq_* kyber_* dd_*request* __dd_* dd_bio_merge dd_limit_depth dd_has_work "
            # the elevator's dispatch loop and the io contexts only bfq uses (blk-mq-sched.c,
            # blk-ioc.c): none of them runs without a scheduler
            "*blk_mq_do_dispatch_sched blk_mq_sched_assign_ioc ioc_*_icq"
        ),
        "the block layer's I/O scheduler (bfq, mq-deadline or kyber): each request is merged "
        "against its queues, inserted into it and dispatched from it one at a time under its lock "
        "(interrupts off), work the submitter pays per request that the none scheduler does not",
    ),
    Mechanism(
        "tags",
        OWNER,
        ("blk_mq_get_tag",),
        "no free request tag: the queue's nr_requests (or the device's queue depth) are all in flight",
    ),
    Mechanism(
        "wbt",
        OWNER,
        ("wbt_wait", "wbt_*throttle*"),
        "writeback throttling (rq-qos wbt): writes held back to keep read latency under wbt_lat_usec",
    ),
    Mechanism(
        "iolatency",
        OWNER,
        ("blkcg_iolatency_throttle", "iolatency_*"),
        "the cgroup io.latency policy (rq-qos) holding this group's I/O for another's latency target",
    ),
    Mechanism(
        "iocost",
        OWNER,
        # not ``ioc_*``: blk-ioc.c's io contexts (ioc_find_get_icq, ioc_lookup_icq) are bfq's
        ("ioc_rqos_*", "iocg_*", "ioc_timer_fn", "ioc_refresh_*"),
        "the cgroup io.cost policy (rq-qos) holding I/O over this group's share of the device's cost",
    ),
    Mechanism(
        "blk-throttle",
        OWNER,
        ("blk_throtl_*", "blkcg_maybe_throttle_current", "__blkcg_punt_bio_submit"),
        "the cgroup io.max / blkio.throttle limit",
    ),
    Mechanism(
        "rq-qos",
        INNER,
        ("rq_qos_wait", "__rq_qos_throttle"),
        "an rq-qos policy (wbt, io.latency or io.cost) holding the request",
    ),
    Mechanism(
        "dirty-limit",
        OWNER,
        ("balance_dirty_pages*",),
        "dirty throttling: the writer paused until writeback brings dirty pages under the limit",
    ),
    Mechanism(
        "reclaim",
        INNER,
        (
            "try_to_free_mem_cgroup_pages",
            "try_to_free_pages",
            "shrink_node*",
            "shrink_lruvec",
            "shrink_folio_list",
            "reclaim_throttle",
            "mem_cgroup_handle_over_high",
        ),
        "memory reclaim in the task's own context",
    ),
    Mechanism(
        "compaction",
        INNER,
        ("compact_zone*", "isolate_migratepages*", "migrate_pages*", "__alloc_pages_direct_compact"),
        "memory compaction for a large allocation (huge pages, large folios)",
    ),
    Mechanism(
        "read-fault",
        INNER,
        ("filemap_fault", "do_read_fault", "__do_fault", "do_sync_mmap_readahead", "do_async_mmap_readahead"),
        "a page fault on a mapped file that reads it in",
    ),
    Mechanism(
        "write-fault",
        INNER,
        ("do_wp_page", "do_shared_fault", "*_page_mkwrite", "iomap_page_mkwrite", "wp_page_*"),
        "a write fault on a mapped file (page_mkwrite: the page made writable and dirtied)",
    ),
    Mechanism(
        "btree-lock",
        INNER,
        ("btrfs_tree_lock*", "btrfs_tree_read_lock*", "btrfs_lock_root_node", "btrfs_read_lock_root_node"),
        "btrfs's tree block locks: a search from a tree's root locks its root node, so the creates "
        "and unlinks of one subvolume take it in turn (a subvolume each does not)",
    ),
    Mechanism(
        "inode-lock",
        INNER,
        ("xfs_ilock*", "xfs_iolock*", "inode_lock*", "down_write", "down_read"),
        "an inode's lock (i_rwsem, the XFS iolock): writers of one file take it in turn",
    ),
    Mechanism(
        "rwsem",
        INNER,
        ("rwsem_down_*", "down_read_*slowpath*", "__down_*"),
        "a read-write semaphore's slow path",
    ),
    Mechanism("mutex", INNER, ("__mutex_lock*", "mutex_lock_*slowpath*"), "a mutex's slow path"),
    Mechanism(
        "spinlock",
        INNER,
        ("native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath", "queued_spin_lock_slowpath"),
        "a contended spinlock",
    ),
    Mechanism(
        "folio-lock",
        INNER,
        ("__folio_lock*", "folio_lock*", "__lock_page*", "folio_wait_locked*"),
        "a page-cache folio's lock (held while the folio is read in)",
    ),
    Mechanism(
        "readahead",
        GENERIC,
        ("page_cache_sync_ra", "page_cache_async_ra", "page_cache_ra_*", "force_page_cache_ra", "read_pages"),
        "readahead: the page cache reading a file ahead of the reader",
    ),
    Mechanism(
        "writeback",
        GENERIC,
        (
            "folio_wait_writeback",
            "folio_wait_stable",
            "__filemap_fdatawait_range",
            "filemap_fdatawait*",
            "file_write_and_wait_range",
            "btrfs_wait_ordered_range",
            "btrfs_start_ordered_extent*",
            "wb_wait_for_completion",
            "writeback_sb_inodes",
            "iomap_writepages",
            "write_cache_pages",
            "do_writepages",
        ),
        "the writeback of dirty pages: an fsync or a writer waits for folios under writeback",
    ),
    Mechanism(
        "copy",
        GENERIC,
        (*COPY_PATTERNS, "memcpy*", "__memcpy*"),
        "copying data between user memory and the page cache (or a device's backing memory)",
    ),
)

BY_NAME: dict[str, Mechanism] = {m.name: m for m in TABLE}


def _regexes() -> tuple[tuple[Mechanism, re.Pattern[str]], ...]:
    """Each row's patterns as one regex; a row without any (told by a sleeping frame, not a
    frame of its own) matches no frame."""
    return tuple(
        (m, re.compile("|".join(fnmatch.translate(p) for p in m.patterns) or r"(?!)")) for m in TABLE
    )


_COMPILED = _regexes()


def _function(frame: str) -> str:
    """A folded frame's function name: ``lzo1x_1_do_compress_[k]`` → ``lzo1x_1_do_compress``."""
    f = frame.removesuffix("_[k]")
    return f.split("+", 1)[0]


@lru_cache(maxsize=16384)
def mechanism_of(stack: str) -> str:
    """The mechanism a folded stack (root first) stands for: the highest-ranked row that
    matches any frame, the leaf-most among rows of that rank; ``""`` when none does."""
    frames = [_function(f) for f in stack.split(";") if f]
    best, best_rank, best_pos = "", 0, -1
    for pos, f in enumerate(frames):
        for m, rx in _COMPILED:
            if m.rank >= best_rank and rx.match(f) and (m.rank > best_rank or pos >= best_pos):
                best, best_rank, best_pos = m.name, m.rank, pos
    return best


def meaning(name: str) -> str:
    """The table's one line for a mechanism ('' for one it does not know)."""
    m = BY_NAME.get(name)
    return m.meaning if m else ""
