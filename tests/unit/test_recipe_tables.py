"""The seed recipes' tables with several stored labels: one row per point and label, within
100 columns (side by side they were 148-207), the labels' names kept in the JSON; their
value cells numbers with units (``Value``), formatted only by the renderer."""

from __future__ import annotations

import json

from iowall.beds import BedSpec
from iowall.measure.repeat import RepeatPolicy
from iowall.model import Metric, Point, Run
from iowall.recipes import bdev_rwmix, buffered_wall, small_file_writeback
from iowall.recipes.tables import WIDTH, Columns, LabelRow, LabelTable, lay_out, recipe_report
from iowall.report.recipe import render_json, render_md, render_text, report_json
from iowall.results import Report, Value


def _columns(runs: list[Run], labels: tuple[str, ...]) -> Columns:
    samples: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        samples.setdefault((r.point.key(), r.label), []).append(r)
    return Columns(labels, samples)


def _run(point: Point, label: str, rid: int, **metrics: float) -> Run:
    return Run(point, label, "ok", 0.0, 1.0, tuple(Metric(k, v, "") for k, v in metrics.items()), id=rid)


def _table_lines(text: str) -> list[str]:
    """The lines of the report's first table (up to its legend or the blank line after it)."""
    lines = text.splitlines()[2:]
    end = next(i for i, ln in enumerate(lines) if not ln or ln.startswith("  - "))
    return lines[:end]


def test_small_file_writeback_with_three_labels_fits() -> None:
    labels = ("small-file-writeback", "patched-6.19-rc3", "base-6.18")
    ceiling = Point("small-file-writeback", {"kind": "dio-ceiling", "jobs": 2})
    streams = [
        Point("small-file-writeback", {"kind": "smallfiles", "variant": v, "threads": 2})
        for v in ("default", "extsize")
    ]
    runs, rid = [], 0
    for i, lab in enumerate(labels):
        rid += 1
        runs.append(_run(ceiling, lab, rid, write_iops=1_327_949.0 + i))
        for p in streams:
            rid += 1
            runs.append(
                _run(
                    p,
                    lab,
                    rid,
                    files_per_s=139_990.0 + i,
                    disk_write_iops=11_540.0,
                    flusher_cpu_share=0.13,
                    throttle_pause_s=12.5,
                )
            )
    cols = _columns(runs, labels)
    table = small_file_writeback._table(cols, runs)
    rep = recipe_report(
        "small-file-writeback", "t", label=labels[-1], batch="b", cols=cols, table=table, notes=(), runs=runs
    )
    text = render_text(rep)
    lines = _table_lines(text)
    assert max(map(len, lines)) <= WIDTH
    assert lines[0].split()[:3] == ["Label", "Variant", "Threads"]
    assert [ln.split()[0] for ln in lines[1:]] == ["A", "B", "C"] * 2  # a row per label
    assert "  - A: small-file-writeback" in text and "  - C: base-6.18" in text
    # the old layout, every label side by side, was far wider
    side = LabelTable(
        table.keys,
        tuple(f"{v} [{lab}]" for v in table.values for lab in labels),
        tuple(LabelRow(r.keys, tuple((c,) for v in r.values for c in v)) for r in table.rows),
        table.left,
    )
    assert (
        max(
            map(
                len,
                render_text(
                    recipe_report(
                        "small-file-writeback",
                        "t",
                        label="x",
                        batch="b",
                        cols=Columns(("x",), {}),
                        table=side,
                        notes=(),
                        runs=[],
                    )
                ).splitlines(),
            )
        )
        > 140
    )
    doc = report_json(rep)
    assert doc["table"]["headers"][0] == "Label"
    assert [r[0] for r in doc["table"]["rows"]] == list(labels) * 2  # names, not letters
    assert doc["table"]["rows"][1][2:5] == [
        "2",
        {"value": 139_991.0, "unit": "files/s"},
        {"value": 11_540.0, "unit": "ops_per_s"},
    ]
    # the report's own table keeps the names too (the text alone shows letters), and so does
    # a stored report printed again
    assert [r[0] for r in doc["sections"][0]["table"]["rows"]] == list(labels) * 2
    assert "| base-6.18 | default |" in render_md(rep) and "- A:" not in render_md(rep)
    again = render_text(Report.from_json(json.loads(json.dumps(rep.to_json()))))
    assert again.split("\nnotes\n")[0] == text.split("\nnotes\n")[0]  # the compare is not stored


