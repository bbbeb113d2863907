"""Real fio output made by the suite: small job files with several groups, run to json or
json+, and fio servers on loopback addresses driven by ``fio --client``."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

#: Job files ({dir} is where they write): groups with group_reporting, per-job groups.
JOBS = {
    "grouped": """\
[global]
directory={dir}
size=4m
bs=4k
ioengine=psync
numjobs=2
group_reporting

[seqwrite]
rw=write

[seqread]
stonewall
rw=read

[randread]
stonewall
rw=randread
""",
    "perjob": """\
[global]
directory={dir}
size=2m
ioengine=psync

[w64k]
rw=write
bs=64k

[w4k]
rw=randwrite
bs=4k

[mixed]
new_group
rw=randrw
rwmixwrite=30
bs=8k
numjobs=2
""",
}


def job_file(tmp: Path, name: str, sub: str = "") -> Path:
    """The job file ``name`` written in ``tmp``, its I/O in ``tmp/data[sub]``."""
    data = tmp / f"data{sub}"
    data.mkdir(exist_ok=True)
    path = tmp / f"{name}{sub}.fio"
    path.write_text(JOBS[name].format(dir=data))
    return path


def run_fio(job: Path, fmt: str = "json") -> bytes:
    """fio's stdout for ``job`` with ``--output-format=fmt``."""
    cp = subprocess.run(
        ["fio", f"--output-format={fmt}", str(job)], capture_output=True, timeout=300, check=True
    )
    return cp.stdout


def _free_port(addr: str) -> int:
    with socket.socket() as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def fio_servers(addrs: Sequence[str]) -> Iterator[list[tuple[str, int]]]:
    """``fio --server`` on each loopback address (a free port each), killed at the end."""
    procs: list[subprocess.Popen[bytes]] = []
    ends: list[tuple[str, int]] = []
    try:
        for a in addrs:
            port = _free_port(a)
            procs.append(
                subprocess.Popen(
                    ["fio", f"--server=ip:{a},{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
            ends.append((a, port))
        for a, port in ends:
            deadline = time.monotonic() + 10
            while True:
                with socket.socket() as s:
                    if s.connect_ex((a, port)) == 0:
                        break
                assert time.monotonic() < deadline, f"fio --server on {a}:{port} never listened"
                time.sleep(0.05)
        yield ends
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)


def run_clients(ends: Sequence[tuple[str, int]], jobs: Sequence[Path], fmt: str = "json") -> bytes:
    """``fio --client`` output for one job file per server (text before the JSON included)."""
    argv = ["fio", f"--output-format={fmt}"]
    for (a, port), job in zip(ends, jobs, strict=True):
        argv += [f"--client={a},{port}", str(job)]
    return subprocess.run(argv, capture_output=True, timeout=300, check=True).stdout
