"""`iowall run FILE.fio`: a fio job file is a plan of one point, run on the bed (its directory
replaced by the bed's), stored with fio's JSON; a job file naming a device is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.store import Store
from tests.conftest import iowall, needs_root
from tests.fio_outputs import JOBS

pytestmark = [needs_root, pytest.mark.slow]


def test_job_file_runs_on_the_bed(tmp_path: Path, iowall_env: dict[str, str], no_leftovers: None) -> None:
    elsewhere = tmp_path / "not-here"
    job = tmp_path / "grouped.fio"
    job.write_text(JOBS["grouped"].format(dir=elsewhere))
    cp = iowall(
        "run",
        str(job),
        "--bed",
        "tmpfs",
        "--repeat",
        "1",
        "--probes",
        "none",
        "--format",
        "json",
        env=iowall_env,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (rid,) = doc["run_ids"]
    store = Store(iowall_env["IOWALL_DB"])
    run = store.get_run(rid)
    assert run.label == "grouped" and run.point.params["jobfile"] == "grouped.fio"
    ran = store.artifact(rid, "job.fio")
    fio = store.artifact(rid, "fio.json")
    assert ran is not None and fio is not None
    directory = next(x.split("=", 1)[1] for x in ran.body.splitlines() if x.startswith("directory="))
    assert directory.startswith("/run/iowall/") and not Path(directory).exists()  # torn down
    assert not elsewhere.exists()
    raw = json.loads(fio.body)
    assert [j["groupid"] for j in raw["jobs"]] == [0, 1, 2]
    for j in raw["jobs"]:
        d = "write" if j["write"]["io_bytes"] else "read"
        assert run.metric(f"g{j['groupid']}.{d}_bw_bytes_per_s") == j[d]["bw_bytes"]


def test_job_file_naming_a_device_is_refused(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    job = tmp_path / "dev.fio"
    job.write_text("[g]\nfilename=/dev/sda\nrw=read\nsize=1m\n")
    cp = iowall("run", str(job), "--bed", "tmpfs", env=iowall_env)
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1, cp.stderr
    assert "/dev/sda is a device" in cp.stderr
