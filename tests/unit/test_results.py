"""The Report object: a stored report reads back whole, newer versions are refused, and the
text layout keeps to 80 columns for prose."""

from __future__ import annotations

import json

import pytest

from iowall.report.emit import Format, render
from iowall.results import REPORT_VERSION, Report, Section, Table


def sample() -> Report:
    return Report(kind="recipe", name="r", title="r (seed 000): a title", head=("on ram xfs",),
                  sections=(Section("Ceilings", Table.of(["a", "b"], [["x", "1"]], left=1,
                                                          headless=True)),
                            Section("", Table.of(["jobs", "MiB/s"], [["1", "2.0"]]),
                                    bullets=("a sentence " * 12,))),
                  notes=("how it was measured",), why=({"point": "p", "run": 3, "fired": []},),
                  tail=("runs 1-2",), label="l", batch="b-1", run_ids=(1, 2),
                  data={"table": [1, 2]}, compare_sides=(("base", (1,)), ("new", (2,))))


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
