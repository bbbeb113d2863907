"""The wall-clock budget and the wall read from it: off-CPU reasons, per-thread accounting,
the window, cgroup throttling and the verdicts, on documents built to known numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from iowall.analysis.explain import budget, offcpu, wall
from iowall.analysis.explain import device as device_wall
from iowall.analysis.explain import verdict as wall_verdict
from iowall.analysis.explain.evidence import window_mean
from iowall.probes.threadstate import ROW_FIELDS, cgroup_metrics, parse_row, parse_stack

FSYNC = (
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_fsync;do_fsync;xfs_file_fsync;"
    "xfs_log_force_seq;xlog_wait_on_iclog"
)
IO = (
    "entry_SYSCALL_64;do_syscall_64;__x64_sys_pread64;vfs_read;xfs_file_read_iter;iomap_dio_rw;__iomap_dio_rw"
)
BDP = (
    "entry_SYSCALL_64;do_syscall_64;ksys_write;vfs_write;xfs_file_buffered_write;"
    "iomap_file_buffered_write;balance_dirty_pages_ratelimited_flags;balance_dirty_pages;"
    "io_schedule_timeout"
)
LOCK = (
    "entry_SYSCALL_64;do_syscall_64;ksys_write;vfs_write;xfs_file_buffered_write;xfs_ilock;"
    "down_write;rwsem_down_write_slowpath"
)
FADVISE = (
    "entry_SYSCALL_64;do_syscall_64;__x64_sys_fadvise64;ksys_fadvise64_64;generic_fadvise;"
    "__filemap_fdatawrite_range;filemap_fdatawrite_wbc;do_writepages;iomap_writepages;"
    "submit_bio;blk_mq_submit_bio;__rq_qos_throttle;wbt_wait;rq_qos_wait;io_schedule"
)
MEMCG = (
    "entry_SYSCALL_64;ksys_write;iomap_file_buffered_write;__filemap_get_folio;"
    "mem_cgroup_charge;try_charge_memcg;try_to_free_mem_cgroup_pages;do_try_to_free_pages;"
    "shrink_folio_list;folio_wait_writeback;io_schedule"
)
SLEEP = "entry_SYSCALL_64;do_syscall_64;__x64_sys_clock_nanosleep;common_nsleep;hrtimer_nanosleep"
SELECT = "entry_SYSCALL_64;do_syscall_64;__x64_sys_pselect6;do_pselect.constprop.0;core_sys_select;do_select"


@pytest.mark.parametrize(
    ("stack", "reason", "function"),
    [
        (FSYNC, "fsync", "xlog_wait_on_iclog"),
        (IO, "io", "__iomap_dio_rw"),
        (BDP, "dirty-throttle", "balance_dirty_pages"),
        (LOCK, "lock", "rwsem_down_write_slowpath"),
        (MEMCG, "reclaim", "shrink_folio_list"),
        (SLEEP, "sleep", "hrtimer_nanosleep"),
        (SELECT, "wait", "do_select"),
        ("entry_SYSCALL_64;do_syscall_64;some_new_wait", "other", "some_new_wait"),
    ],
)
def test_reasons(stack: str, reason: str, function: str) -> None:
    r = offcpu.classify(stack)
    assert (r.reason, r.function) == (reason, function)


def test_a_preempted_task_is_runnable_not_blocked() -> None:
    assert offcpu.classify("irqentry_exit_to_user_mode").reason == offcpu.PREEMPTED
    assert offcpu.classify("asm_sysvec_apic_timer_interrupt").reason == offcpu.PREEMPTED
    kernel = "entry_SYSCALL_64;ksys_write;copy_page_from_iter;irqentry_exit;preempt_schedule_irq"
    assert offcpu.classify(kernel).reason == offcpu.PREEMPTED
    # a fault that waits for a read is a fault, whatever entered it
    assert (
        offcpu.classify(
            "asm_exc_page_fault;exc_page_fault;handle_mm_fault;filemap_fault;folio_wait_bit_common"
        ).reason
        == "fault"
    )
    # preempted samples count with the running ones: the blocked time stays covered
    th = _thread(1, wall_s=4.0, cpu=2.0, delay=0.0, user=0.0, blocked={0: 200, 1: 100}, running=100)
    b = budget.compute(_doc([th], [FSYNC, "irqentry_exit_to_user_mode"]), (0.0, 4.0), "t")
    assert b is not None
    assert b.totals["blocked:fsync"] == pytest.approx(2.0)
    assert b.totals["unaccounted"] == pytest.approx(0.0)


def test_outer_cause_owns_the_wait() -> None:
    # reclaim waiting for writeback is reclaim, not I/O; a lock inside fsync is the lock
    assert offcpu.classify(MEMCG).reason == "reclaim"
    assert offcpu.classify(FSYNC + ";down_write;rwsem_down_write_slowpath").reason == "lock"
    assert offcpu.caller_of(LOCK, "lock") == "xfs_file_buffered_write"


def test_probe_parsers() -> None:
    stat = "123 (fio worker) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0 100 0 0"
    io = "rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 0\n"
    assert parse_row(stat, "5000 700 9\n", io) == [5000, 700, 250, 75, 3, 4, 10, 20]
    assert parse_row("", "", "") is None
    text = "[<0>] xlog_wait_on_iclog+0x1/0x2\n[<0>] xfs_file_fsync+0x3/0x4\n[<0>] do_fsync+0x5/0x6\n"
    assert parse_stack(text) == "do_fsync;xfs_file_fsync;xlog_wait_on_iclog"
    assert parse_stack("") == ""


def _doc(
    threads: list[dict[str, Any]], stacks: list[str], cgroups: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "version": 1,
        "hz": 100,
        "bucket_s": 0.1,
        "clk_tck": 100,
        "row_fields": list(ROW_FIELDS),
        "threads": threads,
        "stacks": stacks,
        "cgroups": cgroups or [],
    }


def _thread(
    tid: int,
    *,
    wall_s: float,
    cpu: float,
    delay: float,
    user: float,
    blocked: dict[int, int],
    syscw: int = 1000,
    running: int = 0,
    comm: str = "fio",
    t0: float = 0.0,
    cg: int = 0,
) -> dict[str, Any]:
    """A thread with rows every 0.1 s from t0 over wall_s, its counters growing evenly; its
    blocked samples all in its last bucket (the budget only counts them)."""
    n = round(wall_s / 0.1)
    rows = []
    samples = 100 * wall_s
    for i in range(n + 1):
        f = i / n
        rows.append(
            [
                round(t0 + i * 0.1, 4),
                cpu * 1e9 * f,
                delay * 1e9 * f,
                user / cpu * 100 * cpu * f if cpu else 0,
                (1 - user / cpu) * 100 * cpu * f if cpu else 0,
                0,
                syscw * f,
                0,
                syscw * 16384 * f,
                samples * f,
                running * f,
            ]
        )
    return {
        "pid": tid,
        "tid": tid,
        "comm": comm,
        "cgroup": cg,
        "rows": rows,
        "blocked": [[n, sid, cnt] for sid, cnt in blocked.items()],
    }


def test_budget_accounts_every_second() -> None:
    # 4 s: 1 s on a CPU (0.2 user), 0.5 s runnable, 2.5 s blocked: fsync 3 samples to 1 io
    th = _thread(1, wall_s=4.0, cpu=1.0, delay=0.5, user=0.2, blocked={0: 300, 1: 100}, running=0)
    b = budget.compute(_doc([th], [FSYNC, IO]), (0.0, 4.0), "test")
    assert b is not None
    s = b.totals
    assert s["user"] == pytest.approx(0.2)
    assert s["kernel"] == pytest.approx(0.8)
    assert s["runnable:others"] == pytest.approx(0.5)
    assert s["runnable:quota"] == 0
    # 400 blocked samples of the 400 expected (no running samples): all blocked time covered
    assert s["blocked:fsync"] == pytest.approx(2.5 * 0.75)
    assert s["blocked:io"] == pytest.approx(2.5 * 0.25)
    assert s["unaccounted"] == pytest.approx(0.0)
    assert b.wall_s == pytest.approx(4.0)
    assert b.top_functions["fsync"][0] == "xlog_wait_on_iclog"


def test_blocked_time_without_stacks_is_unaccounted() -> None:
    # half of the expected blocked samples are missing: half of the blocked time unaccounted
    th = _thread(1, wall_s=4.0, cpu=0.0, delay=0.0, user=0.0, blocked={0: 200})
    b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test")
    assert b is not None
    assert b.totals["blocked:io"] == pytest.approx(2.0)
    assert b.totals["unaccounted"] == pytest.approx(2.0)


def test_idle_helper_threads_are_left_out() -> None:
    worker = _thread(1, wall_s=4.0, cpu=3.0, delay=0.0, user=0.5, blocked={0: 100})
    helper = _thread(2, wall_s=4.0, cpu=0.01, delay=0.0, user=0.01, blocked={1: 400}, syscw=5, comm="fio")
    b = budget.compute(_doc([worker, helper], [IO, SELECT]), (0.0, 4.0), "test")
    assert b is not None
    assert [t.tid for t in b.threads] == [1]
    assert b.left_out == ("fio (2)",)


def test_a_helper_on_a_cpu_beside_visible_io_is_left_out() -> None:
    """fio's helper in an emulated guest: on a CPU 7.5% of its time (each look at /proc
    emulated) but waiting 90%, and none of the bytes, beside a writer that moved them: a
    helper (it was counted, and the budget named no mechanism). When no thread's I/O shows
    in bytes (io_uring, libaio), time on a CPU still makes a worker of a thread whose process
    works; a process whose threads all only wait while another works is a helper (fio's
    parent beside its forked job: run 64 of the explain corpus, its main thread on a CPU 9%
    of its time and in pselect the rest, made the wall 'waiting on other threads')."""
    worker = _thread(1, wall_s=4.0, cpu=3.0, delay=0.0, user=0.5, blocked={0: 100})
    helper = _thread(2, wall_s=4.0, cpu=0.3, delay=0.0, user=0.1, blocked={1: 360}, syscw=5)
    b = budget.compute(_doc([worker, helper], [IO, SELECT]), (0.0, 4.0), "test")
    assert b is not None and [t.tid for t in b.threads] == [1] and b.left_out == ("fio (2)",)
    quiet = _thread(1, wall_s=4.0, cpu=3.0, delay=0.0, user=0.5, blocked={0: 100}, syscw=5)
    b = budget.compute(_doc([quiet, {**helper, "pid": 1}], [IO, SELECT]), (0.0, 4.0), "test")
    assert b is not None and [t.tid for t in b.threads] == [1, 2]
    b = budget.compute(_doc([quiet, helper], [IO, SELECT]), (0.0, 4.0), "test")
    assert b is not None and [t.tid for t in b.threads] == [1] and b.left_out == ("fio (2)",)
    # nobody works: a point that sleeps (fio's rate) keeps its threads on a CPU
    sleeper = _thread(1, wall_s=4.0, cpu=0.3, delay=0.0, user=0.1, blocked={1: 360}, syscw=5)
    b = budget.compute(_doc([sleeper, helper], [IO, SELECT]), (0.0, 4.0), "test")
    assert b is not None and [t.tid for t in b.threads] == [1, 2]


def test_window_cuts_the_threads_counters() -> None:
    th = _thread(1, wall_s=10.0, cpu=5.0, delay=0.0, user=1.0, blocked={})
    b = budget.compute(_doc([th], []), (2.0, 6.0), "test")
    assert b is not None
    assert b.threads[0].wall_s == pytest.approx(4.2, abs=0.21)  # rows bracket the window
    assert b.totals["user"] + b.totals["kernel"] == pytest.approx(b.threads[0].wall_s / 2)


def _cgroup(throttled_s: float, periods: float, throttled: float, quota: float) -> dict[str, Any]:
    rows = [
        [0.0, {"cg_cpu_nr_periods": 0, "cg_cpu_nr_throttled": 0, "cg_cpu_throttled_s": 0}],
        [
            4.0,
            {
                "cg_cpu_nr_periods": periods,
                "cg_cpu_nr_throttled": throttled,
                "cg_cpu_throttled_s": throttled_s,
            },
        ],
    ]
    return {"paths": {"cpu": "/g"}, "limits": {"cpu_quota_cpus": quota}, "rows": rows}


def test_quota_explains_run_delay_up_to_the_throttled_time() -> None:
    th = _thread(1, wall_s=4.0, cpu=1.2, delay=2.6, user=0.1, blocked={0: 20})
    doc = _doc([th], [IO], [_cgroup(throttled_s=2.0, periods=40, throttled=37, quota=0.3)])
    b = budget.compute(doc, (0.0, 4.0), "test")
    assert b is not None
    assert b.totals["runnable:quota"] == pytest.approx(2.0)
    assert b.totals["runnable:others"] == pytest.approx(0.6)
    w = wall.decide(b, device_wall.Device(), {}).wall
    assert w is not None and w.kind == "cpu-quota"
    assert "0.30 CPU" in w.sentence and "92% of periods" in w.sentence


def test_a_binding_quota_holds_all_the_run_delay() -> None:
    # 0.3 CPU quota over 4 s, 1.13 CPU-s used (94%), throttled: the neighbours beside it only
    # decide when in each period the group runs, so its whole run delay is the quota's
    th = _thread(1, wall_s=4.0, cpu=1.13, delay=2.6, user=0.1, blocked={0: 20})
    cg = _cgroup(throttled_s=0.9, periods=40, throttled=30, quota=0.3)
    cg["rows"][0][1]["cg_cpu_usage_s"], cg["rows"][1][1]["cg_cpu_usage_s"] = 0.0, 1.13
    b = budget.compute(_doc([th], [IO], [cg]), (0.0, 4.0), "test", cpus=(1.6, 0.6))
    assert b is not None
    assert b.totals["runnable:quota"] == pytest.approx(2.6)
    assert b.totals["runnable:others"] == pytest.approx(0.0)
    # the same group using half its quota: only the throttled time is the quota's
    cg["rows"][1][1]["cg_cpu_usage_s"] = 0.6
    b = budget.compute(_doc([th], [IO], [cg]), (0.0, 4.0), "test", cpus=(1.6, 0.6))
    assert b is not None
    assert b.totals["runnable:quota"] == pytest.approx(0.9)


def test_window_mean_leaves_out_a_sample_straddling_the_start() -> None:
    # the first second carried the layout's writes completing (4.4 in flight), not the reads
    qd = [(1.0, 0.02), (2.0, 4.36), (3.0, 0.64), (4.0, 0.62), (5.0, 0.61), (6.0, 0.16)]
    assert window_mean(qd, 1.29, 5.28) == pytest.approx((0.64 + 0.62 + 0.61) / 3)
    # a window inside one sample's interval: the sample that ends in it
    assert window_mean(qd, 2.2, 2.9) is None
    assert window_mean(qd, 2.2, 3.0) == pytest.approx(0.64)


def _decide(
    blocked: dict[int, int],
    stacks: list[str],
    device: device_wall.Device,
    *,
    cpu: float = 0.2,
    delay: float = 0.0,
    cgroups: list[dict[str, Any]] | None = None,
    ctx: dict[str, float] | None = None,
    paths: dict[str, int] | None = None,
    devnos: tuple[str, ...] = (),
) -> wall_verdict.Wall | None:
    th = _thread(1, wall_s=4.0, cpu=cpu, delay=delay, user=0.05, blocked=blocked)
    b = budget.compute(_doc([th], stacks, cgroups), (0.0, 4.0), "test", paths)
    assert b is not None
    return wall.decide(b, device, ctx or {}, devnos=devnos).wall


def test_io_walls_are_told_apart_by_the_device_side() -> None:
    qd1 = _decide({0: 380}, [IO], device_wall.Device(util=0.5, queue_depth=0.9, await_s=30e-6, iops=30000))
    assert qd1 is not None and qd1.kind == "io-latency"
    busy = _decide({0: 380}, [IO], device_wall.Device(util=0.97, queue_depth=12, await_s=4e-4, iops=30000))
    assert busy is not None and busy.kind == "device"
    # 46 requests in flight at 80% busy (a loop device over the virtio disk): they queue there
    deep = _decide({0: 380}, [IO], device_wall.Device(util=0.79, queue_depth=45.8, await_s=1.7e-2, iops=2700))
    assert deep is not None and deep.kind == "device"
    shallow = _decide({0: 380}, [IO], device_wall.Device(util=0.79, queue_depth=3, await_s=1e-3, iops=2700))
    assert shallow is not None and shallow.kind == "io"
    # 1000 writes in 3.8 s blocked = 3.8 ms each, against a device answering in 0.3 ms, 2% busy
    held = _decide({0: 380}, [IO], device_wall.Device(util=0.02, queue_depth=0.1, await_s=3e-4, iops=60))
    assert held is not None and held.kind == "above-device"
    limit = {"paths": {}, "limits": {"io_limits": [{"dev": "7:0", "wbps": 100 << 20}]}, "rows": []}
    thr = _decide(
        {0: 380}, [IO], device_wall.Device(util=0.02, queue_depth=0.1, await_s=3e-4, iops=60), cgroups=[limit]
    )
    assert thr is not None and thr.kind == "block-throttle"
    assert "100MiB/s" in thr.sentence
    # the same limit on another device than the bed's is not this point's limit
    other = _decide(
        {0: 380},
        [IO],
        device_wall.Device(util=0.02, queue_depth=0.1, await_s=3e-4, iops=60),
        cgroups=[limit],
        devnos=("254:0",),
    )
    assert other is not None and other.kind == "above-device"
    mine = _decide(
        {0: 380},
        [IO],
        device_wall.Device(util=0.02, queue_depth=0.1, await_s=3e-4, iops=60),
        cgroups=[limit],
        devnos=("7:0",),
    )
    assert mine is not None and mine.kind == "block-throttle"
    loop = _decide(
        {0: 380}, [IO], device_wall.Device(util=0.6, queue_depth=3, await_s=1e-4, iops=3e4, loop_cpus=0.97)
    )
    assert loop is not None and loop.kind == "device"


def test_blocked_walls_name_their_mechanism() -> None:
    dev = device_wall.Device()
    cases = {"fsync": FSYNC, "dirty-throttle": BDP, "lock": LOCK, "sleep": SLEEP, "reclaim": MEMCG}
    for kind, stack in cases.items():
        w = _decide({0: 380}, [stack], dev)
        assert w is not None and w.kind == kind, (kind, w)
    memcg = {
        "paths": {},
        "limits": {"mem_limit_bytes": 300 << 20},
        "rows": [[0.0, {"cg_mem_max_events": 10}], [4.0, {"cg_mem_max_events": 14679}]],
    }
    w = _decide({0: 380}, [MEMCG], dev, cgroups=[memcg])
    assert w is not None and w.kind == "memcg-reclaim"
    assert "300 MiB limit was hit 14,669 times" in w.sentence


def test_on_cpu_walls_and_the_copy_ceiling() -> None:
    copy = {
        "fio;entry_SYSCALL_64_[k];vfs_write_[k];copy_page_from_iter_[k];rep_movs_alternative_[k]": 90,
        "fio;entry_SYSCALL_64_[k];vfs_write_[k];xfs_file_buffered_write_[k]": 10,
    }
    # 1000 writes of 16 KiB = 15.6 MiB in 3.6 s on a CPU: far below a 4 GiB/s ceiling
    slow = _decide(
        {0: 40},
        [IO],
        device_wall.Device(),
        cpu=3.6,
        paths=copy,
        ctx={"memcopy_bytes_per_s": 8 * 2**30, "jobs": 2, "cpus": 2},
    )
    assert slow is not None and slow.kind == "cpu-kernel"
    fast = _decide(
        {0: 40},
        [IO],
        device_wall.Device(),
        cpu=3.6,
        paths=copy,
        ctx={"memcopy_bytes_per_s": 2 * 2**20, "jobs": 1, "cpus": 2},
    )
    assert fast is not None and fast.kind == "memcopy"
    # two threads that copied faster than their share of two copying at once took turns:
    # the one-thread ceiling is theirs, never a reading over 100% of the two-thread one
    turns = _decide(
        {0: 40},
        [IO],
        device_wall.Device(),
        cpu=3.6,
        paths=copy,
        ctx={"memcopy_bytes_per_s": 4 * 2**20, "memcopy_1_bytes_per_s": 6 * 2**20, "jobs": 2, "cpus": 2},
    )
    assert turns is not None and turns.kind == "memcopy"
    assert "82% of the one-thread memory-copy ceiling" in turns.sentence, turns.sentence
    assert "copied 0.8 at a time on average), 6MiB/s per thread" in turns.sentence
    # a plan run has no ceiling of its own: this boot's one-thread reference stands in
    ref = _decide(
        {0: 40},
        [IO],
        device_wall.Device(),
        cpu=3.6,
        paths=copy,
        ctx={"memcopy_thread_bytes_per_s": 16 * 2**20},
    )
    assert ref is not None and ref.kind == "memcopy" and "once this boot" in ref.sentence
    none = _decide({0: 40}, [IO], device_wall.Device(), cpu=3.6, paths=copy)
    assert none is not None and none.kind == "memcopy" and "no memory-copy rate" in none.sentence
    user = _decide({0: 40}, [IO], device_wall.Device(), cpu=3.6, paths=None)
    assert user is not None and user.kind == "cpu-kernel"


def test_silence_when_short_or_spread() -> None:
    th = _thread(1, wall_s=1.0, cpu=0.9, delay=0.0, user=0.1, blocked={})
    b = budget.compute(_doc([th], []), (0.0, 1.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is None and "too short" in d.notes[0]
    # a third each on a CPU, in fsync, waiting for I/O: no state holds 40%
    th = _thread(1, wall_s=4.0, cpu=1.4, delay=0.0, user=0.1, blocked={0: 130, 1: 130}, running=140)
    b = budget.compute(_doc([th], [IO, FSYNC]), (0.0, 4.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {})
    assert d.wall is None and any("No single state" in n for n in d.notes)
    # the largest state in words, not its key
    (note,) = [n for n in d.notes if "No single state" in n]
    assert (
        "(its largest parts: on a CPU or runnable behind its own threads 35%; blocked: fsync and "
        "synchronous writeback (fdatasync, fadvise, the log) 32%; blocked: I/O completion 32%)"
    ) in note, note


def test_neighbours_are_a_reason_for_run_delay_only() -> None:
    th = _thread(1, wall_s=4.0, cpu=1.0, delay=2.8, user=0.5, blocked={0: 20})
    b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {}, [("sh", 3.9), ("python3", 0.2)])
    assert d.wall is not None and d.wall.kind == "cpu-contention" and "sh" in d.wall.sentence
    assert any("sh 3.9 CPU-s" in n for n in d.notes)


def test_a_lone_thread_never_waits_behind_itself() -> None:
    # one fio job beside four busy loops: on a CPU 1.5 s, runnable 2.4 s; the workload's CPUs
    # (0.38) are this thread's own, so its whole run delay is the neighbours'
    th = _thread(1, wall_s=4.0, cpu=1.5, delay=2.4, user=0.02, blocked={0: 5})
    b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test", cpus=(2.4, 0.38))
    assert b is not None
    assert b.totals["runnable:own"] == pytest.approx(0.0, abs=0.02)
    assert b.totals["runnable:others"] == pytest.approx(2.4, abs=0.02)
    d = wall.decide(b, device_wall.Device(), {}, [("sh", 9.6)])
    assert d.wall is not None and d.wall.kind == "cpu-contention", d


def test_run_delay_behind_its_own_threads_is_the_cpu_wall() -> None:
    # on a CPU 1.0 s, runnable 2.8 s: with the neighbours at 90% of the busy CPU time the
    # delay is theirs; with nobody else running (5%), it is 3 jobs on 2 CPUs: the CPUs
    th = _thread(1, wall_s=4.0, cpu=1.0, delay=2.8, user=0.1, blocked={0: 20})
    # the thread uses 0.25 CPU: its competitors are the others' 1.8 CPUs and the workload's
    # 0.45 less its own 0.25
    busy_b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test", cpus=(1.8, 0.45))
    assert busy_b is not None
    assert busy_b.totals["runnable:others"] == pytest.approx(2.52)
    busy = wall.decide(busy_b, device_wall.Device(), {}, [("sh", 3.9)])
    assert busy.wall is not None and busy.wall.kind == "cpu-contention"
    b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test", cpus=(0.05, 1.2))
    assert b is not None
    assert b.totals["runnable:own"] == pytest.approx(2.66)
    assert b.totals["runnable:others"] == pytest.approx(0.14)
    alone = wall.decide(b, device_wall.Device(), {"jobs": 3, "cpus": 2})
    assert alone.wall is not None and alone.wall.kind == "cpu-kernel", alone
    assert "66% of its time runnable behind its own threads" in alone.wall.sentence
    assert "(3 jobs on 2 CPUs)" in alone.wall.sentence
    assert alone.wall.evidence["own_run_delay_share"] == pytest.approx(0.665, abs=0.001)
    assert not any("Other processes" in n for n in alone.notes)
    assert "the kernel's threads spent" not in alone.wall.sentence
    # the workers it queued behind converting unwritten extents (the unwritten case beside a
    # neighbour): said, with their CPUs; under 0.3 CPU, or generic work, it is not
    conv = wall.decide(b, device_wall.Device(), {}, helpers={"unwritten-conversion": 0.34, "writeback": 0.9})
    assert conv.wall is not None
    assert "the kernel's threads spent 0.34 CPU in unwritten-conversion" in conv.wall.sentence
    small = wall.decide(b, device_wall.Device(), {}, helpers={"unwritten-conversion": 0.1, "writeback": 0.9})
    assert small.wall is not None and "the kernel's threads spent" not in small.wall.sentence
    # without the tasks probe's share, all of it stays with the others
    b = budget.compute(_doc([th], [IO]), (0.0, 4.0), "test")
    assert b is not None and b.totals["runnable:own"] == 0.0


def test_a_neighbour_does_not_hide_the_workloads_own_wall() -> None:
    # fsync 1.6 s, on a CPU 1.2 s, runnable behind a neighbour 1.2 s: of the time the
    # neighbour left, fsync holds 57%: still the wall, and the neighbour is noted
    th = _thread(1, wall_s=4.0, cpu=1.2, delay=1.2, user=0.1, blocked={0: 160}, running=240)
    b = budget.compute(_doc([th], [FSYNC]), (0.0, 4.0), "test")
    assert b is not None
    d = wall.decide(b, device_wall.Device(), {}, [("sh", 1.5)])
    assert d.wall is not None and d.wall.kind == "fsync"
    assert d.wall.share == pytest.approx(1.6 / 2.8, rel=0.01)
    assert any("waited 30% of its time runnable" in n and "of the 70% they left" in n for n in d.notes)
    # and the second state, on a CPU 43% of the same time, is named beside it
    assert [a.kind for a in d.also] == ["cpu-kernel"]


def test_time_on_a_cpu_inside_fsync_counts_with_fsync() -> None:
    # btrfs writes back inside fsync on the caller's CPU: 2 s on a CPU, 3/4 of its samples
    # inside fsync, and 2 s blocked in the log: fsync holds 1.5 + 2 of 4 s
    prof = {
        "fio;entry_SYSCALL_64_[k];do_fsync_[k];btrfs_sync_file_[k];btrfs_do_write_iter_[k]": 75,
        "fio;entry_SYSCALL_64_[k];vfs_write_[k];btrfs_buffered_write_[k]": 25,
    }
    th = _thread(1, wall_s=4.0, cpu=2.0, delay=0.0, user=0.0, blocked={0: 200}, running=200)
    b = budget.compute(_doc([th], [FSYNC]), (0.0, 4.0), "test", prof)
    assert b is not None
    assert b.kernel_contexts == {"fsync": pytest.approx(1.5)}
    w = wall.decide(b, device_wall.Device(), {}).wall
    assert w is not None and w.kind == "fsync" and w.share == pytest.approx(3.5 / 4)
    assert "(43% of it on a CPU)" in w.sentence


def test_cgroup_counters_become_the_runs_metrics() -> None:
    rows = [
        [0.0, {"cg_cpu_nr_periods": 10, "cg_cpu_throttled_s": 1.5, "cg_mem_max_events": 3}],
        [0.1, {"cg_cpu_nr_periods": 12}],
        [4.0, {"cg_cpu_nr_periods": 50, "cg_cpu_throttled_s": 4.0, "cg_mem_max_events": 3}],
    ]
    got = {m.name: m.value for m in cgroup_metrics(rows)}
    assert got == {"cg_cpu_nr_periods": 40, "cg_cpu_throttled_s": 2.5, "cg_mem_max_events": 0}
    assert cgroup_metrics(rows[:1]) == []


def test_memcopy_reference_is_kept_until_reboot(tmp_path: Any) -> None:
    from iowall.workloads import memcopy_ref

    cache = tmp_path / "ref.json"
    first = memcopy_ref.reference(str(cache))
    assert first is not None and first["threads"] == 1 and first["bytes_per_s"] > 1e8
    # the second call reads the cache: a planted figure for this boot comes back as it is
    boot = memcopy_ref._boot_id()
    cache.write_text(json.dumps({"boot_id": boot, "ref": {"threads": 1, "bytes_per_s": 42.0}}))
    assert memcopy_ref.reference(str(cache))["bytes_per_s"] == 42.0
    # another boot's figure is measured again
    cache.write_text(json.dumps({"boot_id": "other", "ref": {"threads": 1, "bytes_per_s": 42.0}}))
    assert memcopy_ref.reference(str(cache))["bytes_per_s"] != 42.0


def test_a_lock_on_full_cpus_is_a_wait_for_a_cpu() -> None:
    # 4 s: on a CPU 1.0 s, runnable 1.2 s, asleep on a lock 1.8 s (all blocked samples)
    th = _thread(1, wall_s=4.0, cpu=1.0, delay=1.2, user=0.05, blocked={0: 400})
    ctx = {"jobs": 8, "cpus": 2}
    # the point's threads kept 1.95 of the 2 CPUs busy: freed, the lock wait would mostly
    # have waited runnable; the CPUs are the wall, the lock told beside them
    full = budget.compute(_doc([th], [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 1.95))
    assert full is not None
    # c = 1.0 / (4.0 - 1.8) on a CPU outside the lock; spare 0.05 CPU x 4 s = 0.2 CPU-s
    assert wall.lock_turns(full, ctx) == pytest.approx(1.8 - 0.2 / (1.0 / 2.2))
    d = wall.decide(full, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "cpu-kernel", d
    assert "was on a CPU or waiting for one 89% of its time (26% on one)" in d.wall.sentence
    assert (
        "34% asleep on a kernel lock (rwsem_down_write_slowpath, taken in "
        "xfs_file_buffered_write)" in d.wall.sentence
    )
    assert "the CPUs were full (1.95 of 2 busy" in d.wall.sentence
    # with the CPUs two-thirds idle (and so hardly a run delay) the lock kept it from them
    th = _thread(1, wall_s=4.0, cpu=1.0, delay=0.1, user=0.05, blocked={0: 400})
    idle = budget.compute(_doc([th], [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 0.6))
    assert idle is not None and wall.lock_turns(idle, ctx) == 0.0
    d = wall.decide(idle, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "lock", d
    # without the tasks probe's CPUs nothing is moved
    bare = budget.compute(_doc([th], [LOCK]), (0.0, 4.0), "test")
    assert bare is not None and wall.lock_turns(bare, ctx) == 0.0


def test_a_lock_that_leaves_cpus_unused_is_the_wall() -> None:
    # one thread-state budget, eight threads like eight writers of one XFS file (each 4 s:
    # on a CPU 0.6 s, runnable 1.05 s, asleep on the lock 2.35 s), on two machines: with the
    # point's work filling 1.95 of 2 CPUs, removing the lock could raise its throughput by 3%
    # at most (spare 0.05 / useful 1.95): the lock only chose who waited, the CPUs are the
    # wall; with 1.7 of 2, by up to 18%: the lock kept work off the CPUs and is the wall (the
    # writers of one file used 1.6-1.8 with their spinning, 1.2-1.3 without, and wrote at
    # 0.58-0.73x a file each)
    ths = [_thread(i, wall_s=4.0, cpu=0.6, delay=1.05, user=0.05, blocked={0: 400}) for i in range(1, 9)]
    ctx = {"jobs": 8, "cpus": 2}
    full = budget.compute(_doc(ths, [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 1.95))
    assert full is not None and wall.lock_turns(full, ctx) > 10.0
    d = wall.decide(full, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "cpu-kernel", d
    part = budget.compute(_doc(ths, [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 1.7))
    assert part is not None and wall.lock_turns(part, ctx) == 0.0
    d = wall.decide(part, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "lock", d
    # CPUs busy spinning on the lock are the lock's, not the work's: the same 1.95 of 2 CPUs,
    # half the kernel time spinning in the rwsem's slow path (0.55 CPUs), leave the work 1.40
    spinning = {
        "fio;entry_SYSCALL_64_[k];ksys_write_[k];xfs_file_buffered_write_[k];xfs_ilock_[k];"
        "down_write_[k];rwsem_down_write_slowpath_[k];rwsem_spin_on_owner_[k]": 50,
        "fio;entry_SYSCALL_64_[k];vfs_write_[k];copy_page_from_iter_[k];rep_movs_alternative_[k]": 50,
    }
    spun = budget.compute(_doc(ths, [LOCK]), (0.0, 4.0), "test", spinning, cpus=(0.05, 1.95))
    assert spun is not None and wall.lock_turns(spun, ctx) == 0.0
    d_spun = wall.decide(spun, device_wall.Device(), ctx)
    assert d_spun.wall is not None and d_spun.wall.kind == "lock", d_spun
    assert "0.55 more spinning on the lock" in d_spun.wall.sentence
    # the wall says the CPUs its work left unused, and what its CPU cost per byte would carry
    assert "Its work used 1.70 of 2 CPUs: at its present CPU cost per byte, all of them would carry 1.2x" in (
        d.wall.sentence
    )
    assert d.wall.evidence["cpu_headroom"] == pytest.approx(2 / 1.7, abs=1e-3)


def test_lock_cpus_are_counted_over_the_threads_lives_not_the_window() -> None:
    # eight writers that live the middle 2 s of a 4 s window, asleep on the lock the rest of
    # their lives; the tasks probe's mean over the window halves their CPUs (the bed ran nothing
    # else). While they lived they used 2.4 CPU-s in 2 s: 1.20 CPUs, not 0.60
    ths = [
        _thread(i, wall_s=2.0, cpu=0.3, delay=0.2, user=0.05, blocked={0: 150}, t0=1.0) for i in range(1, 9)
    ]
    ctx = {"jobs": 8, "cpus": 2}
    b = budget.compute(_doc(ths, [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 0.6))
    assert b is not None and b.counted_s == pytest.approx(2.0)
    split = wall.lock_cpus(b, ctx)
    assert split is not None and split[0] == pytest.approx(1.2) and split[2] == pytest.approx(0.8)
    d = wall.decide(b, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "lock", d
    assert "Its work used 1.20 of 2 CPUs" in d.wall.sentence
    assert d.wall.evidence["cpu_headroom"] == pytest.approx(2 / 1.2, abs=1e-3)
    # the same writers using 1.96 CPUs while they lived (0.98 over the window): the CPUs were
    # full of their work while the lock chose who waited, and that is the wall
    ths = [
        _thread(i, wall_s=2.0, cpu=0.49, delay=0.6, user=0.05, blocked={0: 91}, t0=1.0) for i in range(1, 9)
    ]
    full = budget.compute(_doc(ths, [LOCK]), (0.0, 4.0), "test", cpus=(0.05, 0.98))
    assert full is not None and wall.lock_turns(full, ctx) > 0.0
    d = wall.decide(full, device_wall.Device(), ctx)
    assert d.wall is not None and d.wall.kind == "cpu-kernel", d


DIO_UNALIGNED = "entry_SYSCALL_64;do_syscall_64;__x64_sys_pwrite64;vfs_write;xfs_file_write_iter;" + (
    "xfs_file_dio_write_unaligned"
)
LOCK_DIO = DIO_UNALIGNED + ";xfs_ilock_iocb_for_write;xfs_ilock;down_write;rwsem_down_write_slowpath"
IO_DIO = DIO_UNALIGNED + ";iomap_dio_rw;__iomap_dio_rw"


def test_a_lock_held_across_its_holders_io_is_not_a_cpu_headroom() -> None:
    # four 512-byte direct writers of one XFS file (the corpus's `lock` case, run 13 on
    # 2026-12-03: 3.33 s waiting for I/O against 0.94 s of work, 0.95 requests in flight): the
    # holder waits for its own I/O under the lock, so the CPUs left unused carry nothing more
    waits = {0: 270, 1: 90}  # the lock's and the I/O's samples
    ths = [_thread(i, wall_s=4.0, cpu=0.25, delay=0.1, user=0.01, blocked=waits) for i in range(1, 5)]
    ctx = {"jobs": 4, "cpus": 2}
    b = budget.compute(_doc(ths, [LOCK_DIO, IO_DIO]), (0.0, 4.0), "test", cpus=(0.1, 0.5))
    assert b is not None
    one = device_wall.Device(queue_depth=0.95, await_s=111e-6, io_latency_s=268e-6, direction="write")
    d = wall.decide(b, one, ctx)
    assert d.wall is not None and d.wall.kind == "lock", d
    assert "It is held across each write's I/O: outside their waits for it, the 4 threads waited 3.29 s" in (
        d.wall.sentence
    )
    said = d.wall.sentence
    assert "(__iomap_dio_rw < xfs_file_dio_write_unaligned) against 1.00 s of work on a CPU" in said
    assert "0.9 request(s) in flight on average; each I/O took 268 us" in d.wall.sentence
    assert "would carry" not in d.wall.sentence and "cpu_headroom" not in d.wall.evidence
    assert d.wall.evidence["held_across_io"] is True
    # the same waits with each writer's I/O in flight at once (3.8 of 4): not one holder's I/O,
    # so the CPUs' headroom is said as before
    four = device_wall.Device(queue_depth=3.8, await_s=111e-6, io_latency_s=268e-6, direction="write")
    d = wall.decide(b, four, ctx)
    assert d.wall is not None and "would carry" in d.wall.sentence and "held across" not in d.wall.sentence
    # and a lock whose threads wait for I/O less than they work on a CPU: the CPUs' headroom
    waits = {0: 270, 1: 20}
    ths = [_thread(i, wall_s=4.0, cpu=0.8, delay=0.1, user=0.01, blocked=waits) for i in range(1, 5)]
    b = budget.compute(_doc(ths, [LOCK_DIO, IO_DIO]), (0.0, 4.0), "test", cpus=(0.1, 1.6))
    assert b is not None
    d = wall.decide(b, one, ctx)
    assert d.wall is not None and d.wall.kind == "lock" and "held across" not in d.wall.sentence, d


URING_WAIT = "entry_SYSCALL_64;do_syscall_64;__x64_sys_io_uring_enter;io_cqring_wait"
WQ_IDLE = "ret_from_fork_asm;ret_from_fork;io_wq_worker;schedule_timeout"


def test_idle_io_wq_workers_are_not_waiting_for_io() -> None:
    # an io_uring job (its I/O counts no read/write bytes) and three io-wq workers of its
    # process waiting for work (io_wq_worker: io-wq keeps a worker up to 5 s after its last
    # request): idle, they are left out; classified by their io_wq_ frame they were counted as
    # workers blocked for I/O, 12 s of "I/O completion" beside the job's own 4 s
    job = _thread(1, wall_s=4.0, cpu=1.0, delay=0.1, user=0.1, blocked={0: 290}, syscw=0)
    idle = [
        _thread(i, wall_s=4.0, cpu=0.001, delay=0.0, user=0.0, blocked={1: 399}, syscw=0) for i in (2, 3, 4)
    ]
    for th in idle:
        th.update(pid=1, comm="iou-wrk-1")
    b = budget.compute(_doc([job, *idle], [URING_WAIT, WQ_IDLE]), (0.0, 4.0), "test")
    assert b is not None
    assert offcpu.classify(WQ_IDLE).reason == "wait"
    assert [t.tid for t in b.threads] == [1]
    assert b.left_out == tuple(f"iou-wrk-1 ({i})" for i in (2, 3, 4))
    # the budget is the job's 4 s alone, its I/O wait its own
    assert b.wall_s == pytest.approx(4.0) and b.totals["blocked:io"] == pytest.approx(
        b.threads[0].seconds["blocked:io"]
    )
    # a worker running a request, blocked where nothing deeper says why, is the request's I/O
    assert offcpu.classify(
        WQ_IDLE.replace("schedule_timeout", "io_worker_handle_work;io_wq_submit_work")
    ).reason == ("io")


def test_a_writer_writing_back_in_fadvise_under_fio_is_told_why() -> None:
    # fio's invalidate (on by default) drops a file's pages with fadvise(DONTNEED) before each
    # pass: eight writers of a file each, ram bed, spent 53% of their time writing back there
    dev = device_wall.Device(util=0.98, queue_depth=26, await_s=1e-3, iops=20000)
    fio = _decide({0: 380}, [FADVISE], dev, ctx={"workload_fio": 1.0})
    assert fio is not None and fio.kind == "fsync", fio
    assert "in fadvise64 writing back its dirty pages" in fio.sentence
    assert "its invalidate (on by default) drops the file's pages" in fio.sentence
    assert fio.evidence["fio_invalidate"] is True
    # another workload's fadvise is its own: nothing about fio
    other = _decide({0: 380}, [FADVISE], dev)
    assert other is not None and other.kind == "fsync" and "invalidate" not in other.sentence


def test_serial_io_beside_a_lock_is_the_locks() -> None:
    # 4 threads: asleep on the lock 60%, waiting for I/O 28%, the device at 0.9 in flight
    ths = [
        _thread(i, wall_s=4.0, cpu=0.4, delay=0.08, user=0.02, blocked={0: 260, 1: 120}) for i in (1, 2, 3, 4)
    ]
    b = budget.compute(_doc(ths, [LOCK, IO]), (0.0, 4.0), "test", cpus=(0.1, 0.6))
    assert b is not None
    dev = device_wall.Device(util=0.73, queue_depth=0.9, await_s=1e-4, iops=10000)
    d = wall.decide(b, dev, {"jobs": 4, "cpus": 2})
    assert d.wall is not None and d.wall.kind == "lock", d
    (io,) = d.also
    assert io.kind == "io-latency" and "more jobs or a deeper queue" not in io.sentence
    assert "the lock's holder issues them one at a time" in io.sentence
    # alone, the same device side still says a deeper queue would move it
    alone = _decide({0: 380}, [IO], dev)
    assert alone is not None and "more jobs or a deeper queue would move it" in alone.sentence


def test_the_cost_of_each_io_is_over_the_seconds_the_counts_cover() -> None:
    # a job thread the probe saw from 1.0 s to 3.6 s of a window from 0.9 s to 3.9 s (it
    # started between two looks and exited before the next one): 2,600 calls of 16 KiB in
    # those 2.6 s are 1,000 calls a second, as fio's own count says, not 867 over the window
    from iowall.analysis.explain.cost import cost_of

    th = _thread(1, wall_s=2.6, cpu=2.6, delay=0.0, user=1.0, blocked={}, syscw=2600, t0=1.0)
    b = budget.compute(_doc([th], []), (0.9, 3.9), "test")
    assert b is not None
    assert b.window_s == pytest.approx(3.0)
    assert b.counted_s == pytest.approx(2.6)
    dev = device_wall.Device(direction="write", io_bytes=16384.0, workload_bytes_per_s=1000 * 16384.0)
    c = cost_of(b, dev)
    assert c is not None
    assert c.calls_per_s == pytest.approx(1000.0)
    assert c.ios_per_s == pytest.approx(1000.0)
    # one call is one I/O here: the CPU of each is the same, 1 ms
    assert c.cpu_us_per_call == pytest.approx(1000.0)
    assert c.cpu_us_per_io == pytest.approx(1000.0)
    assert c.cpu_ms_per_mib == pytest.approx(64.0)  # 64 I/Os of 1 ms a MiB
    # two threads seen over the same looks are counted once, not twice
    two = [th, _thread(2, wall_s=2.6, cpu=2.6, delay=0.0, user=1.0, blocked={}, syscw=2600, t0=1.0)]
    b2 = budget.compute(_doc(two, []), (0.9, 3.9), "test")
    assert b2 is not None and b2.counted_s == pytest.approx(2.6)
