"""The Why section of recipe and plan reports: explain on each point's median run, on probe
metrics recorded from a real throttled run (tests/fixtures/probes/runs)."""

from __future__ import annotations

import json
from pathlib import Path

from iowall.analysis.explain.run import explain_points
from iowall.model import Metric, Point, Run, Series
from iowall.model import primary_metric as primary
from iowall.report.why import why_lines


def primary_metric(run: Run) -> str | None:
    """The name of the primary metric, as the assertions read it."""
    m = primary(run)
    return m.name if m is not None else None


RUNS = Path(__file__).parents[1] / "fixtures" / "probes" / "runs"
HOST = {"hostname": "t", "cpu_model": "c", "cpu_count": 2, "mem_total_bytes": 1 << 34}


def _run(
    rid: int, params: dict, metrics: dict[str, float], *, probed: bool = True, notes: tuple[str, ...] = ()
) -> Run:
    return Run(
        point=Point("buffered-wall", params),
        label="x",
        status="ok",
        started_at=0.0,
        finished_at=6.0,
        id=rid,
        env={"host": HOST},
        metrics=tuple(Metric(k, v, "") for k, v in metrics.items()),
        series=(Series("cpu", "sys", "share", ((1.0, 0.5),)),) if probed else (),
        notes=notes,
    )


def test_median_run_of_each_probed_point_is_explained() -> None:
    rec = json.loads((RUNS / "buffered_throttled.json").read_text())
    m, ctx = rec["metrics"], rec["context"]
    pt = {"rw": "write", "direct": 0, "jobs": ctx["jobs"]}
    runs = [
        _run(
            i,
            pt,
            {
                **m,
                "write_bw_bytes_per_s": ctx["throughput_bytes_per_s"] * f,
                "write_runtime_s": ctx["wall_s"],
            },
        )
        for i, f in ((1, 1.1), (2, 0.9), (3, 1.0))
    ]
    quiet = _run(
        4,
        {"rw": "write", "direct": 1, "jobs": 2},
        {"write_bw_bytes_per_s": 1e9, "write_runtime_s": 5.0},
        notes=("probe throttle skipped: no tracefs",),
    )
    ceiling = _run(5, {"kind": "memcopy", "threads": 2}, {"memcopy_bytes_per_s": 2e10}, probed=False)
    found = explain_points(runs + [quiet, ceiling])
    assert [e.run for e in found] == [3, 4]  # median run; memcopy not probed
    assert found[0].verdicts[0].rule == "writers-throttled"
    assert not found[1].fired and found[1].skipped_probes[0].probe == "throttle"
    items = [e.to_json() for e in found]  # a report's Why, as reports keep it
    text = "\n".join(why_lines(items))
    assert "Writers throttled" in text and "direct=1 jobs=2 rw=write (run 4):" in text
    assert "no rule fired; nearest: " in text
    assert "probes skipped: throttle (no tracefs)" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert why_lines([]) == []


def test_primary_metric_is_fio_bandwidth_then_rates() -> None:
    r = _run(1, {}, {"write_bw_bytes_per_s": 2.0, "cpu_sys_share": 1.0})
    assert primary_metric(r) == "write_bw_bytes_per_s"
    assert primary_metric(_run(2, {}, {"files_per_s": 3.0, "disk_x_per_s": 1.0})) == "files_per_s"
    assert primary_metric(_run(3, {}, {"create_files_per_s": 3.0})) == "create_files_per_s"
    assert primary_metric(_run(4, {}, {"cpus": 2.0})) is None
