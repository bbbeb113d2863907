"""`iowall limits` end to end: real fio on a real XFS on a loop device over /dev/shm."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, leftovers, needs_root

pytestmark = [needs_root, pytest.mark.slow]


def cat_sysfs_order() -> str | None:
    """The free page reporting order (guestmem holds it off during a run), or None."""
    p = Path("/sys/module/page_reporting/parameters/page_reporting_order")
    return p.read_text().strip() if p.exists() else None


@pytest.fixture
def small_run(limits_quick: tuple[dict, dict[str, str]]) -> tuple[dict, str]:
    """The session's small limits run (tests/conftest.py; the full run's job counts, 1-4 on
    this 2-CPU machine) and its store's URL."""
    doc, env = limits_quick
    return doc, env["IOWALL_DB"]


def test_json_shape(small_run: tuple[dict, str]) -> None:
    doc, _ = small_run
    jobs = sorted({p["jobs"] for p in doc["points"]})
    assert len(jobs) >= 4 and jobs[0] == 1  # enough counts for `iowall scaling` to fit
    assert set(doc["ceilings"]["memcopy_bytes_per_s"]) == {str(min(j, os.cpu_count() or 1)) for j in jobs}
    assert doc["ceilings"]["direct_write_bytes_per_s"] > 0
    assert doc["ceilings"]["direct_read_bytes_per_s"] > 0
    pts = {(p["direction"], p["jobs"]) for p in doc["points"]}
    assert pts == {(d, j) for d in ("write", "read") for j in jobs}
    for p in doc["points"]:
        assert p["buffered_bytes_per_s"] > 0 and p["direct_bytes_per_s"] > 0
        assert p["uncached_bytes_per_s"] > 0  # XFS on 6.18 takes RWF_DONTCACHE
        assert p["buffered_over_direct"] == pytest.approx(p["buffered_bytes_per_s"] / p["direct_bytes_per_s"])
    assert any("stops scaling" in s or "keeps at least" in s for s in doc["sentences"])
    assert any(s.startswith("Uncached write") for s in doc["sentences"])
    assert any("dirty threshold" in n for n in doc["notes"])
    assert any("iowall-engine" in n and "0x40" in n for n in doc["notes"])  # fio 3.33's flag
    assert doc["bed"]["fs"] == "xfs" and doc["bed"]["device"].startswith("/dev/loop")
    memcopy = len(doc["ceilings"]["memcopy_bytes_per_s"])
    assert len(doc["run_ids"]) == memcopy + 6 * len(jobs) + 2  # + the engine's two doubles


def test_uncached_leaves_little_page_cache(small_run: tuple[dict, str]) -> None:
    """Uncached writes leave at most 10% of the bytes written in the page cache (Cached
    growth), buffered ones much more; the engine's buffered figure agrees with fio's. Cached
    may shrink a little while uncached writes run (CI saw -0.00002): the figure is measured,
    so a small negative one is allowed, not a large one."""
    doc, _ = small_run
    left = {(c["direction"], c["mode"]): c["value"] for c in doc["cache_left_per_byte"]}
    assert -0.01 <= left[("write", "uncached")] <= 0.10, left
    # --quick writes pass over their files for 3 s: a buffered pass overwrites the pages the
    # last left, so the whole file set stays cached (per byte of the files, not of the passes)
    assert left[("write", "buffered")] >= 0.5, left
    # a time-based uncached read drops what it read but leaves its readahead and the pages
    # of the pass it ends in: 2-11% of the file set in 24 --quick points on this VM (the
    # median per mode is taken), buffered reads 28-99%
    assert left[("read", "uncached")] <= 0.20, left
    assert left[("read", "buffered")] >= left[("read", "uncached")], left
    assert {g["direction"] for g in doc["generators"]} == {"write", "read"}
    for g in doc["generators"]:
        assert g["fio"]["median"] > 0 and g["engine"]["median"] > 0


def test_scaling_fits_the_usl_on_a_limits_batch(small_run: tuple[dict, str]) -> None:
    doc, url = small_run
    env = dict(os.environ, IOWALL_DB=url)
    cp = iowall("scaling", f"batch={doc['batch']}", "--format", "json", env=env)
    assert cp.returncode == 0, cp.stderr
    curves = json.loads(cp.stdout)["curves"]
    fitted = [c for c in curves if c.get("fit")]
    assert fitted, [c.get("fit_note") for c in curves]


