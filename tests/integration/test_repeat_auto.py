"""`iowall run PLAN --repeat auto[:MAX]` end to end: real fio on a tmpfs bed; rounds run only
the points not yet decided, the JSON says why each point stopped, and so does the note
stored on its last run."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from iowall.analysis.regress.repeat_rule import decided
from iowall.store import RunFilter, Store
from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

PLAN = """\
    label = "tiny"
    repeat = 2
    [workload]
    kind = "fio"
    rw = "write"
    bs = "1M"
    size = "8M"
    [bed]
    kind = "tmpfs"
    size = "256M"
    [axes]
    jobs = [1, 2]
    """


def tiny_plan(tmp_path: Path) -> str:
    p = tmp_path / "tiny.toml"
    p.write_text(textwrap.dedent(PLAN))
    return str(p)


def test_auto_to_the_maximum(tmp_path: Path, iowall_env: dict[str, str], no_leftovers: None) -> None:
    # 4 runs cannot bound a 95% interval of the median (6 can): every point hits the maximum
    cp = iowall(
        "run", tiny_plan(tmp_path), "--repeat", "auto:4", "--format", "json", env=iowall_env, timeout=120
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["repeat"]["policy"] == {
        "mode": "auto",
        "max": 4,
        "target": 0.02,
        "confidence": 0.95,
        "spec": "auto:4",
    }
    dec = doc["repeat"]["decisions"]
    assert set(dec) == {"jobs=1", "jobs=2"}
    for d in dec.values():
        assert (d["n"], d["runs"], d["decided"], d["stopped"]) == (4, 4, False, True)
        assert d["achieved"] is None and d["metric"] == "write_bw_bytes_per_s"
        assert d["reason"].startswith("stopped at the maximum of 4 runs, undecided")
    # interleaved rounds, both points in each
    assert [r["point"]["jobs"] for r in doc["runs"]] == [1, 2] * 4
    runs = Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=doc["batch"]))
    assert [r.status for r in runs] == ["ok"] * 8
    for r in runs:
        notes = [n for n in r.notes if n.startswith("repeat auto")]
        if r.repeat_index == 3:
            assert notes == [
                "repeat auto on write_bw_bytes_per_s: " + dec[f"jobs={r.point.params['jobs']}"]["reason"]
            ]
        else:
            assert notes == []
        assert r.env["repeat"]["spec"] == "auto:4"
    # the text report says how many runs each point got and which stayed undecided
    cp = iowall("run", tiny_plan(tmp_path), "--repeat", "auto:4", env=iowall_env, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert "repeat auto (max 4, target ±2%): 4 runs per point" in cp.stdout
    assert "undecided at the maximum of 4 runs: jobs=1" in cp.stdout


def test_auto_stops_a_point_once_decided(
    tmp_path: Path, iowall_env: dict[str, str], no_leftovers: None
) -> None:
    # A ±90% target: decided at the first run count that bounds the interval (6 on a quiet
    # machine), not 8. The runs' own values say which count that is: a run twice as slow as
    # the others (the host taking the CPUs, a writeback stall) moves it, and then auto goes on.
    # (64M, so that fio's millisecond clock does not quantise the bandwidth by 2x.)
    cp = iowall(
        "run",
        tiny_plan(tmp_path),
        "--repeat",
        "auto:8",
        "--target",
        "90%",
        "--set",
        "jobs=1",
        "--set",
        "size=64M",
        "--format",
        "json",
        env=iowall_env,
        timeout=120,
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    (d,) = doc["repeat"]["decisions"].values()
    runs = sorted(
        Store(iowall_env["IOWALL_DB"]).runs(RunFilter(batch=doc["batch"])), key=lambda r: r.repeat_index
    )
    bw = [r.metric("write_bw_bytes_per_s") for r in runs]
    first = next((n for n in range(6, 9) if decided(bw[:n], rel_halfwidth=0.9)), None)  # type: ignore[arg-type]
    assert (d["n"], d["decided"], d["target"]) == (first or 8, first is not None, 0.9), bw
    assert Counter(r["repeat_index"] for r in doc["runs"]) == {i: 1 for i in range(d["n"])}
    if first is not None:
        assert d["reason"].startswith(f"decided after {first} runs") and d["achieved"] <= 0.9
    assert doc["plan"]["repeat"] == "auto:8"


def test_bad_repeat_and_target_are_one_line(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    plan = tiny_plan(tmp_path)
    for args, msg in (
        (["--repeat", "often"], "--repeat: use a number ≥ 1 or auto[:MAX] (got 'often')"),
        (["--repeat", "3", "--target", "2%"], "--target applies to --repeat auto"),
        (["--repeat", "auto", "--target", "2"], "--target: use a percentage"),
    ):
        cp = iowall("run", plan, *args, env=iowall_env)
        assert cp.returncode == 2, cp.stderr
        lines = cp.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("iowall: error: ") and msg in lines[0]
    assert Store(iowall_env["IOWALL_DB"]).count() == 0
