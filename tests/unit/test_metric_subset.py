"""Loading only the metrics a compare or a history reads (a run carries 136; the dashboard's
compare and history pages load 1,000 runs): the subset must give the very result the whole
run gives. ``selectable`` keeps what ``select_metrics`` can choose, ``needed`` what
``from_runs`` reads, and the store loads only the names its test keeps."""

from __future__ import annotations

import dataclasses

import pytest

from iowall.analysis.regress.compare import HEADLINE, select_metrics, selectable
from iowall.analysis.regress.history import needed
from iowall.model import Metric, Point, Run, primary_metric
from iowall.store import RunFilter, Store

#: Names as runs carry them: fio's, the probes', the engine's, per-instance ones.
NAMES = [
    "read_bw_bytes_per_s",
    "write_bw_bytes_per_s",
    "write_iops",
    "write_clat_p99_s",
    "write_clat_mean_s",
    "inst1_write_bw_bytes_per_s",
    "inst0_write_bw_bytes_per_s",
    "create_files_per_s",
    "unlink_files_per_s",
    "files_per_s",
    "memcopy_bytes_per_s",
    "fio_wall_s",
    "disk_vda_iops",
    "disk_util",
    "cpu_sys_share",
    "tasks_workload_cpu_s",
    "threadstate_threads",
]


@pytest.mark.parametrize(
    "patterns", [None, ["all"], ["write_*"], ["*_iops", "disk_util"], ["nothing*"], ["*files_per_s"]]
)
def test_selectable_keeps_what_select_metrics_chooses(patterns: list[str] | None) -> None:
    keep = selectable(patterns)
    kept = NAMES if keep is None else [n for n in NAMES if keep(n)]
    assert select_metrics(kept, patterns) == select_metrics(NAMES, patterns)
    if patterns is None:  # the point of it: the probes' metrics are not loaded
        assert keep is not None and not keep("cpu_sys_share") and not keep("disk_vda_iops")
        assert all(any(n.endswith(h.lstrip("*")) for h in HEADLINE) for n in kept)


def _run(names: list[str]) -> Run:
    return Run(
        point=Point("p", {"rw": "write"}),
        label="x",
        status="ok",
        started_at=1.0,
        finished_at=2.0,
        metrics=tuple(Metric(n, float(i + 1), "u") for i, n in enumerate(names)),
    )


@pytest.mark.parametrize(
    "names",
    [
        NAMES,
        NAMES[2:],  # no fio read/write bandwidth: a per-instance one
        [n for n in NAMES if "bw" not in n],  # the memory-copy rate
        [n for n in NAMES if "bw" not in n and "memcopy" not in n],  # the engine's files/s
        ["cpu_sys_share", "disk_util"],  # none
    ],
)
def test_needed_keeps_the_primary_metric(names: list[str]) -> None:
    run = _run(names)
    keep = needed(None)
    part = dataclasses.replace(run, metrics=tuple(m for m in run.metrics if keep(m.name)))
    assert primary_metric(part) == primary_metric(run)
    assert needed("disk_util")("disk_util") and not needed("disk_util")("write_iops")


def test_the_store_loads_only_the_metrics_kept(store_url: str) -> None:
    s = Store(store_url)
    s.add_run(_run(NAMES))
    whole = s.runs(RunFilter())[0]
    part = s.runs(RunFilter(), metrics=needed(None))[0]
    assert len(whole.metrics) == len(NAMES)
    assert [m.name for m in part.metrics] == sorted(n for n in NAMES if needed(None)(n))
    assert primary_metric(part) == primary_metric(whole)
    assert dataclasses.replace(part, metrics=whole.metrics) == whole  # the rest is the same
