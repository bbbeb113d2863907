"""The threadstate probe's look at one thread: a thread found off its CPU that has not
arrived on one since (schedstat's third field unchanged) keeps its stack without a read;
one found running is always read again (it may have left the CPU without a new arrival)."""

from __future__ import annotations

import os
from pathlib import Path

from iowall.probes.base import ProbeContext
from iowall.probes.threadstate import ThreadStateProbe, _Thread

A = b"[<0>] xlog_wait_on_iclog+0x1/0x2\n[<0>] xfs_file_fsync+0x1/0x2\n"
B = b"[<0>] io_schedule+0x1/0x2\n[<0>] folio_wait_bit+0x1/0x2\n"


def _files(tmp: Path) -> tuple[_Thread, dict[str, Path]]:
    paths = {n: tmp / n for n in ("schedstat", "stack")}
    for p in paths.values():
        p.write_bytes(b"")
    fds = {n: os.open(p, os.O_RDONLY) for n, p in paths.items()}
    return _Thread(1, 1, "fio", 0, fds), paths


def _look(probe: ThreadStateProbe, th: _Thread, paths: dict[str, Path], pcount: int, stack: bytes) -> None:
    paths["schedstat"].write_bytes(b"100 20 %d\n" % pcount)
    paths["stack"].write_bytes(stack)
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
