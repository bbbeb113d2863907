"""`iowall plot flame` on runs recorded for real (a plan with the profile probe on tmpfs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from iowall.analysis.explain.kernel_paths import attribute, decode_folded
from iowall.probes.profile import ARTIFACT, COLLAPSE, inferno_tool
from iowall.report.flame import FRAMES_WIDTH, FRAMES_WIDTH_CLAMPED
from iowall.store import Store
from tests.conftest import iowall, needs_root

pytestmark = [
    needs_root,
    pytest.mark.slow,
    pytest.mark.skipif(
        inferno_tool(COLLAPSE) is None or not os.path.exists("/usr/bin/perf"),
        reason="perf or inferno missing (make setup)",
    ),
]

PLAN = """label = "flame"
repeat = 1
probes = ["profile"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "256M"
direct = 0
[bed]
kind = "tmpfs"
[axes]
jobs = [1, 2]
"""


def flame(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return iowall("plot", "flame", *args, env=env, timeout=300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[int], dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("flame")
    env = dict(
        os.environ,
        IOWALL_DB=f"sqlite:///{tmp / 'db.sqlite'}",
        XDG_DATA_HOME=str(tmp / "data"),
        XDG_STATE_HOME=str(tmp / "state"),
    )
    (tmp / "plan.toml").write_text(PLAN)
    doc = json.loads(iowall("run", str(tmp / "plan.toml"), "--format", "json", env=env, check=True).stdout)
    noprof = json.loads(
        iowall(
            "run",
            str(tmp / "plan.toml"),
            "--set",
            "jobs=1",
            "--probes",
            "cpu",
            "--format",
            "json",
            env=env,
            check=True,
        ).stdout
    )
    return doc["run_ids"] + noprof["run_ids"], env, tmp


def svg_titles(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    return [e.text or "" for e in root.iter() if e.tag.endswith("title")]


def test_one_run(recorded: tuple[list[int], dict[str, str], Path]) -> None:
    (a, _b, _c), env, tmp = recorded
    out = tmp / "one.svg"
    r = flame(env, str(a), "-o", str(out))
    assert r.returncode == 0, r.stderr
    run = Store(env["IOWALL_DB"]).get_run(a)
    stacks = decode_folded(next(x for x in run.artifacts if x.name == ARTIFACT).body)
    titles = " ".join(svg_titles(out))
    top = attribute(stacks).ranked()[0]
    # the heaviest function of the heaviest path is a frame of the graph, with its count
    fn = top.top_functions[0].name.split(" ")[0]
    assert fn in titles
    assert f"all ({sum(stacks.values())} samples" in titles.replace(",", "")
    # inferno's script is the one the clamp was written for (report/flame.py's FRAMES_WIDTH)
    assert FRAMES_WIDTH_CLAMPED in out.read_text() and FRAMES_WIDTH not in out.read_text()


def test_two_runs_differential(recorded: tuple[list[int], dict[str, str], Path]) -> None:
    (a, b, _c), env, tmp = recorded
    out = tmp / "diff.svg"
    r = flame(env, str(a), str(b), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    svg_titles(out)
    assert FRAMES_WIDTH_CLAMPED in text
    # coloured by the difference: some frames red (more in b), some not white
    fills = set(re.findall(r'fill="rgb\((\d+),(\d+),(\d+)\)"', text))
    assert any(int(r_) > int(b_) for r_, _g, b_ in fills)
    assert f"run {a} -&gt; run {b}" in text or f"run {a} -> run {b}" in text


def test_bad_input(recorded: tuple[list[int], dict[str, str], Path]) -> None:
    (a, _b, c), env, tmp = recorded
    for args, msg in (
        ((str(a), "-o", str(tmp / "x.png")), "name the file .svg"),
        (("99999", "-o", str(tmp / "x.svg")), "no run 99999"),
        ((str(c), "-o", str(tmp / "x.svg")), f"run {c} has no profile data"),
        (("abc", "-o", str(tmp / "x.svg")), "is not a run id"),
        ((str(a), str(a), str(a), "-o", str(tmp / "x.svg")), "one run or two"),
    ):
        r = flame(env, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp / "x.svg").exists() and not (tmp / "x.png").exists()
