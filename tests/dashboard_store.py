"""A store for the dashboard's fast tests, built in a second without measuring: a `limits`
batch (memory copy at 1 and 2 threads; write and read at 1, 2 and 4 jobs in the three modes,
three runs each) summarised and reported by the real `limits` code, with fio and cpu series
on different time ranges and a real CPU profile (tests/fixtures/profile); a `trend` series
with a 30% step; and hostile runs: a label that is a script, a point value that is a link,
a 5,000-character value. ``served`` runs the dashboard of a store in a thread."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from iowall.analysis.scaling.limits import summarise
from iowall.cli.serve import bound_socket
from iowall.model import PROFILE_ARTIFACT, Artifact, Metric, Point, Run, Series
from iowall.probes.profile import encode_folded
from iowall.recipes.limits.report import LimitsContext, limits_report
from iowall.store import RunFilter, Store
from iowall.store.reports import add_report
from iowall.web.app import create_app
from iowall.web.guard import HostNames

GIB = float(1 << 30)
XSS = "<script>alert(1)</script>"
LINK = '<a href="http://example.invalid/">X</a>'
LONG = "v" * 5000
#: Medians (GiB/s) of the limits batch per (direction, mode) at 1, 2 and 4 jobs: buffered
#: write stops at 2.6 (the wall), direct goes on.
WALL = {
    ("write", "buffered"): (2.1, 2.6, 2.6),
    ("write", "uncached"): (3.0, 4.4, 4.9),
    ("write", "direct"): (4.0, 6.5, 7.1),
    ("read", "buffered"): (5.5, 8.8, 9.6),
    ("read", "uncached"): (5.0, 8.1, 8.9),
    ("read", "direct"): (6.9, 11.0, 12.2),
}
MEMCOPY = {1: 14.0, 2: 24.0}
JOBS = (1, 2, 4)
PROFILE = Path(__file__).parent / "fixtures" / "profile" / "xfs_buffered_write.folded"
HOST = {"hostname": "box", "cpu_model": "Test CPU", "cpu_count": 2, "mem_total_bytes": 8 * (1 << 30)}


@dataclass(frozen=True)
class Made:
    """What the store holds, by role: ids of the limits runs per (direction, mode, jobs),
    the batch, the trend runs, the hostile runs."""

    url: str
    batch: str
    limits: dict[tuple[str, str, int], list[int]]
    memcopy: list[int]
    trend: list[int]
    hostile: dict[str, int]


def _profile() -> str:
    stacks: dict[str, int] = {}
    for line in PROFILE.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            stacks[stack] = stacks.get(stack, 0) + int(n)
    return encode_folded(stacks)


def _series(bw: float, start: float, n: int, probe: str, name: str, unit: str, dt: float = 0.1) -> Series:
    return Series(
        probe, name, unit, tuple((round(start + i * dt, 3), bw * (1 + 0.05 * math.sin(i))) for i in range(n))
    )


def _io_run(
    direction: str, mode: str, jobs: int, value: float, t0: float, batch: str, rep: int, profile: str
) -> Run:
    params: dict[str, Any] = {
        "kind": "fio",
        "rw": direction,
        "direct": int(mode == "direct"),
        "jobs": jobs,
        "bs": "2M",
        "ioengine": "pvsync2",
        "end_fsync": int(direction == "write" and mode != "direct"),
    }
    if mode == "uncached":
        params["uncached"] = 1
    bw = value * GIB
    metrics = (
        Metric("cpu_sys_share", 0.5 + 0.1 * jobs, "share", "lower"),
        Metric(f"{direction}_bw_bytes_per_s", bw, "B/s"),
        Metric("wall_s", 4.0 / value, "s", "lower"),
        Metric(f"{direction}_lat_p99_ns", 9e5 / value, "ns", "lower"),
    )
    # fio's samples start 0.97 s into the run, the cpu probe's at 1.0 s: different ranges
    series = (
        _series(bw, 0.97, 7, "fio", f"{direction}_bw", "B/s"),
        _series(0.6, 1.0, 14, "cpu", "sys", "share"),
        _series(1 << 28, 0.9, 12, "meminfo", "Dirty", "B"),
    )
    arts = (
        Artifact(PROFILE_ARTIFACT, "application/gzip", profile),
        Artifact("fio.json", "application/json", '{"jobs": []}'),
    )
    return Run(
        Point("limits", params),
        "limits",
        "ok",
        t0,
        t0 + 4.0,
        metrics,
        env={"kernel": "6.18.44", "host": HOST, "commit": "v1"},
        bed={"kind": "ram", "fs": "xfs"},
        artifacts=arts,
        series=series,
        batch=batch,
        repeat_index=rep,
    )


def build(path: Path) -> Made:
    """The store at ``path`` (SQLite), filled as the module says."""
    url = f"sqlite:///{path}"
    st = Store(url)
    batch, t0, profile = "5ca1ab1e0000", 1_790_000_000.0, _profile()
    runs: list[tuple[tuple[str, str, int] | None, Run]] = []
    for threads, gib in MEMCOPY.items():
        for rep in range(3):
            runs.append(
                (
                    None,
                    Run(
                        Point("limits", {"kind": "memcopy", "threads": threads}),
                        "limits",
                        "ok",
                        t0,
                        t0 + 1,
                        (Metric("memcopy_bytes_per_s", gib * GIB * (1 + 0.01 * rep), "B/s"),),
                        env={"kernel": "6.18.44", "host": HOST},
                        batch=batch,
                        repeat_index=rep,
                    ),
                )
            )
            t0 += 2
    for rep in range(3):
        for (direction, mode), values in WALL.items():
            for j, v in zip(JOBS, values, strict=True):
                spread = 1 + 0.04 * (rep - 1) * (2 if (mode, j) == ("buffered", 4) else 1)
                runs.append(
                    ((direction, mode, j), _io_run(direction, mode, j, v * spread, t0, batch, rep, profile))
                )
                t0 += 5
    ids = st.add_runs([r for _, r in runs])
    limits: dict[tuple[str, str, int], list[int]] = {}
    memcopy: list[int] = []
    for (key, _), rid in zip(runs, ids, strict=True):
        (memcopy if key is None else limits.setdefault(key, [])).append(rid)
    stored = st.runs(RunFilter(batch=batch))
    summary = summarise(stored, cpus=2)
    add_report(
        st,
        limits_report(
            summary,
            LimitsContext(
                bed={"kind": "ram", "fs": "xfs"},
                host=HOST,
                kernel="6.18.44",
                fio_version="fio-3.41",
                batch=batch,
                label="limits",
            ),
        ),
    )
    real = st.get_run(limits[("write", "buffered", 2)][0])
    trend = st.add_runs(
        [
            dataclasses.replace(
                real,
                id=None,
                uuid=None,
                label="trend",
                batch="7e4d0000",
                env={**real.env, "commit": f"c{i // 2}"},
                metrics=tuple(
                    Metric(
                        m.name, m.value * (1.0 if i < 8 else 0.7) * (1 + 0.01 * (i % 3)), m.unit, m.direction
                    )
                    if m.name == "write_bw_bytes_per_s"
                    else m
                    for m in real.metrics
                ),
                started_at=t0 + 100 * i,
                finished_at=t0 + 100 * i + 4,
            )
            for i in range(16)
        ]
    )
    hostile = {}
    for name, label, extra in (
        ("script", XSS, {}),
        ("link", "hostile", {"note": LINK}),
        ("link2", "hostile", {"note": LINK}),
        ("long", "hostile", {"note": LONG}),
    ):
        p = dict(real.point.params, **extra)
        (rid,) = st.add_runs(
            [
                dataclasses.replace(
                    real,
                    id=None,
                    uuid=None,
                    label=label,
                    point=Point("limits", p),
                    batch="",
                    started_at=t0 + 5000 + len(hostile),
                    finished_at=t0 + 5004 + len(hostile),
                    series=tuple(
                        dataclasses.replace(s, name=LINK) if s.probe == "cpu" else s for s in real.series
                    ),
                )
            ]
        )
        hostile[name] = rid
    return Made(url, batch, limits, memcopy, trend, hostile)


@contextmanager
def served(store: Store, hosts: HostNames | None = None) -> Iterator[int]:
    """The dashboard of ``store`` on 127.0.0.1 (a free port) while the caller holds it."""
    sock = bound_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(store, hosts), log_level="warning", access_log=False))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        t.join(timeout=20)
        sock.close()
