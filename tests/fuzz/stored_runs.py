"""A small store for the bundle and selection fuzzers, built from iowall.model objects (nothing
measured), and a real bundle exported from it through ``iowall export``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.store import Store

from .harness import invoke


def runs() -> list[Run]:
    """Base and patched runs of two points, three repeats each, plus a failed one."""
    out = []
    for label, kernel, scale in (("base", "6.18.0", 1.0), ("patched", "6.18.0-p1", 0.8)):
        for jobs in (1, 2):
            for rep in range(3):
                bw = scale * jobs * 1e9 * (1 + 0.01 * rep)
                out.append(
                    Run(
                        point=Point("plan:fuzz", {"rw": "write", "jobs": jobs, "bs": "1M"}),
                        label=label,
                        status="ok",
                        started_at=1.7e9 + rep,
                        finished_at=1.7e9 + rep + 9,
                        metrics=(
                            Metric("write_bw_bytes_per_s", bw, "B/s"),
                            Metric("write_clat_p99_ns", 1e6 / scale, "ns", "lower"),
                        ),
                        env={
                            "kernel": kernel,
                            "commit": f"c{label}",
                            "host": {"hostname": "box", "cpu_model": "X", "cpu_count": 2},
                        },
                        bed={"kind": "ram", "fs": "xfs"},
                        artifacts=(Artifact("fio.json", "application/json", "{}"),),
                        series=(Series("cpu", "sys", "share", ((0.0, 0.5), (1.0, 0.75))),),
                        batch=f"batch-{label}",
                        repeat_index=rep,
                        notes=("ünïcode ✓",),
                    )
                )
    out.append(
        Run(
            point=Point("plan:fuzz", {"rw": "write", "jobs": 1, "bs": "1M"}),
            label="base",
            status="failed",
            started_at=1.7e9,
            finished_at=1.7e9,
            error="fio died",
            batch="batch-base",
        )
    )
    return out


def build(db: Path) -> str:
    """A store at ``db`` holding ``runs()``; its URL."""
    url = f"sqlite:///{db}"
    Store(url).add_runs(runs())
    return url


def export(url: str, path: Path, *, packed: bool = False) -> dict[str, Any]:
    """The store's runs exported by ``iowall export`` (``--packed``) to ``path``; the bundle
    document."""
    o = invoke(["export", "-o", str(path), "--db", url, *(["--packed"] if packed else [])])
    assert o.rc == 0, o
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc
