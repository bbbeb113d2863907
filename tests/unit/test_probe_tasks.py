"""The ``tasks`` probe's pure parts: which class a thread is in, and how CPU time is summed
when threads start, exit and are reaped during a point."""

from __future__ import annotations

import pytest

from iowall.probes.tasks import Snapshot, attribute, classify, reaped_by_others, summarize, top_threads

DEV, DEVNO = ("loop3",), ("7:3",)


@pytest.mark.parametrize(
    ("comm", "kthread", "workload", "self_", "cls"),
    [
        ("fio", False, True, False, "workload"),
        ("iou-wrk-1234", False, True, False, "io_uring"),
        ("iou-sqp-99", False, True, False, "io_uring"),
        ("kworker/u8:4+iou_exit", True, False, False, "io_uring"),
        ("python", False, False, True, "iowall"),
        ("perf", False, True, False, "iowall"),
        ("rustc", False, False, False, "neighbours"),
        ("kswapd0", True, False, False, "kswapd"),
        ("kworker/u8:1+flush-7:3", True, False, False, "flusher"),
        ("kworker/u8:1-flush-7:30", True, False, False, "kthreads"),
        ("kworker/u5:0-loop3", True, False, False, "loop"),
        ("kworker/u5:0-loop31", True, False, False, "kthreads"),
        ("xfsaild/loop3", True, False, False, "fs"),
        ("kworker/0:1-xfs-conv/loop3", True, False, False, "fs"),
        # the direct-I/O completion workqueue of the bed's filesystem (unwritten conversions)
        ("kworker/1:17-dio/loop3", True, False, False, "fs"),
        ("kworker/0:19+dio/loop3", True, False, False, "fs"),
        ("kworker/0:1-dio_thing", True, False, False, "kthreads"),
        ("jbd2/loop3-8", True, False, False, "fs"),
        ("btrfs-transaction", True, False, False, "fs"),
        ("ksoftirqd/0", True, False, False, "kthreads"),
    ],
)
def test_classify(comm: str, kthread: bool, workload: bool, self_: bool, cls: str) -> None:
    assert classify(comm, kthread=kthread, workload=workload, self_=self_, devices=DEV, devnos=DEVNO) == cls


def snap(
    threads: dict[tuple[int, int], tuple[str, float, str]],
    busy_ticks: int,
    reaped_s: float = 0.0,
    steal: int = 0,
    self_pid: int = -1,
    others: dict[int, tuple[float, ...]] | None = None,
) -> Snapshot:
    """A snapshot with CPU times in seconds and /proc/stat ticks (USER_HZ 100 assumed by
    the numbers: the test converts through CLK_TCK)."""
    from iowall.probes.sampling import CLK_TCK

    t = {k: (c, int(s * 1e9), cls) for k, (c, s, cls) in threads.items()}
    ticks = int(busy_ticks * CLK_TCK / 100)
    stat = {"cpu": (ticks, 0, 0, 1000, 0, 0, 0, int(steal * CLK_TCK / 100))}
    o = {
        pid: (int(v[0]), int(v[1] * 1e9), int((v[2] if len(v) > 2 else 0.0) * 1e9))
        for pid, v in (others or {}).items()
    }
    return Snapshot(t, stat, int(reaped_s * 1e9), self_pid, o)


def test_attribution_counts_exits_once_and_reaped_children() -> None:
    a = snap({(1, 1): ("rustc", 10.0, "neighbours"), (2, 2): ("kswapd0", 1.0, "kswapd")}, 0)
    # during the point: fio (pid 10) starts with an io_uring worker, neighbours run on
    b = snap(
        {
            (1, 1): ("rustc", 10.5, "neighbours"),
            (2, 2): ("kswapd0", 1.25, "kswapd"),
            (10, 10): ("fio", 0.75, "workload"),
            (10, 11): ("iou-wrk-10", 0.25, "io_uring"),
        },
        150,
    )
    # at the end fio has exited and was reaped: its total (fio 1.0 + worker 0.5) is reaped
    c = snap(
        {(1, 1): ("rustc", 11.0, "neighbours"), (2, 2): ("kswapd0", 1.5, "kswapd")},
        300,
        reaped_s=1.5,
        steal=20,
    )
    cpu = attribute([(0.0, a), (1.0, b), (2.0, c)])
    assert cpu["neighbours"] == pytest.approx(1.0)
    assert cpu["kswapd"] == pytest.approx(0.5)
    assert cpu["io_uring"] == pytest.approx(0.25)  # as last seen: at most an interval lost
    assert cpu["workload"] == pytest.approx(1.25)  # reaped 1.5 less the worker's 0.25
    assert cpu["steal"] == pytest.approx(0.2)
    assert cpu["busy"] == pytest.approx(3.2)
    assert cpu["unattributed"] == pytest.approx(3.2 - 1.0 - 0.5 - 0.25 - 1.25 - 0.2)


def test_reaped_tools_and_time_before_the_point_are_not_the_workloads() -> None:
    """perf (a probe's tool, class iowall) is stopped and reaped before the last look: its whole
    life lands in the reaped time too, and must not be counted again as the workload's. A
    child seen at the first look had run before the point: that time is outside it."""
    me = 99
    a = snap(
        {
            (10, 10): ("fio", 0.5, "workload"),
            (20, 20): ("perf", 0.1, "iowall"),
            (me, 100): ("probe", 1.0, "iowall"),
        },
        0,
        self_pid=me,
    )
    b = snap(
        {
            (10, 10): ("fio", 0.75, "workload"),
            (20, 20): ("perf", 0.3, "iowall"),
            (me, 100): ("probe", 1.5, "iowall"),
        },
        100,
        self_pid=me,
    )
    # fio (1.0 in all) and perf (0.3) exited and were reaped; the probe's own thread ended too
    c = snap({}, 200, reaped_s=1.3, self_pid=me)
    cpu = attribute([(0.0, a), (1.0, b), (2.0, c)])
    assert cpu["iowall"] == pytest.approx(0.2 + 0.5)  # perf and the probe thread, as seen
    assert cpu["workload"] == pytest.approx(0.25 + 0.25)  # seen, then its last interval
    assert cpu["busy"] == pytest.approx(2.0)
    assert cpu["unattributed"] == pytest.approx(2.0 - 0.7 - 0.5)


