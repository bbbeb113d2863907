"""`iowall run` end to end: real fio on real beds, knobs applied and restored (also after
SIGTERM), bed-shape axes, user job files, the recipe registry seam."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iowall.model import Run
from iowall.plan import plan_from_doc, plan_report, run_plan
from iowall.recipes import registry
from iowall.recipes.options import RecipeOptions
from iowall.report.recipe import render_text
from iowall.results import Report
from iowall.store import RunFilter, Store
from iowall.vocab.progress import Progress
from tests.conftest import iowall, leftovers, needs_root

pytestmark = [needs_root, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "dirty-ratio.toml")
DIRTY = "/proc/sys/vm/dirty_ratio"


def read(path: str) -> str:
    return Path(path).read_text().strip()


def other_ratio(old: str) -> int:
    return 13 if old != "13" else 14


def assert_nothing_left(env: dict[str, str], runs: list[Run] | None = None) -> None:
    """Nothing of this test's runs is left: every undo step in its private journal was carried
    out and crossed out (mounts, loop devices, images, knobs), and no loop device or mount
    uses one of its images. (Other tests may run beds at the same time on this machine, so
    the global /run/iowall and loop lists are not compared.)"""
    jdir = Path(env["XDG_STATE_HOME"], "iowall", "journal")
    assert not list(jdir.glob("*.json")), [p.read_text() for p in jdir.glob("*.json")]
    runs = Store(env["IOWALL_DB"]).runs() if runs is None else runs
    images = {str(r.bed["image"]) for r in runs if r.bed.get("image")}
    assert images or not runs
    for image in images:
        assert not os.path.exists(image)
        for loop in leftovers()["loops"]:
            assert image not in loop, loop
    mounted = Path("/proc/self/mounts").read_text().splitlines()
    devs = {str(r.bed["device"]) for r in runs if r.bed.get("device")}
    for line in mounted:
        src, mnt = line.split()[:2]
        if src in devs and mnt.startswith("/run/iowall/"):
            name = os.path.basename(src)
            backing = Path(f"/sys/block/{name}/loop/backing_file")
            b = backing.read_text() if backing.exists() else ""
            assert not any(i in b for i in images), line


def small_plan(tmp_path: Path, extra: str = "", name: str = "small.toml", repeat: int = 1) -> str:
    p = tmp_path / name
    p.write_text(
        f'label = "small"\nrepeat = {repeat}\n'
        + textwrap.dedent("""\
        [workload]
        kind = "fio"
        rw = "write"
        bs = "1M"
        size = "16M"
        end_fsync = 1
        """)
        + textwrap.dedent(extra)
    )
    return str(p)


def test_dirty_ratio_example_runs_as_written(iowall_env: dict[str, str]) -> None:
    old = read(DIRTY)
    cp = iowall("run", EXAMPLE, "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    assert read(DIRTY) == old
    doc = json.loads(cp.stdout)
    assert {"run_ids", "runs", "label", "batch", "plan", "table"} <= set(doc)
    assert doc["label"] == "dirty-ratio" and len(doc["run_ids"]) == 12
    assert [r["id"] for r in doc["runs"]] == doc["run_ids"]
    for r in doc["runs"]:
        assert {"id", "label", "point", "status", "metrics"} <= set(r)
        assert r["status"] == "ok" and r["label"] == "dirty-ratio"
        assert r["metrics"]["write_bw_bytes_per_s"]["value"] > 0
        assert r["knobs"] == {"sysctl:vm.dirty_ratio": str(r["point"]["sysctl:vm.dirty_ratio"])}
    # interleaved: every round runs the four points once, in the same order
    keys = [(r["point"]["jobs"], r["point"]["sysctl:vm.dirty_ratio"]) for r in doc["runs"]]
    assert keys[:4] == [(1, 5), (1, 10), (2, 5), (2, 10)] and keys == keys[:4] * 3
    assert [r["repeat_index"] for r in doc["runs"]] == [0] * 4 + [1] * 4 + [2] * 4
    assert len(doc["table"]) == 4 and all(row["ok"] == 3 for row in doc["table"])
    # the store holds the values in force while each run ran
    runs = Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=doc["batch"]))
    assert len(runs) == 12
    for r in runs:
        want = str(r.point.params["sysctl:vm.dirty_ratio"])
        assert r.env["knobs"] == {"sysctl:vm.dirty_ratio": want}
        assert r.env["sysctls"]["vm.dirty_ratio"] == want
        assert r.env["plan"]["label"] == "dirty-ratio" and r.bed["fs"] == "xfs"
        assert r.point.recipe == "plan:dirty-ratio"
    assert_nothing_left(iowall_env, runs)


def test_sigterm_mid_run_restores_knobs_and_tears_down(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    old = read(DIRTY)
    new = other_ratio(old)
    plan = small_plan(
        tmp_path,
        f"""\
        time_based = 1
        runtime = 60
        [axes]
        "sysctl:vm.dirty_ratio" = [{new}]
        """,
        repeat=2,
    )
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    proc = subprocess.Popen(
        [exe, "run", plan], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=iowall_env
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "[1/2]" in line, line
        deadline = time.time() + 20
        while read(DIRTY) != str(new) and time.time() < deadline:
            time.sleep(0.05)
        assert read(DIRTY) == str(new)
        time.sleep(1.0)  # fio is writing
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "interrupted by SIGTERM" in err
    assert read(DIRTY) == old
    runs = Store(iowall_env["IOWALL_DB"]).runs()
    assert [r.status for r in runs] == ["interrupted"]
    assert runs[0].env["knobs"] == {"sysctl:vm.dirty_ratio": str(new)}
    assert_nothing_left(iowall_env, runs)  # no mount, loop device or image of this run


def test_bed_knobs_applied_recorded_and_table(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    plan = small_plan(tmp_path)
    cp = iowall(
        "run",
        plan,
        "--set",
        "sysfs:queue/max_sectors_kb=64,128",
        "--set",
        "sysfs:queue/scheduler=mq-deadline",
        "--set",
        "xfs:extsize=64k",
        "--label",
        "knobs",
        env=iowall_env,
    )
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0].startswith("plan:small  label knobs")
    head = next(ln for ln in lines if "sysfs:queue/max_sectors_kb" in ln)
    assert "write bw" in head and "write IOPS" in head and "ok" in head
    assert any(ln.split()[:1] == ["64"] and ("MiB/s" in ln or "GiB/s" in ln) for ln in lines)
    assert any(ln.startswith("runs 1-2") for ln in lines)
    runs = Store(iowall_env["IOWALL_DB"]).runs()
    assert [r.status for r in runs] == ["ok", "ok"] and runs[0].label == "knobs"
    for r in runs:
        assert r.env["knobs"] == {
            "sysfs:queue/max_sectors_kb": str(r.point.params["sysfs:queue/max_sectors_kb"]),
            "sysfs:queue/scheduler": "mq-deadline",
            "xfs:extsize": str(64 << 10),
        }
    assert_nothing_left(iowall_env, runs)


def test_bed_shape_axes_provision_each_bed(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    plan = small_plan(tmp_path, '[axes]\nfs = ["xfs", "ext4"]\nmount = ["noatime"]\n')
    cp = iowall("run", plan, "--repeat", "2", "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert [r["point"]["fs"] for r in doc["runs"]] == ["xfs", "ext4", "xfs", "ext4"]
    runs = Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=doc["batch"]))
    for r in runs:
        assert r.bed["fs"] == r.point.params["fs"] and "noatime" in r.bed["mount_opts"]
        assert "noatime" in r.env["knobs"]["mount"]
    assert len({r.bed["device"] + r.bed["image"] for r in runs}) == 4  # a fresh bed each round
    assert_nothing_left(iowall_env, runs)


def test_refused_value_is_one_line_and_nothing_is_left(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    old = read(DIRTY)
    cp = iowall("run", small_plan(tmp_path), "--set", "sysctl:vm.dirty_ratio=101", env=iowall_env)
    assert cp.returncode == 2
    assert cp.stderr.strip().splitlines()[-1] == (
        "iowall: error: --set sysctl:vm.dirty_ratio=101: knob sysctl:vm.dirty_ratio = 101: "
        "out of range (the kernel takes 0..100)"
    )
    assert read(DIRTY) == old
    cp = iowall("run", "no-such-recipe", env=iowall_env)
    assert cp.returncode == 2 and "no plan file or recipe named 'no-such-recipe'" in cp.stderr
    assert_nothing_left(iowall_env, [])


def test_user_jobfile_is_pointed_at_the_bed(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "mine.fio").write_text(
        f"[global]\nrw=write\nbs=64k\ndirectory={elsewhere}\n[a]\nsize=8m\nfilename={elsewhere}/data\n"
    )
    plan = tmp_path / "jf.toml"
    plan.write_text('[workload]\njobfile = "mine.fio"\n[bed]\nsize = "512M"\n[axes]\njobs = [1, 2]\n')
    cp = iowall("run", str(plan), "--repeat", "1", "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert [r["status"] for r in doc["runs"]] == ["ok", "ok"]
    assert [r["metrics"]["write_io_bytes"]["value"] for r in doc["runs"]] == [8 << 20, 16 << 20]
    assert not elsewhere.exists()
    store = Store(iowall_env["IOWALL_DB"])
    job = store.artifact(doc["run_ids"][1], "job.fio")
    assert job is not None and "filename=data" in job.body and "numjobs=2" in job.body
    assert_nothing_left(iowall_env)


def test_recipe_registry_seam(
    tmp_path: Path,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    names = {r.name: r.seed for r in registry.recipes()}
    assert names.get("limits") == "002"

    def execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
        # a recipe whose workload is a plan: the plan built for the machine, the command
        # line's overrides applied, run by the plan runner
        plan = plan_from_doc(
            {
                "label": "seam",
                "repeat": 3,
                "workload": {"rw": "write", "bs": "1M", "size": "8M" if opts.quick else "16M"},
                "bed": {"size": "512M"},
                "axes": {"jobs": [1, 2]},
            },
            recipe="seam-test",
        )
        return plan_report(
            run_plan(
                plan.with_overrides(
                    sets=opts.sets, label=opts.label, repeat=opts.repeat, bed=opts.bed, probes=opts.probes
                ),
                store,
                progress,
            )
        )

    rec = registry.register(
        registry.Recipe(name="seam-test", seed="999", description="t", execute=execute, module=__name__)
    )
    try:
        assert registry.get("seam-test") is rec
        opts = RecipeOptions(quick=True, sets=(("jobs", (2,)),), repeat=1, label="seam-label")
        rep = rec.run(opts, Store(db_url), Progress())
        runs = Store(db_url).runs(RunFilter(ids=rep.run_ids))
        assert [r.point.params["jobs"] for r in runs] == [2]
        assert runs[0].point.recipe == "seam-test" and runs[0].label == "seam-label"
        assert runs[0].metric("write_io_bytes") == 16 << 20  # 8M per job, 2 jobs
        assert "seam-label" in render_text(rep) and rep.data["table"]
        assert_nothing_left({"XDG_STATE_HOME": str(tmp_path / "state"), "IOWALL_DB": db_url})
    finally:
        registry._REGISTRY.pop("seam-test", None)
    cp = iowall("recipes", "--format", "json")
    assert cp.returncode == 0, cp.stderr
    listed = {r["name"]: r for r in json.loads(cp.stdout)["recipes"]}
    assert listed["limits"]["seed"] == "002"
    assert set(listed["limits"]) == {"name", "seed", "description"}  # one kind of recipe
