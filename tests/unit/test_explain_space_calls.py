"""The ENOSPC flush as a state of its own (tail calls put back), the system calls the kernel
time is spent in, and a log's frames outside a sync call: on stacks and budgets built to
known numbers (the shapes of small-file-writeback's creators, 2026-12-01)."""

from __future__ import annotations

import pytest

from iowall.analysis.explain import budget, budget_profile, offcpu, wall
from iowall.analysis.explain import device as device_wall
from iowall.analysis.explain.kernel_knowledge import mechanism_of
from tests.unit.test_budget import _doc, _thread

CREATE = (
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_openat;do_sys_openat2;path_openat;"
    "xfs_generic_create;xfs_create"
)
#: xfs_flush_inodes's own frame, and its tail call to flush_work that hides it
FLUSH = CREATE + ";xfs_flush_inodes;__flush_work"
TAIL = CREATE + ";__flush_work"
CPU = "entry_SYSCALL_64;do_syscall_64;ksys_write;vfs_write;xfs_file_buffered_write"


def test_tail_call_put_back() -> None:
    assert offcpu.restore_tail_calls(TAIL) == FLUSH
    assert offcpu.restore_tail_calls(FLUSH) == FLUSH
    # flush_work from another caller is a worker's, as before
    other = "entry_SYSCALL_64;do_syscall_64;__x64_sys_close;__fput;__flush_work"
    assert offcpu.restore_tail_calls(other) == other
    assert offcpu.classify(other).reason == "worker"


@pytest.mark.parametrize("stack", [FLUSH, TAIL])
def test_space_flush_is_its_own_state(stack: str) -> None:
    s = offcpu.restore_tail_calls(stack)
    assert offcpu.classify(s).reason == "space"
    assert mechanism_of(s) == "space-flush"
    assert offcpu.caller_of(s, "space") == "xfs_create"


def test_space_wall_names_the_flush_and_its_caller() -> None:
    # 70% of the time waiting for the flush (half the stacks without xfs_flush_inodes)
    th = _thread(1, wall_s=4.0, cpu=1.2, delay=0.0, user=0.1, blocked={0: 140, 1: 140}, running=120)
    b = budget.compute(_doc([th], [FLUSH, TAIL]), (0.0, 4.0), "test")
    assert b is not None
    assert b.totals["blocked:space"] == pytest.approx(2.8)
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is not None
    assert (d.wall.kind, d.wall.mechanism) == ("space", "space-flush")
    assert "free space (xfs_flush_inodes, from xfs_create): a create could not reserve" in d.wall.sentence


def test_space_wall_says_how_full_the_filesystem_got() -> None:
    # the df probe's metrics of a 1 GiB bed at its fullest: 31 MiB free, 40% of its inodes
    th = _thread(1, wall_s=4.0, cpu=1.2, delay=0.0, user=0.1, blocked={0: 140, 1: 140}, running=120)
    b = budget.compute(_doc([th], [FLUSH, TAIL]), (0.0, 4.0), "test")
    assert b is not None
    df = {
        "df_used_share_max": 0.97,
        "df_free_bytes_min": 31 * 2.0**20,
        "df_capacity_bytes": 2.0**30,
        "df_inodes_used_share_max": 0.4,
    }
    dev = device_wall.with_space(device_wall.Device(), df)
    d = wall.decide(b, dev, {})
    assert d.wall is not None and d.wall.kind == "space"
    said = "df saw the filesystem 97% full at its fullest, 31.0 MiB of 1.0 GiB free; 40% of its inodes used."
    assert d.wall.sentence.endswith(said), d.wall.sentence
    # btrfs's metadata reservation: df's figure is the data's, and the sentence says so
    ticket = "entry_SYSCALL_64;do_syscall_64;__x64_sys_openat;btrfs_create;btrfs_reserve_metadata_bytes"
    ticket += ";__reserve_bytes"
    bt = budget.compute(_doc([th], [ticket, ticket]), (0.0, 4.0), "test")
    assert bt is not None
    w = wall.decide(bt, dev, {}).wall
    assert w is not None and w.kind == "space" and "df saw the filesystem 97% full" in w.sentence
    assert "the reservation is of metadata" in w.sentence and "the reservation is of metadata" not in said
    # without the probe (older runs): nothing said of it
    plain = wall.decide(b, device_wall.with_space(device_wall.Device(), {}), {})
    assert plain.wall is not None and "df saw" not in plain.wall.sentence