def test_other_processes_short_lived_children_are_neighbours_once() -> None:
    """A build beside the point: make (pid 5) runs compilers shorter than one interval. cc1
    (pid 6) was seen once with 0.2 s (run before the point), exits having run 0.5 s in all;
    another (pid 7) starts and ends between two looks with 0.4 s. make reaps both: 0.9 s.
    The neighbours' share is what ran in the point (0.3 + 0.4), not unattributed; a usermode
    helper under kthreadd (pid 2, not a user process) keeps what was seen of it, nothing
    taken out, and a process first seen with reaped time counts it all (it began in the point)."""
    a = snap(
        {
            (5, 5): ("make", 1.0, "neighbours"),
            (6, 6): ("cc1", 0.2, "neighbours"),
            (8, 8): ("modprobe", 0.1, "neighbours"),
        },
        0,
        others={5: (1, 3.0), 6: (5, 0.0), 8: (2, 0.0), 1: (0, 0.0)},
    )
    b = snap({(5, 5): ("make", 1.0, "neighbours")}, 100, others={5: (1, 3.9), 1: (0, 0.0), 9: (1, 0.25)})
    cpu = attribute([(0.0, a), (1.0, b)])
    assert cpu["neighbours"] == pytest.approx(0.3 + 0.4 + 0.25)
    assert cpu["unattributed"] == pytest.approx(1.0 - 0.95)


def test_a_neighbours_exited_thread_is_counted_once() -> None:
    """A neighbour's child (pid 20, under a shell, pid 10) with two threads: the second
    exits between two looks having run 1.5 s, of which 1.0 s was seen; the process then
    exits with 2.5 s on its first thread, of which 2.0 s was seen. The shell reaps 4.0 s:
    the neighbours' time is what ran in the point, 4.0 s, the 1.0 s seen of the exited
    thread counted once (it was counted twice: 5.0 s)."""
    sh = {(10, 10): ("sh", 0.0, "neighbours")}
    kids = {10: (1, 0.0), 20: (10, 0.0), 1: (0, 0.0)}
    a = snap(
        {**sh, (20, 20): ("worker", 0.0, "neighbours"), (20, 21): ("worker", 0.0, "neighbours")},
        0,
        others=kids,
    )
    b = snap(
        {**sh, (20, 20): ("worker", 1.0, "neighbours"), (20, 21): ("worker", 1.0, "neighbours")},
        100,
        others=kids,
    )
    c = snap({**sh, (20, 20): ("worker", 2.0, "neighbours")}, 200, others=kids)
    d = snap(sh, 400, others={10: (1, 4.0), 1: (0, 0.0)})
    cpu = attribute([(0.0, a), (1.0, b), (2.0, c), (3.0, d)])
    assert cpu["neighbours"] == pytest.approx(4.0)
    assert reaped_by_others([(0.0, a), (1.0, b), (2.0, c), (3.0, d)]) == {10: int(1.0e9)}


def test_a_neighbours_thread_gone_before_the_point_is_not_the_points() -> None:
    """A child (pid 20, under a shell, pid 10) at the first look has run 3.0 s: 1.0 on the
    thread seen then, 2.0 on a thread already gone. It runs 0.5 s more and exits; the shell
    reaps its 3.5 s. Only the 0.5 s ran in the point (2.5 s were counted before)."""
    sh = {(10, 10): ("sh", 0.0, "neighbours")}
    a = snap(
        {**sh, (20, 20): ("worker", 1.0, "neighbours")},
        0,
        others={10: (1, 0.0), 20: (10, 0.0, 3.0), 1: (0, 0.0)},
    )
    b = snap(
        {**sh, (20, 20): ("worker", 1.25, "neighbours")},
        100,
        others={10: (1, 0.0), 20: (10, 0.0, 3.25), 1: (0, 0.0)},
    )
    c = snap(sh, 200, others={10: (1, 3.5), 1: (0, 0.0)})
    assert attribute([(0.0, a), (1.0, b), (2.0, c)])["neighbours"] == pytest.approx(0.5)


def test_summary_metrics_and_top_threads() -> None:
    a = snap({(1, 1): ("fio", 0.0, "workload")}, 0)
    b = snap({(1, 1): ("fio", 1.0, "workload"), (5, 5): ("yes", 0.5, "neighbours")}, 150)
    series, metrics = summarize([(0.0, a), (1.0, b)])
    m = {x.name: x.value for x in metrics}
    assert m["tasks_workload_share"] == pytest.approx(1.0 / 1.5)
    assert m["tasks_neighbours_share"] == pytest.approx(0.5 / 1.5)
    assert m["tasks_unattributed_share"] == pytest.approx(0.0)
    assert {s.name for s in series} == {"workload_cpus", "neighbours_cpus"}
    assert top_threads([(0.0, a), (1.0, b)])[0] == ("workload", "fio", 1.0)
    assert summarize([(0.0, a)]) == ([], [])
