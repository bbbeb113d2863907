"""The threadstate probe's look at one thread: a thread found off its CPU that has not
arrived on one since (schedstat's third field unchanged) keeps its stack without a read;
one found running is always read again (it may have left the CPU without a new arrival);
one off its CPU in state R is runnable, its stack kept with the leaf RUNNABLE."""

from __future__ import annotations

import os
from pathlib import Path

from iowall.analysis.explain import offcpu
from iowall.probes.base import ProbeContext
from iowall.probes.threadstate import RUNNABLE, ThreadStateProbe, _Thread

A = b"[<0>] xlog_wait_on_iclog+0x1/0x2\n[<0>] xfs_file_fsync+0x1/0x2\n"
B = b"[<0>] io_schedule+0x1/0x2\n[<0>] folio_wait_bit+0x1/0x2\n"


def _files(tmp: Path) -> tuple[_Thread, dict[str, Path]]:
    paths = {n: tmp / n for n in ("schedstat", "stack", "stat")}
    for p in paths.values():
        p.write_bytes(b"")
    fds = {n: os.open(p, os.O_RDONLY) for n, p in paths.items()}
    return _Thread(1, 1, "fio", 0, fds), paths


def _look(
    probe: ThreadStateProbe,
    th: _Thread,
    paths: dict[str, Path],
    pcount: int,
    stack: bytes,
    state: bytes = b"D",
) -> None:
    paths["schedstat"].write_bytes(b"100 20 %d\n" % pcount)
    paths["stack"].write_bytes(stack)
    paths["stat"].write_bytes(b"1 (fio (x)) %s 0 1 1 0 -1\n" % state)
    probe._sample(th)


def test_a_thread_that_has_not_run_keeps_its_stack(tmp_path: Path) -> None:
    probe = ThreadStateProbe(ProbeContext())
    th, paths = _files(tmp_path)
    try:
        _look(probe, th, paths, 5, A)
        _look(probe, th, paths, 5, B)  # not on a CPU since: still in A, the file not read
        _look(probe, th, paths, 6, B)  # it ran: read again
        _look(probe, th, paths, 7, b"")  # running
        _look(probe, th, paths, 7, A)  # left the CPU without a new arrival: read again
    finally:
        th.close()
    names = {sid: s.split(";")[-1] for s, sid in probe._stacks.items()}
    counts = {names[sid]: n for (_, sid), n in th.blocked.items()}
    assert counts == {"xlog_wait_on_iclog": 3, "io_schedule": 1}
    assert th.samples == 5 and th.running == 1


def test_a_runnable_thread_off_its_cpu_is_not_blocked(tmp_path: Path) -> None:
    """Preempted in cond_resched (which /proc/TID/stack leaves out: only its caller shows),
    then blocked, then woken and waiting for a CPU without having run since: the looks in
    state R carry the RUNNABLE leaf, which the analysis counts with the running ones."""
    probe = ThreadStateProbe(ProbeContext())
    th, paths = _files(tmp_path)
    caller = b"[<0>] iomap_file_buffered_write+0x1/0x2\n[<0>] vfs_write+0x1/0x2\n"
    try:
        _look(probe, th, paths, 5, caller, b"R")
        _look(probe, th, paths, 6, A, b"D")
        _look(probe, th, paths, 6, A, b"R")  # woken, not yet on a CPU: the same stack, runnable
    finally:
        th.close()
    stacks = {sid: s for s, sid in probe._stacks.items()}
    got = sorted((stacks[sid], n) for (_, sid), n in th.blocked.items())
    assert got == [
        ("vfs_write;iomap_file_buffered_write;" + RUNNABLE, 1),
        ("xfs_file_fsync;xlog_wait_on_iclog", 1),
        ("xfs_file_fsync;xlog_wait_on_iclog;" + RUNNABLE, 1),
    ]
    reasons = [offcpu.classify(s).reason for s, _ in got]
    assert reasons[0] == reasons[2] == offcpu.PREEMPTED != reasons[1]
