"""Deterministic synthetic run sets for the compare tests and their golden files."""

from __future__ import annotations

import random
from typing import Any

from iowall.model import Metric, Point, Run

HOST = {
    "hostname": "testbox",
    "cpu_model": "Test CPU",
    "cpu_count": 2,
    "mem_total_bytes": 24 << 30,
    "arch": "x86_64",
}
BED = {
    "kind": "ram",
    "fs": "xfs",
    "mkfs_opts": "",
    "mount_opts": "",
    "backing": "tmpfs:/dev/shm",
    "block_size": 4096,
    "image_bytes": 6 << 30,
}


def env(
    kernel: str = "6.18.44", dirty_bytes: str = "0", host: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "host": dict(host or HOST),
        "kernel": kernel,
        "fio_version": "3.33",
        "sysctls": {"vm.dirty_bytes": dirty_bytes, "vm.dirty_ratio": "20"},
        "thp": "always",
    }


def runs(
    label: str,
    *,
    scale: dict[str, float] | None = None,
    n: int = 5,
    seed: int = 1,
    cv: float = 0.03,
    kernel: str = "6.18.44",
    dirty_bytes: str = "0",
    params: dict[str, Any] | None = None,
    bed: dict[str, Any] | None = None,
    start_id: int = 1,
    jobs: tuple[int, ...] = (1, 2),
) -> list[Run]:
    """``n`` runs of buffered and direct writes at each job count; ``scale`` multiplies the
    true bandwidth of a point (``"0"``: buffered, ``"1"``: direct) for this side."""
    rng = random.Random(seed)
    out = []
    i = start_id
    for rep in range(n):
        for direct in (0, 1):
            for j in jobs:
                true = (900.0 if direct else 1400.0) * (1 << 20) * (1 + 0.6 * (j - 1))
                true *= (scale or {}).get(str(direct), 1.0)
                bw = true * (1 + rng.gauss(0, cv))
                p99 = 2e-3 * (1 << 20) * 1400 / bw * (1 + rng.gauss(0, cv))
                pt = Point(
                    "buffered-wall",
                    {"rw": "write", "bs": "2m", "direct": direct, "jobs": j, **(params or {})},
                )
                out.append(
                    Run(
                        point=pt,
                        label=label,
                        status="ok",
                        started_at=1e9 + i,
                        finished_at=1e9 + i + 10,
                        id=i,
                        repeat_index=rep,
                        env=env(kernel, dirty_bytes),
                        bed=dict(bed or BED),
                        metrics=(
                            Metric("write_bw_bytes_per_s", bw, "B/s"),
                            Metric("write_iops", bw / (2 << 20), "IO/s"),
                            Metric("write_clat_p99_s", p99, "s", "lower"),
                            Metric("cpu_sys_share", 0.5, "share", "lower"),
                        ),
                    )
                )
                i += 1
    return out
