"""The text of the measurement reports against golden files, as for compare and scaling: limits,
run (a plan's report), gate and history of stored runs, and the tables of import-fio and fleet
run (golden files: regenerate with IOWALL_UPDATE_GOLDEN=1 after a deliberate change, and
review the diff)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from iowall.analysis.regress.compare import Side, compare
from iowall.analysis.regress.gate import Explanation, GateReport, Shift, decide
from iowall.analysis.regress.history import from_runs
from iowall.analysis.scaling.limits import summarise
from iowall.model import Metric, Run
from iowall.plan import load_plan, plan_report
from iowall.plan.execute import PlanResult
from iowall.recipes.limits.report import LimitsContext, limits_report
from iowall.report.emit import render
from iowall.report.fleet import Hosts
from iowall.report.history import history_report
from iowall.report.run import Imported
from iowall.results import FAILED, IMPORTED, HostState
from iowall.vocab.units import GIB, KIB, MIB
from iowall.workloads.fio_import import read_runs

from .test_compare import golden, two_sides
from .test_generators_why import disagreeing_runs
from .test_history import _runs as history_runs
from .test_limits_analysis import _point_runs
from .test_limits_analysis import _runs as limits_runs

ROOT = Path(__file__).resolve().parents[2]
HOST = {"cpu_count": 2, "cpu_model": "AMD EPYC", "mem_total_bytes": 24 * GIB}


def _text(data: object) -> str:
    return render(data, "text")


def test_limits_text_matches_golden() -> None:
    ctx = LimitsContext(
        bed={
            "kind": "ram",
            "fs": "xfs",
            "device": "/dev/loop0",
            "image_bytes": 4 * GIB,
            "backing": "tmpfs:/dev/shm",
        },
        kernel="6.18",
        fio_version="3.33",
        host=HOST,
        batch="b",
        notes=["n1"],
        auto=True,
    )
    golden("limits_text.txt", _text(limits_report(summarise(limits_runs(), cpus=2), ctx)))


def test_limits_with_uncached_cache_and_generators_matches_golden() -> None:
    spec = {
        ("write", "buffered", 2, ""): [1.0, 1.1, 0.9],
        ("write", "uncached", 2, ""): [1.4] * 3,
        ("write", "direct", 2, ""): [2.0] * 3,
        ("write", "engine", 2, ""): [1.05, 1.0, 1.02],
        ("read", "buffered", 2, ""): [3.0] * 3,
        ("read", "direct", 2, ""): [2.5] * 3,
    }
    ctx = LimitsContext(
        bed={"kind": "ram", "fs": "xfs"},
        kernel="6.18",
        fio_version="3.33",
        host=HOST,
        batch="b",
        uncached_missing="n/a",
    )
    golden("limits_uncached.txt", _text(limits_report(summarise(_point_runs(spec), cpus=2), ctx)))


def test_limits_generators_that_disagree_say_why_golden() -> None:
    """A read point where the engine reads 4.5x faster than fio: the line under the table
    names what the runs measured (fio's kernel CPU per GiB, its buffer off a page)."""
    ctx = LimitsContext(
        bed={"kind": "ram", "fs": "xfs"},
        kernel="6.18",
        fio_version="3.33",
        host=HOST,
        batch="b",
    )
    golden("limits_generators.txt", _text(limits_report(summarise(disagreeing_runs(), cpus=2), ctx)))


def _plan_result() -> PlanResult:
    """The example plan's four points, three runs each (latencies from microseconds to
    seconds, IOPS below and above ten thousand) and one failed run."""
    plan = dataclasses.replace(
        load_plan(ROOT / "examples" / "dirty-ratio.toml"), source="examples/dirty-ratio.toml"
    )
    points = plan.expand()
    runs, rid = [], 0
    for i, pp in enumerate(points):
        for rep in range(3):
            rid += 1
            bw = 1.2 * GIB * (1 + 0.5 * i) * (1 + 0.02 * rep)
            runs.append(
                Run(
                    point=pp.point,
                    label=plan.label,
                    status="ok",
                    started_at=float(rid),
                    finished_at=rid + 0.5,
                    id=rid,
                    metrics=(
                        Metric("write_bw_bytes_per_s", bw, "B/s"),
                        Metric("write_iops", bw / (64 * KIB if i % 2 else 1 << 20), "IO/s"),
                        Metric(
                            "write_clat_p99_s", (4e-4, 3.1e-3, 0.012, 1.5)[i] * (1 + 0.1 * rep), "s", "lower"
                        ),
                    ),
                )
            )
    runs.append(
        Run(
            point=points[0].point,
            label=plan.label,
            status="failed",
            started_at=99.0,
            finished_at=99.5,
            id=rid + 1,
            error="fio exited 1: No space left on device",
        )
    )
    return PlanResult(
        plan,
        tuple(points),
        tuple(runs),
        "b1",
        beds=({"kind": "ram", "fs": "xfs", "image_bytes": 4 * GIB},),
        notes=("bed: ram xfs of 4.0 GiB",),
        kernel="6.18.44",
    )


def test_run_text_matches_golden() -> None:
    golden("run_plan.txt", _text(plan_report(_plan_result())))


def test_gate_text_matches_golden() -> None:
    base, new = two_sides()
    res = decide(compare(Side("base", base), [Side("patched", new)]))
    why = Explanation(
        "direct=0 jobs=1",
        "write_bw_bytes_per_s",
        base[0].id,
        new[0].id,
        ("writers wait on the flusher",),
        (),
        (Shift("tasks_flusher_share", 0.2, 0.35),),
        "iowall flame 1 100 -o d.svg",
    )
    golden(
        "gate_runs.txt",
        _text(
            GateReport(
                res,
                "label=base",
                "label=patched",
                (why,),
                ("iowall gate label=base label=patched",),
                ("a note",),
            )
        ),
    )


def test_history_of_runs_matches_golden() -> None:
    runs = [
        dataclasses.replace(r, metrics=tuple(dataclasses.replace(m, value=m.value * MIB) for m in r.metrics))
        for r in history_runs()
    ]
    (h,) = from_runs(runs, by="label")
    golden("history_runs.txt", _text(history_report([h], "recipe=plan:p")))


def test_import_fio_table_matches_golden() -> None:
    fixture = ROOT / "tests" / "fixtures" / "fio" / "tiobench-per-job.json"
    runs = read_runs(fixture.read_bytes(), "tiobench.json", label="base", hostname="box1")
    golden(
        "import_fio.txt",
        render(Imported(tuple(runs), frozenset({runs[0].uuid}), 1, len(runs) - 1, 1), "text"),
    )


def test_fleet_table_matches_golden() -> None:
    golden(
        "fleet_hosts.txt",
        render(
            Hosts(
                (
                    HostState("node1", IMPORTED, 12, ("node1.lab",)),
                    HostState("node2", IMPORTED, 0, ()),
                    HostState("node3", FAILED, error="install: pip exited 1"),
                )
            ),
            "text",
        ),
    )