def test_two_short_labels_are_named_and_one_label_is_unchanged() -> None:
    points = {d: Point("buffered-wall", {"direct": d, "variant": "normal", "jobs": 2}) for d in (0, 1)}
    runs = [
        _run(points[d], lab, i, write_bw_bytes_per_s=(4 if d else 1.5) * 2**30 * (1 + k))
        for i, (k, lab, d) in enumerate((k, lab, d) for k, lab in enumerate(("old", "new")) for d in (0, 1))
    ]
    o = buffered_wall._Options("normal", 2, 2, (0, 1), "xfs", 1 << 30, RepeatPolicy(1), "new", BedSpec("ram"))
    two = _columns(runs, ("old", "new"))
    text = render_text(
        recipe_report(
            "buffered-wall",
            "t",
            label="new",
            batch="b",
            cols=two,
            table=buffered_wall._table(o, two, runs),
            notes=(),
            runs=runs,
        )
    )
    lines = _table_lines(text)
    assert lines[0].split() == ["Label", "Variant", "Jobs", "Direct", "Buffered", "Buffered/Direct"]
    assert [ln.split()[0] for ln in lines[1:]] == ["old", "new"]
    assert lines[2].split()[-1] == "0.38" and "- A:" not in text
    one = _columns([r for r in runs if r.label == "new"], ("new",))
    t = lay_out(buffered_wall._table(o, one, runs), one.labels)
    assert t.headers == ("Variant", "Jobs", "Direct", "Buffered", "Buffered/Direct")
    assert t.rows == (
        ("normal", "2", Value(8 * 2**30, "B/s"), Value(3 * 2**30, "B/s"), Value(0.375, "ratio")),
    )
    assert t.left == 1 and t.fit_width is None


def _buffered_report(runs: list[Run]) -> Report:
    o = buffered_wall._Options("normal", 2, 2, (0, 1), "xfs", 1 << 30, RepeatPolicy(1), "x", BedSpec("ram"))
    cols = _columns(runs, ("x",))
    table = buffered_wall._table(o, cols, runs)
    return recipe_report(
        "buffered-wall", "t", label="x", batch="b", cols=cols, table=table, notes=(), runs=runs
    )


def test_a_seed_recipe_table_is_numbers_with_units_in_json_and_text_as_before() -> None:
    points = {d: Point("buffered-wall", {"direct": d, "variant": "normal", "jobs": 2}) for d in (0, 1)}
    runs = [_run(points[1], "x", 1, write_bw_bytes_per_s=4.0 * 2**30)]
    runs.append(_run(points[0], "x", 2, write_bw_bytes_per_s=1.5 * 2**30))
    doc = json.loads(render_json(_buffered_report(runs)))
    row = ["normal", "2", {"value": 4.0 * 2**30, "unit": "B/s"}, {"value": 1.5 * 2**30, "unit": "B/s"}]
    assert doc["table"]["rows"] == [[*row, {"value": 0.375, "unit": "ratio"}]]
    assert doc["sections"][0]["table"]["rows"] == doc["table"]["rows"]
    lines = _table_lines(render_text(_buffered_report(runs)))
    assert lines[1].split() == ["normal", "2", "4096MiB/s", "1536MiB/s", "0.38"]
    # a point not measured: no number, its unit kept; the text reads "-"
    doc = json.loads(render_json(_buffered_report(runs[:1])))
    assert doc["table"]["rows"][0][3:] == [{"value": None, "unit": "B/s"}, {"value": None, "unit": "ratio"}]
    assert _table_lines(render_text(_buffered_report(runs[:1])))[1].split()[2:] == ["4096MiB/s", "-", "-"]


def test_bdev_rwmix_reads_and_writes_are_columns_of_rates() -> None:
    points = [Point("bdev-rwmix", {"rwmixwrite": m}) for m in (0, 30)]
    bw = {f"inst{i}_read_bw_bytes_per_s": 100.0 * 2**20 * i for i in range(1, 5)}
    runs = [
        _run(points[0], "x", 1, **bw),
        _run(points[1], "x", 2, **bw, **{f"inst{i}_write_bw_bytes_per_s": 50.0 * 2**20 for i in range(1, 5)}),
    ]
    cols = _columns(runs, ("x",))
    rep = recipe_report(
        "bdev-rwmix",
        "t",
        label="x",
        batch="b",
        cols=cols,
        table=bdev_rwmix._table(cols, runs),
        notes=(),
        runs=runs,
    )
    doc = report_json(rep)
    assert doc["table"]["headers"] == ["", "Read", "Write"]
    assert doc["table"]["rows"][0] == ["read-only", "", ""]  # a heading row
    assert doc["table"]["rows"][2][1:] == [
        {"value": 200.0 * 2**20, "unit": "B/s"},
        {"value": None, "unit": "B/s"},
    ]
    assert doc["table"]["rows"][7][1:] == [
        {"value": 200.0 * 2**20, "unit": "B/s"},
        {"value": 50.0 * 2**20, "unit": "B/s"},
    ]
    lines = _table_lines(render_text(rep))
    assert lines[3].split() == ["Instance", "2", "200MiB/s", "-"] and lines[8].split()[-1] == "50MiB/s"
