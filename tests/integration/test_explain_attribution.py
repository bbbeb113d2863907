"""explain on real runs (issue 10), each a trigger made for real on this machine: a buffered
write that ends with fsync split into its copy and writeback phases; a buffered write on tmpfs
whose kernel time is mostly the copy; a tiny vm.dirty_bytes that still yields throttling;
many threads creating files in one XFS directory showing lock slow paths."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from iowall.analysis.explain.budget import MIN_WINDOW_S
from iowall.analysis.explain.run import explain
from iowall.beds import BedSpec, provision
from iowall.model import Metric, Point, Run
from iowall.probes import ProbeContext, ProbeSet, resolve
from iowall.probes.profile import inferno_tool
from iowall.workloads.engine import run_meta
from tests.conftest import iowall, needs_root

pytestmark = [
    needs_root,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("perf") is None or inferno_tool("inferno-collapse-perf") is None,
        reason="perf or inferno missing (make setup)",
    ),
]


def run_plan(tmp_path: Path, env: dict[str, str], body: str, *args: str) -> dict[str, Any]:
    plan = tmp_path / "p.toml"
    plan.write_text(textwrap.dedent(body))
    cp = iowall("run", str(plan), "--format", "json", *args, env=env)
    assert cp.returncode == 0, cp.stderr
    (rid,) = json.loads(cp.stdout)["run_ids"]
    cp = iowall("explain", str(rid), "--format", "json", env=env)
    assert cp.returncode == 0, cp.stderr
    doc: dict[str, Any] = json.loads(cp.stdout)
    assert doc["schema_version"] == 1 and doc["applicable"]
    return doc


def _too_short(url: str, run_id: int) -> bool:
    """A run the phase split has nothing to go on for: no write bandwidth series (fio's 100 ms
    log of a write shorter than a second, its first ~0.1 s missing) and under a second."""
    from iowall.analysis.explain.context import phase_context
    from iowall.store import Store

    run = Store(url).get_run(run_id)
    return not phase_context(run) and (run.metric("write_runtime_s") or 0.0) < 1.0


def _phases_seen(url: str, doc: dict[str, Any]) -> str:
    """What the phase split had to go on (a failure's message: CI-43 and CI-44 had neither
    the verdict nor its near miss, which a stored run of this plan here always gives)."""
    from iowall.analysis.explain.context import phase_context
    from iowall.store import Store

    run = Store(url).get_run(doc["run"])
    bw = [
        (s.probe, len(s.samples), s.samples[:2], s.samples[-2:]) for s in run.series if s.name == "write_bw"
    ]
    rules = [v["rule"] for v in doc["verdicts"]]
    return (
        f"phases {phase_context(run)}; write_bw {bw}; write_io_bytes {run.metric('write_io_bytes')}, "
        f"write_runtime_s {run.metric('write_runtime_s')}; verdicts {rules}; "
        f"near misses {doc['near_misses']}; wall {doc.get('wall')}"
    )


def test_buffered_write_phases_and_attribution(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    doc = run_plan(
        tmp_path,
        iowall_env,
        """\
        label = "fsync"
        repeat = 1
        [workload]
        rw = "write"
        bs = "2M"
        size = "768M"
        jobs = 2
        ioengine = "io_uring"
        end_fsync = 1
        """,
    )
    att = doc["attribution"]  # shares of the busy CPU time, unattributed last
    assert att[-1]["class"] == "unattributed"
    assert sum(a["share"] for a in att) == pytest.approx(1.0, abs=0.06)
    assert att[-1]["share"] <= 0.2, att
    assert doc["paths"] and doc["paths"][0]["top_functions"]
    verdicts = {v["rule"]: v for v in doc["verdicts"]}
    if "writeback-phase" in verdicts:
        ev = verdicts["writeback-phase"]["evidence"]
        assert ev["copy_s"] > 0 and ev["writeback_s"] > 0
        assert ev["writeback_share"] == pytest.approx(
            ev["writeback_s"] / (ev["copy_s"] + ev["writeback_s"]), rel=0.02
        )
    elif "writeback_s" in verdicts.get("device-bound", {}).get("evidence", {}):
        # most of the point was writeback at the device's ceiling: the more specific verdict
        # (device-bound in writeback) replaced writeback-phase, and says the same two phases
        ev = verdicts["device-bound"]["evidence"]
        assert ev["copy_s"] > 0 and ev["writeback_s"] > 0
    elif _too_short(iowall_env["IOWALL_DB"], doc["run"]):
        # CI-45: 1.5 GiB written in 0.37 s, no bandwidth log to split: the rule cannot be tried
        assert not any(m.startswith("writeback-phase") for m in doc["near_misses"])
    else:  # measured, but under the verdict's 25% on this run: the nearest miss says so
        assert any(
            m.startswith("writeback-phase: writeback's share of the time") for m in doc["near_misses"]
        ), _phases_seen(iowall_env["IOWALL_DB"], doc)
    text = iowall("explain", str(doc["run"]), env=iowall_env).stdout
    assert "where the CPU time went" in text and "kernel paths (profile" in text


def test_tmpfs_buffered_write_is_mostly_the_copy(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    doc = run_plan(
        tmp_path,
        iowall_env,
        """\
        label = "tmpfs"
        repeat = 1
        [workload]
        rw = "write"
        bs = "1M"
        size = "512M"
        jobs = 2
        time_based = 1
        runtime = 4
        [bed]
        kind = "tmpfs"
        """,
    )
    # the workload's own kernel time by path (its stacks only: a neighbour's user space or
    # kernel work does not count), mostly the copy
    paths = doc["budget"]["kernel_paths"]
    top = max(paths, key=paths.get)
    assert top == "copy" and paths["copy"] > 0.4 * sum(paths.values()), paths
    # the wall is the workload's own time on a CPU copying (no copy ceiling in a plain run)
    assert doc["wall"]["kind"] == "memcopy", doc["sentences"]
    assert "copying to or from user space" in doc["wall"]["sentence"]


def test_tiny_dirty_bytes_still_throttles(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    doc = run_plan(
        tmp_path,
        iowall_env,
        """\
        label = "tiny-dirty"
        repeat = 1
        [workload]
        rw = "write"
        bs = "1M"
        size = "512M"
        jobs = 2
        [axes]
        "sysctl:vm.dirty_bytes" = [1048576]
        """,
    )
    rules = [v["rule"] for v in doc["verdicts"]]
    assert {"writers-throttled", "flusher-saturated"} & set(rules), doc["sentences"]


def test_creating_in_one_xfs_directory_shows_lock_slow_paths() -> None:
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=1 << 30) as bed:
        ctx = ProbeContext(devices=tuple(bed.devices), devnos=(bed.devno,), workdir=bed.path)
        ps = ProbeSet(resolve("default"), ctx)
        d = os.path.join(bed.path, "shared")
        os.makedirs(d)
        ps.start()
        try:
            # 40,000 files a thread: 20,000 took 1.94-2.12 s here (2026-11-30), and a run under
            # explain's 2 s is "too short to explain", silent (4 of 14 runs; a make test failed)
            (rec,) = run_meta(d, 8, 40000, ["create"], shared_dir=True)
        finally:
            results = ps.stop()
        run = Run(
            point=Point("t", {"kind": "meta", "threads": 8}),
            label="t",
            status="ok",
            started_at=0.0,
            finished_at=float(rec["wall_s"]),
            bed=dict(bed.facts),
            metrics=tuple(m for r in results for m in r.metrics)
            + (Metric("create_files_per_s", float(rec["files_per_s"]), "files/s"),),
            artifacts=tuple(a for r in results for a in r.artifacts),
            series=tuple(s for r in results for s in r.series),
            id=1,
        )
    assert float(rec["wall_s"]) >= MIN_WINDOW_S, rec  # else explain is silent by design
    e = explain(run, [run])
    lock = [p for p in e.paths if p.path == "lock"]
    assert lock and lock[0].share > 0.05, e.paths
    assert "->" in lock[0].top_functions[0].function  # the lock's caller is named
    if lock[0].share >= 0.10:
        v = next(v for v in e.verdicts if v.rule == "lock-contention")
        assert "lock slow paths (top callers" in v.sentence