def test_stored_metrics_equal_fio_json(small_run: tuple[dict, str]) -> None:
    """What iowall stores for a run is what fio itself reported for that run."""
    doc, url = small_run
    store = Store(url)
    fio_runs = [r for r in store.runs(RunFilter(ids=doc["run_ids"])) if r.point.params.get("kind") == "fio"]
    assert len(fio_runs) == 2 * 2 * len({r.point.params["jobs"] for r in fio_runs})
    for r in fio_runs:
        assert r.id is not None and r.status == "ok"
        art = store.artifact(r.id, "fio.json")
        assert art is not None
        raw = json.loads(art.body)
        (job,) = raw["jobs"]  # group_reporting: one aggregate
        d = r.point.params["rw"]
        assert r.metric(f"{d}_bw_bytes_per_s") == job[d]["bw_bytes"]
        assert r.metric(f"{d}_iops") == pytest.approx(job[d]["iops"], rel=1e-12)
        assert r.metric(f"{d}_io_bytes") == job[d]["io_bytes"]
        assert r.metric(f"{d}_runtime_s") == job[d]["runtime"] / 1000.0
        if r.point.params.get("runtime_s"):  # --quick: pass after pass for that long
            assert job[d]["io_bytes"] > 0
            assert job[d]["runtime"] >= 0.95 * 1000 * r.point.params["runtime_s"]
        else:
            assert (
                0 < r.point.params["bytes"] - job[d]["io_bytes"] < 64 * (2 << 20)
                or job[d]["io_bytes"] == r.point.params["bytes"]
            )  # whole 2M blocks per file
        assert store.artifact(r.id, "job.fio") is not None
        assert r.env["fio_version"] and r.env["sysctls"]["vm.dirty_ratio"]
        assert r.bed["fs"] == "xfs"


def test_text_report_and_runs_listing(small_run: tuple[dict, str], tmp_path: Path) -> None:
    doc, url = small_run
    env = dict(os.environ, IOWALL_DB=url)
    cp = iowall("runs", "--format", "json", env=env, check=True)
    listed = json.loads(cp.stdout)["runs"]
    assert [r["id"] for r in listed] == doc["run_ids"]
    cp = iowall("runs", "--status", "ok", env=env, check=True)
    assert "limits" in cp.stdout
    rid = next(r["id"] for r in listed if r["point"].get("kind") == "fio")
    cp = iowall("show", str(rid), env=env, check=True)
    assert f"run {rid}" in cp.stdout and "fio.json" in cp.stdout
    cp = iowall("show", str(rid), "--raw", "fio.json", env=env, check=True)
    assert json.loads(cp.stdout)["fio version"].startswith("fio-")
    cp = iowall("show", "999999", env=env)
    assert cp.returncode == 2 and "no run 999999" in cp.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_point_leaves_nothing(sig: signal.Signals, iowall_env: dict[str, str]) -> None:
    """Killed in the middle of a point: no mount, no loop device, no image; run interrupted."""
    before = leftovers()
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    proc = subprocess.Popen(
        [exe, "limits", "--quick", "--jobs", "1", "--repeat", "1", "--size", "4G"],
        env=iowall_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.time() + 120
    seen = ""
    while time.time() < deadline:
        line = proc.stderr.readline()
        seen += line
        if "write buffered" in line:
            break
        assert line, f"limits ended before the point started: {seen}"
    time.sleep(0.7)  # well inside the buffered write of ~1.4 GiB
    assert proc.poll() is None, "the point ended before the signal"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err
    assert "interrupted" in err
    after = leftovers()
    for k in after:
        assert after[k] <= before[k], f"left behind {k}: {after[k] - before[k]}"
    runs = Store(iowall_env["IOWALL_DB"]).runs()
    assert runs and runs[-1].status == "interrupted"
    assert runs[-1].point.params["rw"] == "write" and runs[-1].point.params["direct"] == 0
    assert not list(Path(iowall_env["XDG_STATE_HOME"], "iowall", "journal").glob("*.json"))


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--bed", "nonsense"], "unknown bed"),
        (["--fs", "nonsense"], "unknown filesystem"),
        (["--jobs", "0"], "at least 1"),
        (["--repeat", "0"], "at least 1"),
        (["--size", "lots"], "cannot read"),
        (["--format", "xml"], "--format"),
        (["--fs-block", "3k"], "powers of two from 1k to 64k"),
        (["--fs-block", "128k"], "powers of two from 1k to 64k"),
        (["--fs", "ext4", "--fs-block", "16k"], "applies to XFS"),
        (["--bed", "tmpfs", "--fs-block", "16k"], "needs a bed iowall formats"),
    ],
)
def test_bad_input_one_line_exit_2(
    args: list[str], msg: str, iowall_env: dict[str, str], no_leftovers: None
) -> None:
    cp = iowall("limits", *args, env=iowall_env)
    assert cp.returncode == 2
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0] and lines[0].startswith("iowall: error:")
    assert Store(iowall_env["IOWALL_DB"]).count() == 0


