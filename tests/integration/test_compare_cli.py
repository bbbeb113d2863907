"""`iowall compare` end to end on a private store: selections, formats, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.store import Store

from ..conftest import iowall
from ..unit.compare_data import runs

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test


def _fill(db_url: str) -> None:
    s = Store(db_url)
    for r in (
        runs("base", seed=1)
        + runs("patched", seed=2, scale={"0": 0.9}, kernel="6.18.44+")
        + runs("again", seed=3)
    ):
        s.add_run(r)


def test_compare_labels_text_json_csv_html(db_url: str, iowall_env: dict[str, str], tmp_path: Path) -> None:
    _fill(db_url)
    cp = iowall("compare", "base", "patched", env=iowall_env, check=True)
    assert "worse" in cp.stdout and "kernel" in cp.stdout
    assert max(len(line) for line in cp.stdout.splitlines()) <= 80
    doc = json.loads(
        iowall(
            "compare", "--base", "base", "--new", "patched", "--format", "json", env=iowall_env, check=True
        ).stdout
    )
    worse = {
        (r["point"]["direct"], r["point"]["jobs"])
        for r in doc["rows"]
        if r["metric"] == "write_bw_bytes_per_s" and r["better"] is False
    }
    assert worse == {(0, 1), (0, 2)}
    assert doc["differences"] == [{"field": "kernel", "values": ["6.18.44", "6.18.44+"]}]
    by_kernel = json.loads(
        iowall(
            "compare",
            "kernel=6.18.44,label=base",
            "kernel=6.18.44+",
            "--format",
            "json",
            env=iowall_env,
            check=True,
        ).stdout
    )
    assert by_kernel["compared"] == "label,kernel" and by_kernel["rows"]
    csv_out = iowall("compare", "base", "patched", "--format", "csv", env=iowall_env, check=True).stdout
    assert csv_out.splitlines()[0].startswith("label,point,metric")
    page = tmp_path / "cmp.html"
    iowall(
        "compare", "base", "patched", "again", "--format", "html", "-o", str(page), env=iowall_env, check=True
    )
    assert page.read_text().startswith("<!doctype html>")


def test_a_a_marks_almost_nothing(db_url: str, iowall_env: dict[str, str]) -> None:
    """Two draws of the same runs: each row is called at most 5% of the time (the rule's
    calibration, tests/unit/test_rule_calibration.py), so of these four points at most one
    (bandwidth and IOPS of a point are one measurement); these seeds give one: buffered at
    1 job, whose medians are 3.5% apart by chance."""
    _fill(db_url)
    doc = json.loads(
        iowall("compare", "base", "again", "--format", "json", env=iowall_env, check=True).stdout
    )
    called = [r for r in doc["rows"] if r["significant"]]
    assert doc["rows"] and len({(r["point_text"]) for r in called}) <= 1, called


def test_bad_input_exits_2_with_one_line(db_url: str, iowall_env: dict[str, str]) -> None:
    _fill(db_url)
    for args, needle in (
        (["base"], "needs a base and at least one new"),
        (["base", "nosuchlabel"], "matches no completed runs"),
        (["base", "patched", "--floor", "lots"], "--floor"),
        (["base", "patched", "--format", "xml"], "--format"),
        (["base", "colour=red"], "unknown field"),
        (["base", "missing.json"], "no such file"),
        (["base", "ids=1-3"], "in both"),
        (["base", "base"], "given twice"),
        (["label=base", "recipe=buffered-wall"], "in both"),
        (["base", "patched", "--metric", "nosuch_*"], "nothing to compare"),
    ):
        cp = iowall("compare", *args, env=iowall_env)
        assert cp.returncode == 2, (args, cp.stderr)
        assert needle in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
