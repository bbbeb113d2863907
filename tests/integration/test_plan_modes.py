"""Plans with a ``mode`` axis (buffered, uncached, direct) and an ``fs_block`` bed axis, end to
end: uncached points run with iowall-engine where fio passes the old flag, and leave almost no
page cache behind; what the engine cannot reproduce is refused before anything runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

PLAN = """\
label = "modes"
repeat = 1
probes = ["meminfo"]
[workload]
kind = "fio"
rw = "{rw}"
bs = "1M"
size = "256M"
nrfiles = 4
end_fsync = 1
[bed]
kind = "ram"
size = "1G"
[axes]
mode = ["buffered", "uncached", "direct"]
{extra}
"""


def plan(tmp_path: Path, rw: str = "write", extra: str = "") -> str:
    p = tmp_path / "modes.toml"
    p.write_text(textwrap.dedent(PLAN.format(rw=rw, extra=extra)))
    return str(p)


@pytest.mark.parametrize("rw", ["write", "read"])
def test_mode_axis_runs_all_three(rw: str, tmp_path: Path, iowall_env: dict[str, str]) -> None:
    cp = iowall("run", plan(tmp_path, rw, 'fs_block = ["4k", "16k"]'), "--format", "json", env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    store = Store(iowall_env["IOWALL_DB"])
    runs = store.runs(RunFilter(ids=doc["run_ids"]))
    arts = store.artifacts_of([r.id or 0 for r in runs])
    assert len(runs) == 6 and all(r.status == "ok" for r in runs), [r.error for r in runs]
    for r in runs:
        p = r.point.params
        assert r.bed["mkfs_cmd"].endswith(f"-b size={int(p['fs_block'][:-1]) * 1024}")
        names = {a.name for a in arts.get(r.id or 0, ())}
        # fio 3.33's uncached passes 0x40: the engine generates the uncached points
        assert ("engine.json" in names) == (p["mode"] == "uncached"), names
        assert r.metric(f"{rw}_io_bytes") == 256 << 20
        assert (r.metric(f"{rw}_bw_bytes_per_s") or 0) > 0


@pytest.mark.parametrize(
    "workload,msg",
    [
        ('rw = "randwrite"', "streams rw=read or rw=write only"),
        ("iodepth = 4\n[workload.options]\nrwmixread = 50", "cannot honour rwmixread"),
    ],
)
def test_uncached_the_engine_cannot_do_is_refused(
    workload: str, msg: str, tmp_path: Path, iowall_env: dict[str, str]
) -> None:
    text = PLAN.format(rw="write", extra="").replace("end_fsync = 1", "end_fsync = 1\n" + workload)
    if workload.startswith("rw ="):
        text = text.replace('rw = "write"\n', "", 1)
    p = tmp_path / "bad.toml"
    p.write_text(text)
    cp = iowall("run", str(p), env=iowall_env)
    assert cp.returncode == 2, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0] and "0x40" in lines[0], lines
    assert Store(iowall_env["IOWALL_DB"]).count() == 0
