"""fio job files and JSON parsing; a multi-group job file reported per group."""

import json
from pathlib import Path
from typing import Any

import pytest

from iowall.analysis.fiogroups import fio_groups
from iowall.model import Artifact, Point, Run
from iowall.report.run import render_run
from iowall.vocab.errors import UserError
from iowall.workloads.fio import JobFile, JobSection, distribute, parse_metrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fio"


def fixture(name: str) -> dict[str, Any]:
    """fio 3.33's JSON of the tiobench example's shape (write, randwrite, read, randread,
    stonewalled; 2 jobs each, 16 MiB, on tmpfs), with and without group_reporting."""
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return doc


def test_render_jobfile() -> None:
    j = JobFile({"rw": "write", "direct": 0}, [JobSection("a", {"filename": ["x", "y"]})])
    assert j.render() == "[global]\nrw=write\ndirect=0\n\n[a]\nfilename=x:y\n"


def test_distribute() -> None:
    assert distribute(list("abcde"), 2) == [["a", "c", "e"], ["b", "d"]]
    with pytest.raises(UserError):
        distribute(["a"], 2)


def test_parse_metrics_sums_the_jobs_of_one_group() -> None:
    raw = {
        "jobs": [
            {
                "groupid": 0,
                "read": {"io_bytes": 0},
                "write": {
                    "bw_bytes": 100,
                    "iops": 2.5,
                    "io_bytes": 1000,
                    "runtime": 10000,
                    "clat_ns": {"percentile": {"99.000000": 5000}},
                },
                "usr_cpu": 1.0,
                "sys_cpu": 2.0,
            },
            {
                "write": {"bw_bytes": 50, "iops": 1.0, "io_bytes": 500, "runtime": 12000},
                "usr_cpu": 1.0,
                "sys_cpu": 1.0,
                "error": 28,
            },
        ]
    }
    m = {x.name: x.value for x in parse_metrics(raw)}
    assert m["write_bw_bytes_per_s"] == 150 and m["write_iops"] == 3.5
    assert m["write_runtime_s"] == 12.0 and m["write_io_bytes"] == 1500
    assert "read_bw_bytes_per_s" not in m and m["fio_error"] == 28
    assert "write_clat_p99_s" not in m  # only for a single group


def test_groups_with_group_reporting_are_fios_own_entries() -> None:
    raw = fixture("tiobench-group-reporting.json")
    m = {x.name: x.value for x in parse_metrics(raw)}
    for j in raw["jobs"]:
        d = "write" if j["write"]["io_bytes"] else "read"
        pre = f"g{j['groupid']}."
        assert m[pre + f"{d}_bw_bytes_per_s"] == j[d]["bw_bytes"]
        assert m[pre + f"{d}_iops"] == j[d]["iops"]
        assert m[pre + f"{d}_io_bytes"] == j[d]["io_bytes"]
        assert m[pre + f"{d}_clat_p99_s"] == j[d]["clat_ns"]["percentile"]["99.000000"] / 1e9
    # un-prefixed: the read groups' bytes over their summed runtimes, never a sum of rates
    reads = [j["read"] for j in raw["jobs"] if j["read"]["io_bytes"]]
    assert len(reads) == 2
    want = 1000.0 * sum(r["io_bytes"] for r in reads) / sum(r["runtime"] for r in reads)
    assert m["read_bw_bytes_per_s"] == pytest.approx(want)
    assert m["read_bw_bytes_per_s"] <= max(r["bw_bytes"] for r in reads)
    assert m["read_bw_bytes_per_s"] < sum(r["bw_bytes"] for r in reads)
    assert m["read_runtime_s"] == sum(r["runtime"] for r in reads) / 1000
    assert "read_clat_p99_s" not in m


def test_groups_without_group_reporting_as_fio_aggregates_a_group() -> None:
    raw = fixture("tiobench-per-job.json")
    m = {x.name: x.value for x in parse_metrics(raw)}
    assert len(raw["jobs"]) == 8
    for gid in range(4):
        jobs = [j for j in raw["jobs"] if j["groupid"] == gid]
        d = "write" if jobs[0]["write"]["io_bytes"] else "read"
        io = sum(j[d]["io_bytes"] for j in jobs)
        rt = max(j[d]["runtime"] for j in jobs)
        # fio's "Run status group" bandwidth: the group's bytes over its longest job's runtime
        assert m[f"g{gid}.{d}_bw_bytes_per_s"] == 1000 * io // rt
        assert m[f"g{gid}.{d}_io_bytes"] == io and f"g{gid}.{d}_clat_p99_s" not in m
    writes = sum(j["write"]["io_bytes"] for j in raw["jobs"])
    assert m["write_io_bytes"] == writes


def multi_group_run(name: str) -> Run:
    raw = fixture(name)
    return Run(
        point=Point("plan:t", {}),
        label="t",
        status="ok",
        started_at=0.0,
        finished_at=1.0,
        metrics=tuple(parse_metrics(raw)),
        artifacts=(Artifact("fio.json", "application/json", json.dumps(raw)),),
    )


def test_show_has_one_row_per_group() -> None:
    run = multi_group_run("tiobench-group-reporting.json")
    assert [g.title for g in fio_groups(run)] == ["g0 f1", "g1 f2", "g2 f3", "g3 f4"]
    text = render_run(run)
    groups = text.split("\ngroups")[1].split("\n\n")[0].splitlines()[2:]
    assert [ln.split()[:3] for ln in groups] == [
        ["g0", "f1", "write"],
        ["g1", "f2", "write"],
        ["g2", "f3", "read"],
        ["g3", "f4", "read"],
    ]
    assert "g0.write_bw_bytes_per_s" not in text  # shown in its group's row, not twice
    assert "read_bw_bytes_per_s" in text