def test_silence_says_its_largest_parts() -> None:
    # 35% on a CPU, 35% waiting for I/O, 30% waiting for the flush: no state holds 40%
    io = "entry_SYSCALL_64;do_syscall_64;__x64_sys_pread64;vfs_read;xfs_file_read_iter;iomap_dio_rw"
    th = _thread(1, wall_s=4.0, cpu=1.4, delay=0.0, user=0.1, blocked={0: 120, 1: 140}, running=140)
    b = budget.compute(_doc([th], [FLUSH, io]), (0.0, 4.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is None
    (note,) = [n for n in d.notes if "No single state" in n]
    assert (
        "its largest parts: " in note and "blocked: the filesystem's free space (an ENOSPC flush) 30%" in note
    )


def test_syscall_of_reads_inlined_wrappers() -> None:
    assert offcpu.syscall_of(CPU) == "write"
    assert offcpu.syscall_of(CREATE) == "openat"
    assert offcpu.syscall_of("asm_exc_page_fault;exc_page_fault") == ""


def _profile(stacks: dict[str, int]) -> dict[str, int]:
    return {"fio;" + ";".join(f + "_[k]" for f in s.split(";")): n for s, n in stacks.items()}


def test_kernel_time_by_call_and_log_commits_outside_a_sync() -> None:
    commit = CREATE + ";xfs_trans_commit;__xfs_trans_commit;xlog_cil_commit"
    fsync = (
        "entry_SYSCALL_64;do_syscall_64;__x64_sys_fsync;do_fsync;xfs_file_fsync;xfs_log_force_seq;"
        "xlog_state_release_iclog"
    )
    prof = _profile({commit: 60, CPU: 20, fsync: 20})
    calls = budget_profile.cpu_syscalls(prof, {"fio"}, 1.0)
    assert calls == pytest.approx({"openat": 0.6, "write": 0.2, "fsync": 0.2})
    # the create's log commit is work on a CPU; only the fsync's is inside fsync
    assert budget_profile.kernel_contexts(prof, {"fio"}, 1.0) == pytest.approx({"fsync": 0.2})


def test_cpu_wall_names_the_calls_beside_the_io() -> None:
    # on a CPU 80% of the time, three quarters of its kernel time in openat and close
    th = _thread(1, wall_s=4.0, cpu=3.2, delay=0.0, user=0.2, blocked={0: 80})
    close = "entry_SYSCALL_64;do_syscall_64;__x64_sys_close;__fput;xfs_file_release"
    prof = _profile({CREATE: 60, close: 15, CPU: 25})
    io = "entry_SYSCALL_64;do_syscall_64;__x64_sys_pread64;vfs_read;xfs_file_read_iter;iomap_dio_rw"
    b = budget.compute(_doc([th], [io]), (0.0, 4.0), "test", profile=prof)
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is not None and d.wall.kind == "cpu-kernel"
    assert "in calls other than its I/O" in d.wall.sentence
    assert "openat 60%, close 15% against 25% in the calls that move its data" in d.wall.sentence
    assert "the work those calls do (a file opened, created or closed per I/O)" in d.wall.sentence
    # fallocate's kernel time is not a file's making: no such example then
    falloc = "entry_SYSCALL_64;do_syscall_64;__x64_sys_fallocate;vfs_fallocate;xfs_file_fallocate"
    b = budget.compute(_doc([th], [io]), (0.0, 4.0), "test", profile=_profile({falloc: 75, CPU: 25}))
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is not None and "fallocate 75% against 25%" in d.wall.sentence
    assert "the work those calls do, not the I/O's own cost" in d.wall.sentence
    # a quarter in openat: the I/O's own cost again (per-call: 16 KiB a call, little copy)
    prof = _profile({CREATE: 25, CPU: 75})
    b = budget.compute(_doc([th], [io]), (0.0, 4.0), "test", profile=prof)
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is not None and "calls other than its I/O" not in d.wall.sentence


def test_btrfs_tree_locks_are_locks() -> None:
    # btrfs unlinks of one subvolume (inode-cache, 2 threads, 2026-12-01): asleep on the
    # root node's lock, which /proc/PID/stack shows without the rwsem slow path
    s = (
        "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_unlinkat;do_unlinkat;evict;"
        "btrfs_evict_inode;btrfs_del_orphan_item;btrfs_search_slot;btrfs_lock_root_node;btrfs_tree_lock_nested"
    )
    r = offcpu.classify(s)
    assert (r.reason, r.function) == ("lock", "btrfs_tree_lock_nested")
    assert offcpu.caller_of(s, "lock") == "btrfs_lock_root_node"
    assert mechanism_of(s) == "btree-lock"


def test_rule_sentences_count_in_english() -> None:
    from iowall.analysis.explain.rules import plurals

    assert plurals("balance_dirty_pages set 1 task(s) pauses") == "balance_dirty_pages set 1 task pauses"
    assert (
        plurals("set 2 task(s) and 1,024 job(s); 0.5 request(s)")
        == "set 2 tasks and 1,024 jobs; 0.5 requests"
    )
    assert plurals("a task(s) with no count") == "a task(s) with no count"


@pytest.mark.parametrize(
    ("stack", "fn", "said"),
    [
        # a 1 GiB btrfs: each create's metadata reservation waits on a ticket (2026-12-01)
        (
            "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_openat;do_sys_openat2;path_openat;"
            "btrfs_create_common;start_transaction;btrfs_reserve_metadata_bytes;__reserve_bytes",
            "__reserve_bytes",
            "waited on a reservation ticket",
        ),
        # a 1 GiB ext4: its free blocks low, the writer waits for the writeback it started
        (
            "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pwrite64;vfs_write;ext4_buffered_write_iter;"
            "generic_perform_write;ext4_da_write_begin;ext4_nonda_switch;try_to_writeback_inodes_sb;"
            "__writeback_inodes_sb_nr;wb_wait_for_completion",
            "ext4_nonda_switch",
            "stopped delaying allocation",
        ),
        # ext4 out of blocks: the write's allocation failed with ENOSPC and, before it retries,
        # ext4_should_retry_alloc forces a journal commit to release the blocks the running
        # transaction freed (fs/ext4/balloc.c); the same from ext4_create
        (
            "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_pwrite64;vfs_write;ext4_buffered_write_iter;"
            "generic_perform_write;ext4_da_write_begin;ext4_should_retry_alloc;"
            "jbd2_journal_force_commit_nested;__jbd2_journal_force_commit;jbd2_log_wait_commit",
            "ext4_should_retry_alloc",
            "forced the journal to commit",
        ),
    ],
)
def test_space_on_btrfs_and_ext4(stack: str, fn: str, said: str) -> None:
    r = offcpu.classify(stack)
    assert (r.reason, r.function) == ("space", fn)
    th = _thread(1, wall_s=4.0, cpu=1.2, delay=0.0, user=0.1, blocked={0: 280}, running=120)
    b = budget.compute(_doc([th], [stack]), (0.0, 4.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is not None and (d.wall.kind, d.wall.mechanism) == ("space", "space-flush")
    assert said in d.wall.sentence and f"({fn}, from " in d.wall.sentence
    # out of blocks, only room moves it; short of them against what dirty files hold, less dirt too
    out = fn == "ext4_should_retry_alloc"
    assert ("The filesystem is out of blocks" in d.wall.sentence) == out
    assert ("less dirty data at a time" in d.wall.sentence) != out