def test_fs_block_sizes_side_by_side(iowall_env: dict[str, str], no_leftovers: None) -> None:
    """`--fs-block 4k,16k`: one XFS bed per block size (16k is above the 4k page size: large
    block sizes), the same points on each, the tables side by side."""
    order_before = cat_sysfs_order()
    cp = iowall(
        "limits",
        "--quick",
        "--repeat",
        "1",
        "--size",
        "3G",
        "--jobs",
        "1",
        "--fs-block",
        "4k,16k",
        "--probes",
        "none",
        "--format",
        "json",
        env=iowall_env,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert [b["fs_info"].count("bsize=16384") > 0 for b in doc["beds"]] == [False, True]
    assert {(p["fs_block"], p["direction"], p["jobs"]) for p in doc["points"]} == {
        (b, d, 1) for b in ("4k", "16k") for d in ("write", "read")
    }
    assert all(p["buffered_bytes_per_s"] > 0 and p["direct_bytes_per_s"] > 0 for p in doc["points"])
    assert any(s.startswith("Best buffered write with 4k blocks") for s in doc["sentences"])
    titles = [sec["title"] for sec in doc["sections"]]
    assert "Sequential write, bs 2M, pvsync2, 16k fs blocks (median of 1, ± half-range)" in titles
    assert cat_sysfs_order() == order_before  # the free page reporting order came back


def test_missing_fio(iowall_env: dict[str, str], no_leftovers: None, tmp_path: Path) -> None:
    env = dict(iowall_env, PATH=str(tmp_path))  # no fio (and nothing else) on PATH
    cp = iowall("limits", "--quick", env=env)
    assert cp.returncode == 2
    assert cp.stderr.strip() == (
        "iowall: error: fio not found: install it with 'apt-get install fio' (or run 'make setup')"
    )


def test_non_root_dir_bed_says_what_it_could_not_do(tmp_path_factory: pytest.TempPathFactory) -> None:
    """As an ordinary user, `--bed dir:PATH` runs and says what it could not do."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) not installed")
    base = Path("/tmp") / f"iowall-nonroot-{os.getpid()}"
    base.mkdir(mode=0o777)
    try:
        os.chmod(base, 0o777)
        (base / "bed").mkdir(mode=0o777)
        os.chmod(base / "bed", 0o777)
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(base),
            "LANG": "C.UTF-8",
            "IOWALL_DB": f"sqlite:///{base / 'db.sqlite'}",
        }
        exe = os.path.join(os.path.dirname(sys.executable), "iowall")
        cp = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                exe,
                "limits",
                "--bed",
                f"dir:{base / 'bed'}",
                "--quick",
                "--jobs",
                "1",
                "--repeat",
                "1",
                "--size",
                "512M",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert cp.returncode == 0, cp.stderr
        assert "not root: caches are not dropped" in cp.stdout
        assert "dir bed: nothing formatted" in cp.stdout
        assert "Buffered write" in cp.stdout
        assert list((base / "bed").iterdir()) == []  # its work directory is gone
        # and as non-root, a bed that needs root is one clear line
        cp = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "limits", "--bed", "ram"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cp.returncode == 2 and "needs root" in cp.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)
