"""Explain down to the mechanism: the kernel-knowledge table (a row per mechanism this
machine can induce, on stacks as its probes record them), the device side (requests made
smaller: split, read page by page, not merged; a shared device), what held the writeback an
fsync waited for, the fixed cost of a call and the CPU affinity mask (issue 36)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from iowall.analysis.explain import budget, host, kernel_knowledge, offcpu, wall
from iowall.analysis.explain import device as device_wall
from iowall.analysis.explain.evidence import window_mean
from iowall.analysis.explain.verdict import STEAL, Wall
from iowall.report.device_side import device_lines
from tests.unit.test_budget import IO, _doc, _thread

#: stacks as the probes record them (root first), each with the mechanism a kernel developer
#: names; every one of these was seen on this machine (docs/explain.md, the second corpus)
STACKS = [
    (
        "entry_SYSCALL_64;ksys_pwrite64;xfs_file_write_iter;iomap_dio_rw;submit_bio;"
        "zram_submit_bio;zram_write_page;zcomp_compress;lzo1x_1_do_compress",
        "compression",
    ),
    (
        "ret_from_fork;kthread;worker_thread;btrfs_work_helper;submit_compressed_extents;"
        "compress_file_range;btrfs_compress_folios;zstd_compress_folios;ZSTD_compressStream2",
        "compression",
    ),
    ("x;btrfs_sync_file;btrfs_sync_log;btrfs_wait_tree_log_extents;folio_wait_writeback", "log-tree"),
    ("x;btrfs_sync_file;btrfs_wait_ordered_range;folio_wait_writeback;io_schedule", "writeback"),
    ("x;ext4_sync_file;jbd2_complete_transaction;jbd2_log_wait_commit", "journal-commit"),
    ("x;ext4_dirty_inode;start_this_handle;add_transaction_credits", "journal-space"),
    ("x;xfs_file_fsync;xfs_log_force_seq;xlog_wait_on_iclog", "log-force"),
    ("x;do_fsync;xfs_file_fsync;blkdev_issue_flush;submit_bio_wait", "cache-flush"),
    ("x;xfs_trans_alloc;xfs_trans_reserve;xfs_log_reserve;xlog_grant_head_wait", "log-space"),
    ("x;submit_bio;blk_mq_submit_bio;__blk_mq_alloc_requests;blk_mq_get_tag;io_schedule", "tags"),
    ("x;submit_bio;blk_mq_submit_bio;__rq_qos_throttle;wbt_wait;rq_qos_wait", "wbt"),
    ("x;submit_bio;__rq_qos_throttle;ioc_rqos_throttle", "iocost"),
    # the I/O scheduler in the submitter (the bfq case, perf of 2026-12-03): its dispatch under
    # its lock (the sample lands where interrupts come back on), its merge, its io contexts
    # (blk-ioc.c's ioc_lookup_icq is bfq's, not io.cost's), and mq-deadline's and kyber's own
    (
        "fio;blk_finish_plug;__blk_flush_plug;blk_mq_flush_plug_list;blk_mq_dispatch_list;"
        "blk_mq_run_hw_queue;blk_mq_sched_dispatch_requests;__blk_mq_sched_dispatch_requests;"
        "bfq_dispatch_request;_raw_spin_unlock_irq",
        "io-scheduler",
    ),
    (
        "x;submit_bio_noacct_nocheck;__submit_bio;blk_mq_submit_bio;bfq_bio_merge;ioc_lookup_icq",
        "io-scheduler",
    ),
    ("x;blk_mq_dispatch_list;dd_insert_requests;_raw_spin_unlock_irqrestore", "io-scheduler"),
    ("x;__blk_mq_sched_dispatch_requests;kyber_dispatch_request", "io-scheduler"),
    ("x;filemap_read;copy_page_to_iter;_copy_to_iter;rep_movs_alternative", "copy"),
    ("x;shmem_get_folio_gfp;clear_page_erms", "page-zeroing"),
    ("x;btrfs_check_read_bio;btrfs_calculate_block_csum;crc32c_pcl_intel_update", "checksum"),
    ("x;exc_page_fault;handle_mm_fault;__do_fault;filemap_fault;folio_wait_bit", "read-fault"),
    ("x;__x64_sys_munmap;unmap_page_range;zap_pte_range", "page-tables"),
    ("ret_from_fork;kthread;worker_thread;loop_process_work;lo_rw_aio;vfs_iter_write", "loop-worker"),
    ("x;xfs_file_buffered_write;xfs_ilock;down_write;rwsem_down_write_slowpath", "rwsem"),
    # a dio completion worker converting an unwritten extent (the unwritten case, profile of
    # 2026-12-02): under xfs_bmapi_write it is the conversion's, not an allocation's, and its
    # wait for the inode's lock is the conversion's too
    (
        "ret_from_fork;kthread;worker_thread;process_one_work;iomap_dio_complete_work;"
        "iomap_dio_complete;xfs_dio_write_end_io;xfs_iomap_write_unwritten;xfs_bmapi_write;"
        "xfs_bmapi_convert_unwritten;xfs_bmap_add_extent_unwritten_real;xfs_btree_insert",
        "unwritten-conversion",
    ),
    (
        "x;iomap_dio_complete;xfs_dio_write_end_io;xfs_iomap_write_unwritten;xfs_trans_alloc_inode;"
        "down_write;rwsem_down_write_slowpath",
        "unwritten-conversion",
    ),
    ("x;xfs_bmapi_write;xfs_bmap_btalloc;xfs_alloc_vextent_start_ag", "block-allocation"),
    # ext4 splitting an unwritten extent before a direct write (ext4-unwritten, 2026-12-02):
    # ext4_ext_handle_unwritten_extents is inlined there, its callee is not; the extent
    # block's checksum is the split's, not a checksum wall of its own
    (
        "fio;ext4_file_write_iter;iomap_dio_rw;ext4_iomap_begin;ext4_map_blocks;ext4_ext_map_blocks;"
        "ext4_split_convert_extents;ext4_split_extent;ext4_split_extent_at;ext4_ext_insert_extent;"
        "ext4_ext_dirty;ext4_extent_block_csum_set;ext4_chksum;crc32c_x86_3way",
        "unwritten-conversion",
    ),
    # with no owner in the stack, the checksum names the work itself
    ("kworker;jbd2_journal_commit_transaction;jbd2_chksum;crc32c_x86_3way", "checksum"),
    ("x;xfs_file_dio_write_aligned;xfs_file_write_checks;inode_dio_wait", "dio-serialised"),
    ("x;some_function_the_table_does_not_know", ""),
]

#: the appending direct writes of append-dio and ext4-append-dio (2026-12-02), as the
#: threadstate probe recorded them: XFS drains the inode's direct I/O before each write past
#: the size; ext4 makes each wait for itself inside io_submit (IOMAP_DIO_FORCE_WAIT)
XFS_DRAIN = (
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_io_submit;io_submit_one;aio_write;"
    "xfs_file_write_iter;xfs_file_dio_write_aligned.constprop.0;xfs_file_write_checks.constprop.0;"
    "inode_dio_wait"
)
EXT4_FORCED = (
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_io_submit;io_submit_one;aio_write;"
    "ext4_file_write_iter;iomap_dio_rw;__iomap_dio_rw"
)
#: a synchronous direct write waits for itself in the same frame: nothing forced it
PWRITE_OWN = (
    "entry_SYSCALL_64;do_syscall_64;__x64_sys_pwrite64;ksys_pwrite64;vfs_write;"
    "ext4_file_write_iter;iomap_dio_rw;__iomap_dio_rw"
)
#: buffered random reads through libaio (buffered-aio, 2026-12-02): the read runs in io_submit
AIO_BUFFERED = (
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_io_submit;io_submit_one;aio_read;"
    "xfs_file_read_iter;xfs_file_buffered_read;filemap_read;filemap_get_pages;folio_wait_bit_common"
)
#: the same wait under read(2): every buffered read's
READ_PAGE = (
    "entry_SYSCALL_64;do_syscall_64;ksys_read;vfs_read;xfs_file_read_iter;xfs_file_buffered_read;"
    "filemap_read;filemap_get_pages;folio_wait_bit_common"
)
#: an asynchronous writer waiting for its completions where it should: in io_getevents
GETEVENTS = "entry_SYSCALL_64;do_syscall_64;__x64_sys_io_getevents;do_io_getevents;read_events"


@pytest.mark.parametrize(("stack", "mechanism"), STACKS)
def test_the_table_names_the_mechanism(stack: str, mechanism: str) -> None:
    assert kernel_knowledge.mechanism_of(stack) == mechanism
    if mechanism:
        assert kernel_knowledge.meaning(mechanism)


def test_an_owner_owns_the_machinery_it_waits_in() -> None:
    # the log tree's commit waits for its blocks' writeback: the log tree's
    assert kernel_knowledge.mechanism_of("btrfs_sync_log;folio_wait_writeback") == "log-tree"
    # a profile's frames carry _[k]
    assert kernel_knowledge.mechanism_of("fio;zcomp_compress_[k];lzo1x_1_do_compress_[k]") == "compression"


def _dev(**kw: Any) -> device_wall.Device:
    base: dict[str, Any] = {"util": 0.86, "queue_depth": 84.0, "await_s": 6e-4, "iops": 134000.0}
    return device_wall.Device(**(base | kw))


def _split_dev(**kw: Any) -> device_wall.Device:
    """Direct 1 MiB writes reaching the device as 4 KiB requests under max_sectors_kb = 4."""
    return _dev(
        reqs={"write": 133812.0},
        bytes_per_s={"write": 133812.0 * 4096},
        queue={"max_sectors_kb": "4"},
        direction="write",
        io_bytes=2**20,
        direct=True,
        **kw,
    )


def test_requests_split_at_max_sectors_kb() -> None:
    dev = _split_dev(sequential=True)
    c = device_wall.request_cause(dev)
    assert c is not None and c.mechanism == "split"
    assert "256 requests of 4.0 KiB" in c.said and "max_sectors_kb = 4" in c.said
    # the same sizes under the default cap: not a split by max_sectors_kb
    assert (
        device_wall.request_cause(
            device_wall.Device(**(dev.__dict__ | {"queue": {"max_sectors_kb": "1280"}}))
        )
        is None
    )


def test_reads_page_by_page_without_readahead() -> None:
    dev = _dev(
        reqs={"read": 60000.0},
        bytes_per_s={"read": 60000.0 * 4096},
        queue={"read_ahead_kb": "0", "max_sectors_kb": "1280"},
        direction="read",
        io_bytes=2**20,
    )
    c = device_wall.request_cause(dev)
    assert c is not None and c.mechanism == "no-readahead"
    # direct reads ignore readahead: their small requests are not its doing
    assert device_wall.request_cause(device_wall.Device(**(dev.__dict__ | {"direct": True}))) is None


def test_small_sequential_requests_not_merged() -> None:
    dev = _dev(
        reqs={"write": 90000.0},
        bytes_per_s={"write": 90000.0 * 4096},
        merges={"write": 0.0},
        queue={"nomerges": "2", "max_sectors_kb": "1280"},
        direction="write",
        io_bytes=4096,
        direct=True,
        sequential=True,
    )
    c = device_wall.request_cause(dev)
    assert c is not None and c.mechanism == "not-merged"
    # merging on: no cause
    on = device_wall.Device(**(dev.__dict__ | {"queue": {"nomerges": "0"}}))
    assert device_wall.request_cause(on) is None


def test_knobs_in_force_override_the_beds_queue_facts() -> None:
    dev = device_wall.with_facts(
        device_wall.Device(name="loop0"),
        {
            "queue": {"max_sectors_kb": "1280", "read_ahead_kb": "128"},
            "loop": {"backing_file": "/dev/shm/x.img"},
        },
        {"sysfs:queue/max_sectors_kb": "4", "sysfs:bdi/read_ahead_kb": 0},
        {"direction": "write", "io_bytes": 2**20},
    )
    assert dev.queue["max_sectors_kb"] == "4" and dev.queue["read_ahead_kb"] == "0"
    assert dev.kind == "loop" and "/dev/shm/x.img" in dev.describe()
    z = device_wall.with_facts(
        device_wall.Device(name="zram0"), {"zram": {"comp_algorithm": "lzo-rle"}}, {}, {}
    )
    assert z.kind == "zram" and "lzo-rle" in z.describe()
    lines = device_lines(dev)
    assert any("max_sectors_kb 4" in line for line in lines)


def test_diskstats_series_give_requests_sizes_and_merges() -> None:
    pts = [(1.0, 0.0), (2.0, 100.0), (3.0, 100.0)]
    series = {
        "loop0_util": [(1.0, 0.5), (2.0, 0.9), (3.0, 0.9)],
        "loop0_queue_depth": [(1.0, 1.0), (2.0, 4.0), (3.0, 4.0)],
        "loop0_write_iops": pts,
        "loop0_write_bytes_per_s": [(t, v * 8192) for t, v in pts],
        "loop0_write_merges_per_s": [(t, v / 2) for t, v in pts],
    }
    d = device_wall.device_in_window({k: window_mean(v, 1.0, 3.0) for k, v in series.items()})
    assert d.name == "loop0" and d.reqs["write"] == pytest.approx(100.0)
    assert d.request_bytes("write") == pytest.approx(8192) and d.merges["write"] == pytest.approx(50.0)


def _budget(
    stacks: list[str], blocked: dict[int, int], *, cpu: float = 0.2, delay: float = 0.0, **kw: Any
) -> budget.Budget:
    profile = kw.pop("profile", None)
    th = _thread(1, wall_s=4.0, cpu=cpu, delay=delay, user=kw.pop("user", 0.05), blocked=blocked, **kw)
    b = budget.compute(_doc([th], stacks), (0.0, 4.0), "test", profile)
    assert b is not None
    return b


def _wall(b: budget.Budget, dev: device_wall.Device, ctx: dict[str, float] | None = None, **kw: Any) -> Wall:
    w = wall.decide(b, dev, ctx or {}, **kw).wall
    assert w is not None
    return w


def test_a_split_is_the_wall_and_its_tag_waits_count_with_it() -> None:
    tags = "x;submit_bio;blk_mq_submit_bio;__blk_mq_alloc_requests;blk_mq_get_tag;io_schedule"
    b = _budget([IO, tags], {0: 200, 1: 180})
    dev = _dev(
        reqs={"write": 133812.0},
        bytes_per_s={"write": 133812.0 * 4096},
        queue={"max_sectors_kb": "4", "nr_requests": "128"},
        direction="write",
        io_bytes=2**20,
        direct=True,
    )
    w = _wall(b, dev)
    assert (w.kind, w.mechanism) == ("request-size", "split")
    assert "blk_mq_get_tag" in w.sentence and w.share > 0.9
    # the same waits with requests of the size asked for: tags are the wall, named as such
    same = _dev(
        queue_depth=3.5,  # nr_requests 4: no more can be in flight
        reqs={"write": 500.0},
        bytes_per_s={"write": 500.0 * 2**20},
        queue={"max_sectors_kb": "1280", "nr_requests": "4"},
        direction="write",
        io_bytes=2**20,
    )
    t = _wall(_budget([IO, tags], {0: 100, 1: 280}), same)
    assert (t.kind, t.mechanism) == ("block-queue", "tags") and "nr_requests = 4" in t.sentence


def test_a_split_paid_on_a_cpu_is_the_split() -> None:
    # make test of 259b68b: fio on a CPU 51% of its time, 98% of it in the kernel, most in the
    # block layer (_raw_spin_unlock_irq < loop_queue_rq), each 1 MiB write cut to 256 requests
    # of 4 KiB: the submitter pays each request's trip, so the split is the wall, not "a path"
    blk = "fio;entry_SYSCALL_64_[k];submit_bio_[k];blk_mq_submit_bio_[k];blk_mq_flush_plug_list_[k]"
    b = _budget([IO], {0: 150}, cpu=2.1, user=0.04, syscw=4000, profile={blk: 100})
    split = _split_dev()
    w = _wall(b, split)
    assert (w.kind, w.mechanism) == ("request-size", "split"), w
    assert "paid on a CPU" in w.sentence and "256 requests of 4.0 KiB" in w.sentence
    # the same CPU time with requests of the size asked for: the block layer, not a split
    whole = _dev(
        reqs={"write": 500.0},
        bytes_per_s={"write": 500.0 * 2**20},
        queue={"max_sectors_kb": "1280"},
        direction="write",
        io_bytes=2**20,
        direct=True,
    )
    p = _wall(b, whole)
    assert (p.kind, p.mechanism) == ("cpu-kernel", "") and "block layer" in p.sentence


def test_a_cpu_path_wall_names_its_own_paths_function_and_a_mechanisms_part() -> None:
    # ext4-unwritten (2026-12-02): the writer on a CPU, most of its kernel time in the
    # filesystem, the leaf sampled most overall in the loop path; 17% splitting unwritten
    # extents, the rest their lookups in the extent tree, which no row can tell apart
    split = (
        "fio;io_submit_one_[k];ext4_file_write_iter_[k];ext4_iomap_begin_[k];ext4_map_blocks_[k];"
        "ext4_ext_map_blocks_[k];ext4_split_convert_extents_[k];ext4_split_extent_at_[k]"
    )
    lookup = "fio;io_submit_one_[k];ext4_file_write_iter_[k];ext4_map_blocks_[k];ext4_es_lookup_extent_[k]"
    find = "fio;io_submit_one_[k];ext4_iomap_begin_[k];ext4_ext_map_blocks_[k];ext4_find_extent_[k]"
    loop = "fio;io_submit_one_[k];blk_mq_submit_bio_[k];loop_queue_rq_[k];_raw_spin_unlock_irq_[k]"
    profile = {split: 17, lookup: 30, find: 22, loop: 31}
    b = _budget([IO], {0: 10}, cpu=3.6, user=0.3, profile=profile)
    w = _wall(b, _dev(util=0.3, queue_depth=2.0))
    assert (w.kind, w.mechanism) == ("cpu-kernel", ""), w
    assert "most sampled there: ext4_es_lookup_extent < ext4_map_blocks" in w.sentence, w.sentence
    assert "17% of the kernel time in unwritten-conversion" in w.sentence, w.sentence
    # at 30% the mechanism is the wall's; under 10% it is not said
    named = _wall(_budget([IO], {0: 10}, cpu=3.6, user=0.3, profile=profile | {split: 40}), _dev(util=0.3))
    assert (named.kind, named.mechanism) == ("cpu-kernel", "unwritten-conversion"), named
    quiet = _wall(_budget([IO], {0: 10}, cpu=3.6, user=0.3, profile=profile | {split: 5}), _dev(util=0.3))
    assert "unwritten-conversion" not in quiet.sentence, quiet.sentence


def test_a_shared_device_is_named() -> None:
    dev = _dev(
        util=0.95,
        reqs={"read": 2000.0, "write": 3000.0},
        bytes_per_s={"read": 8e6, "write": 3e9},
        direction="read",
        io_bytes=4096,
        workload_bytes_per_s=8e6,
        direct=True,
    )
    w = _wall(_budget([IO], {0: 380}), dev)
    assert (w.kind, w.mechanism) == ("device", "shared")


def test_completions_held_by_the_conversion_after_each_io() -> None:
    """The unwritten case (quiet, 2026-12-02): 350 us an I/O against 95 us on the loop device,
    the dio workers 0.61 CPU converting: held above the device by that work."""
    dev = _dev(
        util=0.72,
        queue_depth=7.8,
        await_s=95e-6,
        reqs={"write": 82000.0},
        bytes_per_s={"write": 82000.0 * 4096},
        direction="write",
        io_bytes=4096,
        workload_bytes_per_s=82000.0 * 4096,
        direct=True,
        io_latency_s=350e-6,
    )
    b = _budget([IO], {0: 380})
    w = _wall(b, dev, helpers={"unwritten-conversion": 0.61, "loop-worker": 0.19})
    assert (w.kind, w.mechanism) == ("above-device", "unwritten-conversion")
    assert "350 us" in w.sentence and "0.61 CPU" in w.sentence
    # the same work, but each I/O spent most of its time at the device: the device's
    assert _wall(b, replace(dev, io_latency_s=150e-6), helpers={"unwritten-conversion": 0.61}).kind != (
        "above-device"
    )
    # the latency, but the kernel's threads hardly converted anything (the control: written blocks)
    assert _wall(b, dev, helpers={"unwritten-conversion": 0.002}).mechanism != "unwritten-conversion"
    # no median latency (not fio, or an older run): nothing to hold it against
    assert _wall(b, replace(dev, io_latency_s=None), helpers={"unwritten-conversion": 0.61}).kind != (
        "above-device"
    )


def test_a_direct_write_asleep_in_its_own_wait_inside_io_submit_was_serialised() -> None:
    """Only the sleeping frame tells ext4's forced wait: the same frame under pwrite is every
    synchronous direct write's, and a submission's CPU passes through it too."""
    assert offcpu.blocked_mechanism(EXT4_FORCED) == "dio-serialised"
    assert offcpu.blocked_mechanism(XFS_DRAIN) == "dio-serialised"
    assert offcpu.classify(XFS_DRAIN).reason == "io"
    assert offcpu.blocked_mechanism(PWRITE_OWN) == ""
    assert offcpu.blocked_mechanism(EXT4_FORCED + ";[runnable]") == "dio-serialised"
    assert offcpu.blocked_mechanism(EXT4_FORCED + ";submit_bio;blk_mq_get_tag") == "tags"
    assert kernel_knowledge.mechanism_of(EXT4_FORCED + ";iomap_dio_bio_iter;submit_bio") == ""
    assert offcpu.blocked_mechanism(AIO_BUFFERED) == "buffered-aio"
    assert offcpu.blocked_mechanism(READ_PAGE) != "buffered-aio"
    # a row without a frame of its own matches none
    assert kernel_knowledge.mechanism_of("x;anything;at_all") == ""
    assert kernel_knowledge.meaning("buffered-aio")


def _appending_dev(**kw: Any) -> device_wall.Device:
    """The loop device under appending direct writes (append-dio, quiet, 2026-12-02)."""
    base: dict[str, Any] = {
        "util": 0.74,
        "queue_depth": 0.7,
        "await_s": 115e-6,
        "reqs": {"write": 6286.0},
        "bytes_per_s": {"write": 6286.0 * 4096},
        "direction": "write",
        "io_bytes": 4096,
        "workload_bytes_per_s": 6286.0 * 4096,
        "direct": True,
        "sequential": True,
        "io_latency_s": 4.36e-3,
        "iodepth": 32,
        "name": "loop0",
        "kind": "loop",
        "dio": True,
    }
    return _dev(**(base | kw))


@pytest.mark.parametrize(
    ("stack", "how"),
    [
        (XFS_DRAIN, "for the inode's direct I/O in flight to drain inside io_submit"),
        (EXT4_FORCED, "for its own I/O to complete before the call returned inside io_submit"),
        (AIO_BUFFERED, "for the page cache to read a folio inside io_submit"),
    ],
)
def test_ios_serialised_inside_their_submission_go_one_at_a_time(stack: str, how: str) -> None:
    w = _wall(_budget([stack, GETEVENTS], {0: 260, 1: 10}), _appending_dev())
    want = "buffered-aio" if stack == AIO_BUFFERED else "dio-serialised"
    assert (w.kind, w.mechanism) == ("io-latency", want), w
    assert how in w.sentence, w.sentence
    assert "0.7 request(s) in flight on average against the 32 the job asked for" in w.sentence
    assert "4.36 ms from submission to completion, 115 us of it on the device" in w.sentence
    # the same device, the waits where an asynchronous writer's belong: not serialised
    w = _wall(_budget([GETEVENTS], {0: 260}), _appending_dev())
    assert w.mechanism != want, w
    # serialised waits under half the I/O wait: the rest decides
    w = _wall(_budget([stack, GETEVENTS], {0: 100, 1: 160}), _appending_dev())
    assert w.mechanism != want, w


def test_the_device_side_says_each_ios_median_latency() -> None:
    dev = _dev(direction="write", io_bytes=4096, workload_bytes_per_s=1e8, direct=True, io_latency_s=350e-6)
    assert any("350 us each (median, submission to completion)" in x for x in device_lines(dev))
    assert not any("median" in x for x in device_lines(replace(dev, io_latency_s=None)))


FSYNC_WB = "x;__x64_sys_fsync;btrfs_sync_file;btrfs_wait_ordered_range;folio_wait_writeback;io_schedule"


def test_what_held_the_writeback_an_fsync_waited_for() -> None:
    b = _budget([FSYNC_WB], {0: 380})
    w = _wall(b, device_wall.Device(), helpers={"compression": 0.92})
    assert (w.kind, w.mechanism) == ("fsync", "compression") and "0.92 CPU" in w.sentence
    loop = _wall(b, device_wall.Device(loop_cpus=0.97, kind="loop", backing="/dev/shm/b.img"))
    assert (loop.kind, loop.mechanism) == ("fsync", "loop-worker") and "/dev/shm/b.img" in loop.sentence
    plain = _wall(b, device_wall.Device())
    assert (plain.kind, plain.mechanism) == ("fsync", "writeback")
    # the wait named as what it is, not a bare "most of its wait (function)"
    assert (
        "most of its wait on its pages' writeback (btrfs_sync_file, asleep in folio_wait_writeback)"
        in plain.sentence
    ), plain.sentence
    jbd2 = _wall(
        _budget(["x;ext4_sync_file;jbd2_complete_transaction;jbd2_log_wait_commit"], {0: 380}),
        device_wall.Device(),
    )
    assert (jbd2.kind, jbd2.mechanism) == ("fsync", "journal-commit") and "jbd2" in jbd2.sentence


#: the fsyncs of four buffered writers on the ram bed (the full limits run of 2026-12-01, run 49):
#: samples of each stack, as the threadstate probe took them
FSYNC_RUN49 = {
    "x;do_fsync;xfs_file_fsync;blkdev_issue_flush;submit_bio_wait": 71,
    "x;do_fsync;xfs_file_fsync;file_write_and_wait_range;__filemap_fdatawait_range;folio_wait_writeback;"
    "folio_wait_bit": 67,
    "x;do_fsync;xfs_file_fsync;file_write_and_wait_range;filemap_fdatawrite_wbc;do_writepages;"
    "iomap_writepages;submit_bio_noacct_nocheck;blk_mq_submit_bio;__rq_qos_throttle;wbt_wait;rq_qos_wait": 59,
    "x;do_fsync;xfs_file_fsync;xlog_wait_on_iclog": 34,
    "x;do_fsync;xfs_file_fsync;xfs_log_force_seq;xlog_force_lsn": 26,
    "x;do_fsync;xfs_file_fsync;xfs_log_force_seq;xlog_wait_on_iclog": 22,
}


def test_an_fsync_wait_no_mechanism_holds_most_of_is_told_in_its_parts() -> None:
    stacks = list(FSYNC_RUN49)
    b = _budget(stacks, dict(enumerate(FSYNC_RUN49.values())))
    full = _dev(util=0.97, queue_depth=60.0)  # wbt in front of a full device counts as writeback
    w = _wall(b, full)
    assert w.kind == "fsync" and w.mechanism == "device", w
    assert (
        "its wait split: its pages' writeback 45%, the filesystem's log force 29%, "
        "the device's cache flush 25%" in w.sentence
    ), w.sentence
    assert "most of its wait" not in w.sentence and "97% busy with 60 requests in flight" in w.sentence
    # without the full device wbt is a part of its own
    alone = _wall(b, device_wall.Device())
    assert "writeback throttling (wbt) 21%" in alone.sentence and alone.mechanism == "", alone
    # a mechanism under a tenth of the wait names nothing, though the table knows no other
    few = {"x;do_fsync;xfs_file_fsync;some_wait_the_table_does_not_know": 300, stacks[3]: 20}
    odd = _wall(_budget(list(few), dict(enumerate(few.values()))), device_wall.Device())
    assert "log force" not in odd.sentence and odd.mechanism == "", odd
    # one mechanism with most of the wait is named as before
    most = _wall(_budget(stacks[3:], {0: 150, 1: 120, 2: 100}), device_wall.Device())
    assert "most of its wait in the filesystem's log force" in most.sentence and most.mechanism == "log-force"


FSYNC_WRITEBACK = (
    "x;__x64_sys_fsync;do_fsync;xfs_file_fsync;file_write_and_wait_range;__filemap_fdatawait_range;"
    "folio_wait_writeback;folio_wait_bit"
)
THROTTLED = "x;ksys_write;iomap_file_buffered_write;balance_dirty_pages_ratelimited_flags;balance_dirty_pages"


def test_writers_waiting_for_writeback_in_fsync_and_throttled_are_one_wall() -> None:
    # two buffered writers of twice the dirty threshold (the full limits run, run 121): 36% in
    # fsync on their pages' writeback, 29% throttled, the rest copying; no state alone is 40%
    full = _dev(util=0.97, queue_depth=50.0)
    b = _budget([FSYNC_WRITEBACK, THROTTLED], {0: 222, 1: 179}, cpu=1.4)
    w = _wall(b, full)
    assert (w.kind, w.mechanism) == ("writeback", "device"), w
    assert "spent 65% of its time waiting for dirty pages to be written back: paused in " in w.sentence
    assert "balance_dirty_pages 29% (dirty throttling) and in fsync 36% (mostly on its pages' writeback)" in (
        w.sentence
    )
    assert "97% busy with 50 requests in flight" in w.sentence
    # an fsync waiting on the journal is not a wait for writeback: each state on its own
    jbd2 = "x;ext4_sync_file;jbd2_complete_transaction;jbd2_log_wait_commit"
    apart = wall.decide(_budget([jbd2, THROTTLED], {0: 222, 1: 179}, cpu=1.4), full, {})
    assert apart.wall is None or apart.wall.kind != "writeback", apart
    # nor is a throttle under a tenth of the time
    alone = _wall(_budget([FSYNC_WRITEBACK, THROTTLED], {0: 250, 1: 30}, cpu=1.0), full)
    assert alone.kind == "fsync", alone


def test_an_fsync_with_no_sampled_function_says_none() -> None:
    # the wall from time on a CPU inside fsync, no blocked stack: no empty "()"
    stacks = ["fio;__x64_sys_fsync_[k];xfs_file_fsync_[k];xfs_log_force_seq_[k];memcpy_[k]"]
    b = _budget([], {}, cpu=3.8, user=0.1, profile={stacks[0]: 100})
    w = wall.decide(b, device_wall.Device(), {}).wall
    assert w is not None and "()" not in w.sentence


def test_per_call_cost() -> None:
    # 4 KiB a call, 2 us of CPU a call, one thread alone on its CPU: the call's own cost
    b = _budget([], {}, cpu=3.8, user=1.5, syscw=1_900_000, profile={"fio;x_[k];filemap_read_[k]": 100})
    b = budget.Budget(
        b.window,
        b.window_source,
        tuple(
            budget.ThreadBudget(t.tid, t.comm, t.cgroup, t.wall_s, t.seconds, t.syscalls, t.syscalls * 4096)
            for t in b.threads
        ),
        b.left_out,
        b.totals,
        kernel_paths={"page_cache": 1.0, "copy": 0.4},
    )
    w = _wall(b, device_wall.Device())
    assert w.kind == "per-call" and "4.0 KiB" in w.sentence


def _calls_of(b: budget.Budget, size: int, copy_part: float) -> budget.Budget:
    """``b`` with every call moving ``size`` bytes and the copy ``copy_part`` of its time on a CPU."""
    oncpu = b.totals["user"] + b.totals["kernel"]
    return budget.Budget(
        b.window,
        b.window_source,
        tuple(
            budget.ThreadBudget(t.tid, t.comm, t.cgroup, t.wall_s, t.seconds, t.syscalls, t.syscalls * size)
            for t in b.threads
        ),
        b.left_out,
        b.totals,
        kernel_paths={"copy": copy_part * oncpu, "page_cache": 0.1},
    )


def test_a_copy_of_about_half_says_how_much_and_what_the_rest_is() -> None:
    """4 KiB calls, the copy 52% of the time on a CPU (the per-call wall's line is 50%: a
    corpus run of 4 KiB page-cache reads read 45-53%): the copy wall, not "mostly copying",
    and the rest named as each call's cost. At 64 KiB a call the rest may be work per page
    (a bdev-rwmix run: 59% copy): only the share is said."""
    b = _budget([], {}, cpu=3.8, user=1.5, syscw=1_900_000, profile={"fio;x_[k];filemap_read_[k]": 100})
    w = _wall(_calls_of(b, 4096, 0.52), device_wall.Device())
    assert w.kind == "memcopy" and "mostly" not in w.sentence, w.sentence
    assert "copying to or from user space for 52% of its CPU time" in w.sentence
    assert "(the rest, 48%, is each call's own cost at calls of 4.0 KiB" in w.sentence
    big = _wall(_calls_of(b, 64 << 10, 0.52), device_wall.Device())
    assert big.kind == "memcopy" and "for 52%" in big.sentence and "the rest" not in big.sentence
    most = _wall(_calls_of(b, 4096, 0.7), device_wall.Device())
    assert "mostly copying to or from user space (70% of its CPU time)" in most.sentence


def test_the_affinity_mask() -> None:
    th = [
        _thread(i, wall_s=4.0, cpu=1.9, delay=1.9, user=0.1, blocked={}, comm="fio") | {"allowed_cpus": [0]}
        for i in (1, 2)
    ]
    b = budget.compute(_doc(th, []), (0.0, 4.0), "test", None, (0.05, 1.0))
    assert b is not None and b.threads[0].allowed_cpus == (0,)
    w = _wall(b, device_wall.Device(), {"cpus": 2.0, "jobs": 2.0})
    assert w.kind == "cpu-affinity" and "CPU 0 (1 of 2)" in w.sentence
    free = budget.compute(
        _doc([t | {"allowed_cpus": [0, 1]} for t in th], []), (0.0, 4.0), "test", None, (0.05, 1.0)
    )
    assert free is not None and _wall(free, device_wall.Device(), {"cpus": 2.0}).kind != "cpu-affinity"


def test_readahead_sized_requests_are_no_split() -> None:
    # limits --quick, buffered 2 MiB reads: three readahead requests of ~690 KiB each under a
    # 1280 KiB cap is readahead at work, not a wall (named "split" before this was checked)
    dev = _dev(
        reqs={"read": 3500.0},
        bytes_per_s={"read": 3500.0 * 689 * 1024},
        queue={"max_sectors_kb": "1280", "read_ahead_kb": "128"},
        direction="read",
        io_bytes=2 * 2**20,
        sequential=True,
    )
    assert device_wall.request_cause(dev) is None


WBT = (
    "x;__x64_sys_fsync;file_write_and_wait_range;do_writepages;submit_bio;"
    "__rq_qos_throttle;wbt_wait;rq_qos_wait"
)


def test_wbt_in_front_of_a_full_device_is_not_the_wall() -> None:
    # fsync's own writeback waits in wbt while the loop device is 96% busy with 42 requests
    # in flight: the device holds it (wbt_lat_usec 0 against 2000: 2614 vs 2292 MiB/s, ±26%)
    b = _budget([WBT], {0: 380})
    full = _wall(b, _dev(util=0.96, queue_depth=42.0, kind="loop", backing="/dev/shm/i.img"))
    assert (full.kind, full.mechanism) == ("fsync", "loop-worker") and "96% busy" in full.sentence
    idle = _wall(b, _dev(util=0.3, queue_depth=2.0))
    assert (idle.kind, idle.mechanism) == ("fsync", "wbt")


def test_tags_in_front_of_a_full_device_are_the_devices() -> None:
    # four buffered readers of the full limits run: 47% waiting for tags of a loop device
    # 100% busy with 111 requests in flight; with nr_requests 4 (2.9 in flight) tags hold it
    tags = "x;filemap_read;page_cache_sync_ra;submit_bio;__blk_mq_alloc_requests;blk_mq_get_tag;io_schedule"
    b = _budget([tags], {0: 380})
    full = _wall(b, _dev(util=1.0, queue_depth=111.0, kind="loop"))
    assert (full.kind, full.mechanism) == ("device", "loop-worker")
    shallow = _wall(b, _dev(util=0.96, queue_depth=2.9, queue={"nr_requests": "4"}))
    assert (shallow.kind, shallow.mechanism) == ("block-queue", "tags")


def test_the_hosts_steal_is_said_beside_the_workloads_wall() -> None:
    """The same budget (blocked on I/O most of the time): from 10% steal of all CPU time the
    host's sentence (the state it stretched named) beside the wall, from 2% a shorter note;
    the wall is the workload's whatever the steal (the explain corpus's induced walls held
    their ground truth under 15-29% steal); under 2%, or unknown, nothing changes; a point too
    short to explain stays silent."""
    b = _budget([IO], {0: 300})
    plain = wall.decide(b, device_wall.Device(), {})
    assert plain.wall is not None
    d = wall.decide(b, device_wall.Device(), {STEAL: 0.256})
    assert d.wall == plain.wall and d.also == plain.also
    said = [n for n in d.notes if n.startswith("The host's steal")]
    assert len(said) == 1 and "26% of the CPU time" in said[0] and plain.wall.kind in said[0]
    noted = wall.decide(b, device_wall.Device(), {STEAL: 0.05})
    assert noted.wall == plain.wall and any("5% of this VM's CPU time (steal)" in n for n in noted.notes)
    assert wall.decide(b, device_wall.Device(), {STEAL: 0.01}) == plain
    th = _thread(1, wall_s=0.2, cpu=0.1, delay=0.0, user=0.01, blocked={0: 10})
    short = budget.compute(_doc([th], [IO]), (0.0, 0.2), "t", None)
    assert short is not None and wall.decide(short, device_wall.Device(), {STEAL: 0.5}).wall is None


def test_a_batchs_note_on_the_runs_the_host_took_cpu_from() -> None:
    """The steal of each run of the history in docs/history.md (six at 10.5-25.6%, two at 2.1
    and 3.1%, the rest under 1%): one note naming the eight; none when no run reached 2%."""
    steals = [0.004, 0.213, 0.111, 0.021, 0.201, 0.256, 0.105, 0.187, 0.009, 0.031] + [0.003] * 35
    note = host.runs_note(steals)
    assert note is not None and "2.1%-25.6% of the CPU time (steal) during 8 of 45 runs" in note
    assert "from 10%" in note
    assert host.runs_note([0.004, 0.019]) is None and host.runs_note([]) is None


def test_a_cpu_wall_names_the_interrupts_off_section_not_where_it_was_sampled() -> None:
    # cpu-clock ticks during a context switch are taken in finish_task_switch, where
    # interrupts come back on: the time is __schedule's, and the sentence says so
    switch = "fio;io_submit_one_[k];__cond_resched_[k];__schedule_[k];finish_task_switch.isra.0_[k]"
    lookup = "fio;io_submit_one_[k];ext4_file_write_iter_[k];ext4_map_blocks_[k];ext4_es_lookup_extent_[k]"
    b = _budget([IO], {0: 10}, cpu=3.6, user=0.3, profile={switch: 50, lookup: 30})
    w = _wall(b, _dev(util=0.3, queue_depth=2.0))
    assert w.kind == "cpu-kernel", w
    assert "__schedule with interrupts off < __cond_resched" in w.sentence, w.sentence
    assert "finish_task_switch" not in w.sentence, w.sentence


#: io_uring's io-wq worker running an extending direct write on XFS (uring-append-dio,
#: 2026-12-03): queued on the IOLOCK, or holding it and draining the direct I/O in flight
WQ = "ret_from_fork;io_wq_worker;io_worker_handle_work;io_wq_submit_work;io_issue_sqe;io_write;"
WQ_LOCK = WQ + "xfs_file_write_iter;xfs_file_dio_write_aligned.constprop.0;xfs_ilock_iocb_for_write;xfs_ilock"
WQ_DRAIN = (
    WQ + "xfs_file_write_iter;xfs_file_dio_write_aligned.constprop.0;xfs_file_write_checks;inode_dio_wait"
)
CQ_WAIT = "entry_SYSCALL_64;do_syscall_64;__do_sys_io_uring_enter;io_cqring_wait"
#: psync writers of one file, their unaligned direct writes serialised on the same lock
PWRITE_LOCK = (
    "entry_SYSCALL_64;do_syscall_64;__x64_sys_pwrite64;xfs_file_write_iter;"
    "xfs_file_dio_write_unaligned;xfs_ilock"
)


def _punted_budget(queued: str, drained: int = 200, workers: int = 8, drain: str = WQ_DRAIN) -> budget.Budget:
    """One fio job waiting for completions and ``workers`` io-wq workers, each 4 s: most of
    their samples asleep in ``queued``, ``drained`` of them (one worker's) in the drain."""
    stacks = [CQ_WAIT, queued, drain]
    th = [_thread(1, wall_s=4.0, cpu=0.3, delay=0.0, user=0.1, blocked={0: 360})]
    for i in range(workers):
        blocked = {1: 330} | ({2: drained} if i == 0 and drained else {})
        th.append(
            _thread(10 + i, wall_s=4.0, cpu=0.2, delay=0.0, user=0.0, blocked=blocked, comm="iou-wrk-1")
        )
    b = budget.compute(_doc(th, stacks), (0.0, 4.0), "test", None)
    assert b is not None
    return b


def test_io_wq_workers_queued_behind_a_serialised_write_are_the_jobs_queue() -> None:
    assert offcpu.blocked_mechanism(WQ_LOCK) == "io-wq-queued"
    assert offcpu.blocked_mechanism(WQ_DRAIN) == "dio-serialised"
    assert offcpu.blocked_mechanism(PWRITE_LOCK) != "io-wq-queued"  # the job's own calls
    # a buffered write's page-cache wait in a worker is io-wq's design, not a serialisation
    assert offcpu.blocked_mechanism(WQ + "xfs_file_buffered_write;folio_wait_writeback") != "buffered-aio"
    w = _wall(_punted_budget(WQ_LOCK), _appending_dev(queue_depth=1.2))
    assert (w.kind, w.mechanism) == ("io-latency", "dio-serialised"), w
    assert "handed them to 8 io-wq workers" in w.sentence, w.sentence
    assert "(xfs_ilock < xfs_ilock_iocb_for_write)" in w.sentence, w.sentence
    assert "1.2 request(s) in flight on average against the 32 the job asked for" in w.sentence
    assert w.evidence["io_wq_workers"] == 8


def test_a_lock_the_jobs_own_threads_wait_for_stays_the_lock() -> None:
    # the same lock and drain, but the waiters are the job's writers in their own calls
    # (the first corpus's lock case: unaligned direct writes of four jobs to one file)
    w = _wall(_punted_budget(PWRITE_LOCK), _appending_dev(queue_depth=1.2))
    assert w.kind == "lock", w
    # io-wq workers on the lock with no serialised write seen holding it: the lock
    w = _wall(_punted_budget(WQ_LOCK, drained=0), _appending_dev(queue_depth=1.2))
    assert w.kind == "lock", w


#: ext4's (ext4-uring-append-dio, 2026-12-03): its direct write path is inlined into
#: ext4_file_write_iter and the inode rwsem's slow path is not shown, so a worker asleep on
#: the lock shows ext4_file_write_iter innermost; the holder waits in __iomap_dio_rw
WQ_EXT4_LOCK = WQ + "ext4_file_write_iter"
WQ_EXT4_FORCED = WQ + "ext4_file_write_iter;__iomap_dio_rw"


def test_ext4s_inline_inode_lock_is_a_lock_only_as_the_sleeping_frame() -> None:
    assert offcpu.classify(WQ_EXT4_LOCK).reason == "lock"
    assert offcpu.classify("x;__x64_sys_pwrite64;ext4_file_write_iter").reason == "lock"
    # above another wait it is that wait's: the forced wait, a journal start
    assert offcpu.classify(WQ_EXT4_FORCED).reason == "io"
    assert offcpu.blocked_mechanism(WQ_EXT4_FORCED) == "dio-serialised"
    assert offcpu.classify("x;ext4_file_write_iter;jbd2__journal_start;wait_transaction_locked").reason != (
        "lock"
    )
    assert offcpu.blocked_mechanism(WQ_EXT4_LOCK) == "io-wq-queued"
    w = _wall(_punted_budget(WQ_EXT4_LOCK, drain=WQ_EXT4_FORCED), _appending_dev(queue_depth=1.2))
    assert (w.kind, w.mechanism) == ("io-latency", "dio-serialised"), w
    assert "the inode's lock (ext4_file_write_iter)" in w.sentence, w.sentence
