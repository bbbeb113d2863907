"""`iowall scaling` end to end: synthetic runs stored in a private store, the installed CLI run
as a child, every format, the plot, and the one-line errors (exit 2)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from iowall.analysis.scaling.usl import usl
from iowall.model import Metric, Point, Run
from iowall.store import Store
from tests.conftest import iowall

pytestmark = pytest.mark.beside  # measures nothing: phase 1 of make test

MIB = 1 << 20
NS = (1, 2, 4, 6, 8)


def _sweep(label: str, sigma: float, kappa: float) -> list[Run]:
    out = []
    for rep, w in enumerate((0.98, 1.0, 1.02)):
        for n in NS:
            x = float(usl(n, 300 * MIB, sigma, kappa)) * (w if n % 4 else 2 - w)
            out.append(
                Run(
                    point=Point("limits", {"kind": "fio", "rw": "write", "direct": 0, "jobs": n, "bs": "2m"}),
                    label=label,
                    status="ok",
                    started_at=float(rep),
                    finished_at=rep + 1.0,
                    metrics=(
                        Metric("write_bw_bytes_per_s", x, "B/s"),
                        Metric("write_runtime_s", 2.0, "s", "lower"),
                    ),
                    env={"kernel": f"6.{label}", "host": {"hostname": "h"}},
                    bed={"kind": "ram", "fs": "xfs"},
                    repeat_index=rep,
                )
            )
    return out


@pytest.fixture
def stored(db_url: str) -> str:
    s = Store(db_url)
    s.add_runs(_sweep("base", 0.02, 0.002) + _sweep("patched", 0.15, 0.002))
    # buffered-wall: one job count only, no sweep
    s.add_runs(
        [
            Run(
                point=Point("buffered-wall", {"variant": "seq", "direct": d, "jobs": 2}),
                label="bw",
                status="ok",
                started_at=0.0,
                finished_at=1.0,
                metrics=(Metric("write_bw_bytes_per_s", 1e9, "B/s"),),
            )
            for d in (0, 1)
        ]
    )
    return db_url


def test_two_labels_text_and_json(stored: str, iowall_env: dict[str, str]) -> None:
    cp = iowall("scaling", "base", "patched", env=iowall_env, check=True)
    out = cp.stdout
    assert "limits — base" in out and "limits — patched" in out
    assert "Side by side" in out and "USL: σ" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    cp = iowall("scaling", "base", "patched", "--format", "json", env=iowall_env, check=True)
    doc = json.loads(cp.stdout)
    assert doc["schema_version"] == 1 and doc["labels"] == ["base", "patched"]
    base, patched = doc["curves"]
    assert [p["n"] for p in base["points"]] == list(NS)
    assert base["fit"]["sigma"] < patched["fit"]["sigma"]
    assert base["knee"] is not None and patched["knee"] < base["knee"]
    (row,) = doc["side_by_side"]
    assert [e["label"] for e in row["entries"]] == ["base", "patched"]


def test_selection_fields_and_options(stored: str, iowall_env: dict[str, str]) -> None:
    # one selection holding two labels: one side per label
    cp = iowall("scaling", "recipe=limits", "--format", "json", env=iowall_env, check=True)
    assert json.loads(cp.stdout)["labels"] == ["base", "patched"]
    # two selections by kernel: the sides are named by the selections
    cp = iowall(
        "scaling",
        "kernel=6.base",
        "kernel=6.patched",
        "--knee",
        "0.95",
        "--format",
        "json",
        env=iowall_env,
        check=True,
    )
    doc = json.loads(cp.stdout)
    assert doc["labels"] == ["kernel=6.base", "kernel=6.patched"]
    assert doc["knee_threshold"] == 0.95 and doc["curves"][0]["knee"] <= 4
    cp = iowall("scaling", "base", "--format", "csv", env=iowall_env, check=True)
    rows = list(csv.DictReader(io.StringIO(cp.stdout)))
    assert [r["n"] for r in rows] == [str(n) for n in NS]
    cp = iowall("scaling", "base", "--format", "md", env=iowall_env, check=True)
    assert cp.stdout.startswith("# iowall scaling") and "| jobs |" in cp.stdout


def test_plot(stored: str, iowall_env: dict[str, str], tmp_path: Path) -> None:
    svg = tmp_path / "s.svg"
    iowall("scaling", "base", "patched", "--plot", str(svg), env=iowall_env, check=True)
    body = svg.read_text()
    assert body.lstrip().startswith("<?xml") or "<svg" in body
    assert "usl-0" in body and "usl-1" in body  # a fitted line per label


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["nosuchlabel"], "selection 'nosuchlabel' matches no completed runs"),
        (["ids=x"], "run ids 'x'"),
        (["colour=red"], "unknown field 'colour'"),
        (
            ["bw"],
            "no thread sweep in 'bw': every group of runs has a single thread count (buffered-wall jobs=2)",
        ),
        (["base", "bw"], "no thread sweep in 'bw'"),
        (["base", "--metric", "write_runtime_s"], "no thread sweep in 'base': write_runtime_s is a time"),
        (["base", "--metric", "nope"], "no run of the sweep has metric nope"),
        (["base", "--knee", "1.5"], "--knee 1.5"),
        (["base", "--format", "xml"], "--format 'xml'"),
        (["base", "base"], "selection 'base' is given twice"),
        (["base", "--plot", "x.pdf"], "name the file .png or .svg"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    stored: str, iowall_env: dict[str, str], args: list[str], expect: str
) -> None:
    cp = iowall("scaling", *args, env=iowall_env)
    assert cp.returncode == 2, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iowall: error: "), cp.stderr
    assert expect in lines[0]
    assert cp.stdout == ""
