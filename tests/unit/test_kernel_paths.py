"""Kernel-path attribution (analysis.explain.kernel_paths) on stacks recorded on this machine
(tests/fixtures/profile/README.md) and on the rules one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.analysis.explain.kernel_paths import (
    PATHS,
    Decision,
    attribute,
    classify,
    decode_folded,
    parse_folded,
    path_metrics,
    sampled_leaf,
)
from iowall.probes.profile import encode_folded

FIX = Path(__file__).parents[1] / "fixtures" / "profile"


def load(name: str) -> dict[str, int]:
    return parse_folded((FIX / f"{name}.folded").read_text())


@pytest.mark.parametrize(
    "name", ["tmpfs_buffered_write", "loop_direct_write", "xfs_buffered_write", "xfs_create_shared_dir"]
)
def test_every_sample_is_attributed_once(name: str) -> None:
    stacks = load(name)
    att = attribute(stacks)
    assert att.total_samples == sum(stacks.values())
    assert att.total_samples == json.loads((FIX / f"{name}.json").read_text())["metrics"]["profile_samples"]
    assert [p.path for p in att.paths] == list(PATHS)
    assert sum(p.samples for p in att.paths) == att.total_samples
    assert sum(p.share for p in att.paths) == pytest.approx(1.0)
    for p in att.paths:
        assert sum(s.samples for s in p.top_functions) <= p.samples
        assert all(classify(s.name).path == p.path for s in p.top_stacks)


def test_tmpfs_buffered_write_is_the_copy() -> None:
    att = attribute(load("tmpfs_buffered_write"))
    top = att.ranked()[0]
    assert top.path == "copy"
    # fio at 4.8 GB/s against a 6.8 GB/s copy ceiling: the copy is most of the CPU time
    assert top.share > 0.6
    assert top.share > 3 * (att.share("page_cache") + att.share("filesystem"))
    fns = {s.name for s in top.top_functions}
    assert "copy_folio_from_iter_atomic" in fns and "folio_unlock (skid)" in fns


def test_direct_write_on_loop_is_the_loop_worker_copying() -> None:
    att = attribute(load("loop_direct_write"))
    top = att.ranked()[0]
    assert top.path == "loop" and top.share > 0.5
    # the loop worker's own time is mostly its copy into the backing file on /dev/shm
    assert top.top_functions[0].name == "copy_folio_from_iter_atomic (copy)"
    assert att.share("copy") == 0.0  # fio itself copies nothing with O_DIRECT
    assert att.share("block") > 0.0


def test_xfs_buffered_write_copy_then_bed() -> None:
    att = attribute(load("xfs_buffered_write"))
    ranked = [p.path for p in att.ranked()]
    assert ranked[:2] == ["copy", "loop"]
    assert att.share("copy") > 0.4


def test_create_in_one_xfs_directory_names_the_lock_and_its_caller() -> None:
    att = attribute(load("xfs_create_shared_dir"))
    lock = next(p for p in att.paths if p.path == "lock")
    assert lock.share > 0.2
    caller, slow = lock.top_functions[0].name.split(" -> ")
    assert slow == "rwsem_down_write_slowpath"  # the parent directory's i_rwsem
    assert caller == "path_openat"
    assert att.ranked()[0].path == "filesystem"
    assert all(
        s.name.startswith(("xfs", "xlog", "iomap"))
        for s in next(p for p in att.paths if p.path == "filesystem").top_functions
    )


def test_path_metrics_name_every_path() -> None:
    att = attribute(load("tmpfs_buffered_write"))
    ms = {m.name: m for m in path_metrics(att)}
    assert set(ms) == {f"profile_{p}_share" for p in PATHS}
    assert ms["profile_copy_share"].value == att.share("copy")
    assert all(m.unit == "share" for m in ms.values())


def test_artifact_round_trip() -> None:
    stacks = load("xfs_create_shared_dir")
    assert decode_folded(encode_folded(stacks)) == stacks


K = "_[k]"


def st(*frames: str, comm: str = "fio") -> str:
    return ";".join([comm, *frames])


def test_rules() -> None:
    write = (
        "entry_SYSCALL_64" + K,
        "vfs_write" + K,
        "xfs_file_buffered_write" + K,
        "iomap_file_buffered_write" + K,
        "iomap_write_iter" + K,
    )
    # leaf-most: the copy inside the fs path is copy; memcpy under a copy function too
    assert classify(st("main", *write, "copy_page_from_iter_atomic" + K)).path == "copy"
    assert classify(st(*write, "_copy_to_iter" + K, "memcpy_orig" + K)).path == "copy"
    assert classify(st(*write, "__filemap_get_folio" + K, "xas_load" + K)).path == "page_cache"
    assert classify(st(*write, "iomap_write_begin" + K)).path == "filesystem"
    # first row wins for one frame: shmem_get_folio_gfp is page cache, shmem_* filesystem
    assert classify(st("shmem_file_write_iter" + K, "shmem_get_folio_gfp" + K)).path == "page_cache"
    # clone suffixes are dropped; owners take everything below, the outermost one wins
    loop = ("kthread" + K, "loop_process_work" + K, "lo_rw_aio.isra.0" + K)
    d = classify(
        st(*loop, "generic_perform_write" + K, "copy_folio_from_iter_atomic" + K, comm="kworker/u8:0")
    )
    assert (d.path, d.function) == ("loop", "copy_folio_from_iter_atomic (copy)")
    wb = (
        "wb_workfn" + K,
        "do_writepages" + K,
        "xfs_vm_writepages" + K,
        "submit_bio" + K,
        "blk_mq_submit_bio" + K,
    )
    assert classify(st(*wb, comm="kworker/u8:1")).path == "writeback"
    assert (
        classify(st("kswapd" + K, "shrink_node" + K, "xfs_vm_release_folio" + K, comm="kswapd0")).path
        == "reclaim"
    )
    # a lock slow path beats an owner, and names the first caller outside lock machinery
    d = classify(
        st(
            *wb[:3],
            "xfs_ilock" + K,
            "down_write" + K,
            "rwsem_down_write_slowpath" + K,
            "rwsem_spin_on_owner" + K,
        )
    )
    assert (d.path, d.function) == ("lock", "xfs_ilock -> rwsem_down_write_slowpath")
    d = classify(
        st(
            "folio_batch_move_lru" + K,
            "folio_lruvec_lock_irqsave" + K,
            "_raw_spin_lock_irqsave" + K,
            "native_queued_spin_lock_slowpath" + K,
        )
    )
    assert d.function == "folio_lruvec_lock_irqsave -> native_queued_spin_lock_slowpath"
    # idle, but an interrupt's work during idle is that work
    idle = ("do_idle" + K, "default_idle_call" + K)
    assert classify(st(*idle, "pv_native_safe_halt" + K, comm="swapper")).path == "idle"
    assert classify(st(*idle, "blk_complete_reqs" + K, comm="swapper")).path == "block"
    # scheduler helpers named *idle* are not idle
    assert classify(st("try_to_wake_up" + K, "select_idle_sibling" + K)).path == "other"
    # no kernel frame is user; the vDSO is user too
    assert classify(st("main", "get_io_u")).path == "user"
    assert classify(st("clock_gettime", "__vdso_clock_gettime" + K)).path == "user"
    # the skid rule only for the observed pair
    assert classify(st("shmem_write_end" + K, "folio_unlock" + K)).path == "copy"
    assert classify(st("iomap_write_end" + K, "folio_unlock" + K)).path == "filesystem"


def test_an_interrupts_off_section_is_its_callers_time() -> None:
    # cpu-clock ticks while interrupts are off are taken where they come back on: a context
    # switch lands on finish_task_switch, a section under an irq-safe lock on its unlock
    switch = st("io_schedule" + K, "schedule" + K, "__schedule" + K, "finish_task_switch.isra.0" + K)
    assert classify(switch) == Decision("other", "__schedule with interrupts off")
    queued = st("blk_mq_dispatch_rq_list" + K, "loop_queue_rq" + K, "_raw_spin_unlock_irq" + K)
    assert classify(queued) == Decision("loop", "loop_queue_rq with interrupts off")
    # the same leaf alone, or an unlock that does not turn interrupts on, is named as sampled
    assert classify(st("finish_task_switch.isra.0" + K)).function == "finish_task_switch"
    assert classify(st("loop_queue_rq" + K, "_raw_spin_unlock" + K)).function == "_raw_spin_unlock"
    assert sampled_leaf(["a", "b", "_raw_spin_unlock_irqrestore"]) == ("b with interrupts off", 1)
    assert sampled_leaf(["a", "b"]) == ("b", 1)
