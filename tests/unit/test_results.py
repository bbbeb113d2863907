"""The Report object: a stored report reads back whole, newer versions are refused, and the
text layout keeps to 80 columns for prose."""

from __future__ import annotations

import json
import math

import pytest

from iowall.report.emit import Format, render
from iowall.report.table import cell_text
from iowall.results import REPORT_VERSION, Report, Section, Table, Value
from iowall.vocab.units import GIB, MIB


def sample() -> Report:
    return Report(
        kind="recipe",
        name="r",
        title="r (seed 000): a title",
        head=("on ram xfs",),
        sections=(
            Section("Ceilings", Table.of(["a", "b"], [["x", "1"]], left=1, headless=True)),
            Section(
                "",
                Table.of(
                    ["jobs", "bw", "p99"],
                    [["1", Value(1.5 * GIB, "B/s", spread=0.12), Value(2e-3, "s", interval=(1e-3, 4e-3))]],
                ),
                bullets=("a sentence " * 12,),
            ),
        ),
        notes=("how it was measured",),
        why=({"point": "p", "run": 3, "fired": []},),
        tail=("runs 1-2",),
        label="l",
        batch="b-1",
        run_ids=(1, 2),
        data={"table": [1, 2]},
        compare_sides=(("base", (1,)), ("new", (2,))),
    )


def test_round_trip() -> None:
    r = sample()
    back = Report.from_json(json.loads(json.dumps(r.to_json())))
    assert back == r
    assert render(back, Format.text) == render(r, Format.text)


def test_newer_versions_are_refused() -> None:
    doc = sample().to_json()
    doc["report_version"] = REPORT_VERSION + 1
    with pytest.raises(ValueError, match="version"):
        Report.from_json(doc)


def test_text_layout() -> None:
    text = render(sample(), Format.text)
    lines = text.splitlines()
    assert lines[0] == "r (seed 000): a title" and "  x  1" in lines  # headless table
    assert max(len(line) for line in lines) <= 80
    assert "how it was measured" in text and "runs 1-2" in text
    doc = json.loads(render(sample(), Format.json))
    assert doc["schema_version"] == 1 and doc["table"] == [1, 2] and doc["run_ids"] == [1, 2]
    with pytest.raises(Exception, match="not available"):
        render(sample(), Format.csv)


def test_numbers_keep_their_units_and_only_the_renderer_formats_them() -> None:
    doc = json.loads(render(sample(), Format.json))
    bw = doc["sections"][1]["table"]["rows"][0][1]
    assert bw == {"value": 1.5 * GIB, "unit": "B/s", "spread": 0.12}
    text = render(sample(), Format.text)
    assert "1536MiB/s ±12%" in text and "2.00ms [1.00ms, 4.00ms]" in text
    few = Value(2e-3, "s", interval=(1e-3, math.inf))
    assert few.to_json()["interval"] == [1e-3, None]  # JSON has no infinity
    assert (
        cell_text(Value.from_json(json.loads(json.dumps(few.to_json()))))
        == "2.00ms (too few runs for a 95% interval)"
    )
    assert [
        cell_text(Value(x, u))
        for x, u in (
            (0.25, "ratio"),
            (-0.078, "change"),
            (0.15, "percent"),
            (None, "B/s"),
            (math.nan, "s"),
            (0.9, "bytes_per_byte"),
        )
    ] == ["0.25", "-7.8%", "15%", "-", "-", "922 MiB/GiB"]
    assert cell_text(Value(GIB, "B/s", upto=1.1 * GIB)) == "1024MiB/s–1126MiB/s"
    assert cell_text(Value(3 * MIB, "B/s", interval=(2 * MIB, 4 * MIB))) == "3MiB/s [2MiB/s, 4MiB/s]"


def test_version_1_text_cells_still_read() -> None:
    doc = sample().to_json()
    doc["report_version"] = 1
    doc["sections"][1]["table"]["rows"] = [["1", "1536MiB/s ±12%", "2.00ms"]]
    back = Report.from_json(doc)
    assert back.sections[1].table is not None
    assert back.sections[1].table.rows == (("1", "1536MiB/s ±12%", "2.00ms"),)
