"""A job file with several stonewalled groups (the shape of fio's tiobench example) run through
`iowall run plan.toml`: one row per group, each equal to fio's own figures for the group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.store import Store
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

TIOBENCH = """\
; fio's examples/tiobench-example.fio, small: four phases one after another
[global]
size=16m
bsrange=4k-4k
numjobs=2
group_reporting

[f1]
rw=write

[f2]
stonewall
rw=randwrite

[f3]
stonewall
rw=read

[f4]
stonewall
rw=randread
"""


def test_tiobench_shape_reports_each_group(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    (tmp_path / "tio.fio").write_text(TIOBENCH)
    plan = tmp_path / "tio.toml"
    plan.write_text('label = "tio"\n[workload]\njobfile = "tio.fio"\n[bed]\nkind = "tmpfs"\nsize = "256M"\n')
    cp = iowall("run", str(plan), "--repeat", "1", "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (rid,) = doc["run_ids"]
    art = Store(iowall_env["IOWALL_DB"]).artifact(rid, "fio.json")
    assert art is not None
    fio = json.loads(art.body)
    assert [j["groupid"] for j in fio["jobs"]] == [0, 1, 2, 3]
    (row,) = doc["table"]
    assert row["groups"] == {"0": "f1", "1": "f2", "2": "f3", "3": "f4"}
    med = {k: v["value"] for k, v in row["median"].items()}
    for j in fio["jobs"]:
        d = "write" if j["write"]["io_bytes"] else "read"
        assert med[f"g{j['groupid']}.{d}_bw_bytes_per_s"] == j[d]["bw_bytes"]
        assert med[f"g{j['groupid']}.{d}_iops"] == j[d]["iops"]
    reads = [j["read"] for j in fio["jobs"] if j["read"]["io_bytes"]]
    # the average over the read groups is never above the fastest group (fio rounds each
    # group's bw_bytes down to whole bytes/s: allow that one byte)
    assert med["read_bw_bytes_per_s"] <= max(r["bw_bytes"] for r in reads) + 1
    # the text table: one line per group, its name and direction's bandwidth
    cp = iowall("report", doc["batch"], env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    lines = [ln.split() for ln in cp.stdout.splitlines() if ln.strip().startswith("(fixed)")]
    assert [ln[1:3] for ln in lines] == [["g0", "f1"], ["g1", "f2"], ["g2", "f3"], ["g3", "f4"]], cp.stdout
    # `iowall show RUN`: the same rows
    cp = iowall("show", str(rid), env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    shown = cp.stdout.split("\ngroups")[1].split("\n\n")[0].splitlines()[2:]
    assert [ln.split()[:3] for ln in shown] == [
        ["g0", "f1", "write"],
        ["g1", "f2", "write"],
        ["g2", "f3", "read"],
        ["g3", "f4", "read"],
    ]
