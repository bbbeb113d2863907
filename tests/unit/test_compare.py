"""compare: pairing by fingerprint, differences, the significance call, and the tables
(golden files: regenerate with IOWALL_UPDATE_GOLDEN=1 after a deliberate change)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
from pathlib import Path

import pytest

from iowall.analysis.regress.compare import Side, compare, constant_knobs, select_metrics, shared_run
from iowall.analysis.regress.stats import compare_samples
from iowall.bundle.files import read_bundle, write_bundle
from iowall.model import Run
from iowall.report.compare import render_csv, render_html, render_json, render_md, render_text

from .compare_data import runs

GOLDEN = Path(__file__).parent.parent / "golden"


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("IOWALL_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; diff against {path}"


def two_sides() -> tuple[list, list]:
    base = runs("base", seed=1)
    new = runs("patched", seed=2, scale={"0": 0.9}, kernel="6.18.44+", start_id=100)
    return base, new


def test_true_slowdown_is_marked_worse_and_unchanged_points_are_not_marked() -> None:
    base, new = two_sides()
    res = compare(Side("base", base), [Side("patched", new)])
    bw = {r.point["direct"]: [] for r in res.rows}
    for r in res.rows:
        if r.metric == "write_bw_bytes_per_s":
            bw[r.point["direct"]].append(r)
    assert all(r.cmp.significant and r.cmp.better is False for r in bw[0])
    assert not any(r.cmp.significant for r in bw[1])
    for r in res.rows:
        assert r.cmp.ci_low <= r.cmp.ratio <= r.cmp.ci_high
        assert r.cmp.n_base == r.cmp.n_new == 5
    assert 0.85 < res.geomean["patched"]["write_bw_bytes_per_s"] < 1.0


def test_lower_is_better_metrics_mark_the_right_way() -> None:
    base, new = two_sides()
    res = compare(Side("base", base), [Side("patched", new)], metrics=["write_clat_p99_s"])
    slow = [r for r in res.rows if r.point["direct"] == 0 and r.cmp.significant]
    assert slow and all(r.cmp.ratio > 1 and r.cmp.better is False for r in slow)


def test_a_against_a_marks_nothing() -> None:
    a = runs("a", seed=5)
    b = runs("b", seed=6, start_id=100)
    res = compare(Side("a", a), [Side("b", b)])
    assert res.rows and not any(r.cmp.significant for r in res.rows)
    assert [d.field for d in res.differences] == []


def test_headline_metrics_by_default_probe_metrics_on_request() -> None:
    names = [
        "write_bw_bytes_per_s",
        "disk_write_bytes_per_s",
        "cpu_sys_share",
        "write_iops",
        "disk_write_iops",
        "inst0_read_bw_bytes_per_s",
        "create_files_per_s",
        "create_wall_s",
    ]
    assert select_metrics(names, None) == [
        "inst0_read_bw_bytes_per_s",
        "write_bw_bytes_per_s",
        "write_iops",
        "create_files_per_s",
        "create_wall_s",
    ]
    assert select_metrics(names, ["cpu_*"]) == ["cpu_sys_share"]
    assert select_metrics(names, ["all"]) == sorted(names)


def test_differences_list_sysctls_and_bed_but_not_the_compared_field() -> None:
    base = runs("base", seed=1)
    new = runs(
        "tuned",
        seed=2,
        dirty_bytes="4194304",
        start_id=100,
        bed={**runs("x", n=1)[0].bed, "mount_opts": "noatime"},
    )
    res = compare(Side("base", base), [Side("tuned", new)])
    fields = {d.field: d.values for d in res.differences}
    assert fields["sysctl vm.dirty_bytes"] == ("0", "4194304")
    assert "label" not in fields
    # a mount option is part of the fingerprint: nothing pairs, and the report says why
    assert not res.rows
    assert res.unpaired and "mount_opts" in res.unpaired[0].reason


def test_constant_knob_is_the_treatment_and_a_swept_knob_stays_in_the_point() -> None:
    base = runs("base", seed=1)
    new = runs("small-dirty", seed=2, params={"sysctl:vm.dirty_bytes": 8 << 20}, start_id=100)
    assert constant_knobs(new) == {"sysctl:vm.dirty_bytes": 8 << 20}
    res = compare(Side("base", base), [Side("small-dirty", new)])
    assert len({r.point_text for r in res.rows}) == 4
    assert "knob sysctl:vm.dirty_bytes" in {d.field for d in res.differences}
    swept = runs("sweep", seed=3, params={"sysctl:vm.dirty_bytes": 1}, start_id=200) + runs(
        "sweep", seed=4, params={"sysctl:vm.dirty_bytes": 2}, start_id=300
    )
    res2 = compare(Side("sweep", swept), [Side("sweep2", swept)])
    assert len({r.point_text for r in res2.rows}) == 8


def test_host_shape_refuses_pairing() -> None:
    base = runs("base", seed=1)
    other = [
        r.__class__(**{**r.__dict__, "env": {**r.env, "host": {**r.env["host"], "cpu_count": 128}}})
        for r in runs("big", seed=2, start_id=100)
    ]
    res = compare(Side("base", base), [Side("big", other)])
    assert not res.rows and "cpu_count 2 vs 128" in res.unpaired[0].reason


def test_runs_of_two_hosts_a_side_pair_each_host_with_its_own() -> None:
    """A fleet's label holds every host's runs: compare pairs each host's runs with the same
    host's on the other side (its shape is in the fingerprint), never one host's with
    another's (the fleet test's two hosts, 1 and 2 CPUs, stored under two labels)."""

    def on(host: str, cpus: int, rs: list[Run]) -> list[Run]:
        shape = {"hostname": host, "cpu_count": cpus}
        return [dataclasses.replace(r, env={**r.env, "host": {**r.env["host"], **shape}}) for r in rs]

    base = on("a", 1, runs("t", seed=1)) + on("b", 2, runs("t", seed=2, start_id=100))
    new = on("a", 1, runs("u", seed=3, start_id=200)) + on("b", 2, runs("u", seed=4, start_id=300))
    res = compare(Side("t", base), [Side("u", new)], metrics=["write_bw_bytes_per_s"])
    assert not res.unpaired and res.rows
    host = {r.id: r.env["host"]["hostname"] for r in base + new}
    for row in res.rows:
        (side,) = {host[i] for i in row.base_runs}
        assert {host[i] for i in row.new_runs} == {side}
    assert len(res.rows) == 2 * len({r.point_text for r in res.rows if r.base_runs[0] < 100})


def test_a_marked_row_of_one_invocation_a_side_says_so() -> None:
    # each side's five runs from one invocation (one batch): their interval cannot see the
    # drift between the two invocations, and the note says so; five invocations a side, none
    def batched(rs: list, name: str, per_run: bool) -> list:
        return [dataclasses.replace(r, batch=f"{name}{r.repeat_index if per_run else ''}") for r in rs]

    slow = {"0": 0.8, "1": 0.8}
    for per_run, said in ((False, True), (True, False)):
        base = batched(runs("a"), "a", per_run)
        new = batched(runs("b", scale=slow, start_id=50, seed=2), "b", per_run)
        res = compare(Side("a", base), [Side("b", new)])
        assert any(r.cmp.significant for r in res.rows)
        assert any(n.startswith("a marked row's sides are one invocation each") for n in res.notes) is said
    # batches not known (runs stored before them): nothing said
    res = compare(Side("a", runs("a")), [Side("b", runs("b", scale=slow, start_id=50, seed=2))])
    assert not any("one invocation each" in n for n in res.notes)


def test_one_run_a_side_is_never_marked() -> None:
    res = compare(Side("a", runs("a", n=1)), [Side("b", runs("b", n=1, scale={"0": 0.5}, start_id=50))])
    assert res.rows and not any(r.cmp.significant for r in res.rows)
    assert any("one run" in n for n in res.notes)
    assert "n/a" in render_text(res)


def test_json_has_the_documented_shape() -> None:
    base, new = two_sides()
    doc = render_json(compare(Side("base", base), [Side("patched", new)]))
    assert {"schema_version", "base", "new", "differences", "rows", "geomean"} <= set(doc)
    row = doc["rows"][0]
    for k in (
        "point",
        "metric",
        "unit",
        "base",
        "new",
        "n_base",
        "n_new",
        "ratio",
        "ci_low",
        "ci_high",
        "significant",
        "better",
    ):
        assert k in row
    assert doc["new"] == "patched"
    assert isinstance(doc["geomean"]["write_bw_bytes_per_s"], float)
    json.dumps(doc)


def test_csv_parses_and_html_is_self_contained() -> None:
    base, new = two_sides()
    res = compare(Side("base", base), [Side("patched", new)])
    rows = list(csv.DictReader(io.StringIO(render_csv(res))))
    assert len(rows) == len(res.rows)
    assert float(rows[0]["ratio"]) == pytest.approx(res.rows[0].cmp.ratio)
    page = render_html(res, "<svg></svg>")
    assert page.startswith("<!doctype html>") and "http" not in page
    assert page.count('class="worse"') == sum(1 for r in res.rows if r.cmp.better is False)


def test_text_fits_80_columns_and_matches_golden() -> None:
    base, new = two_sides()
    text = render_text(compare(Side("base", base), [Side("patched", new)]))
    assert max(len(line) for line in text.splitlines()) <= 80
    golden("compare_two.txt", text)


def test_markdown_matches_golden() -> None:
    base, new = two_sides()
    golden("compare_two.md", render_md(compare(Side("base", base), [Side("patched", new)])))


def test_three_labels_one_column_each_matches_golden() -> None:
    base, new = two_sides()
    other = runs("other", seed=3, scale={"1": 1.05}, start_id=200)
    text = render_text(compare(Side("base", base), [Side("patched", new), Side("other", other)]))
    assert max(len(line) for line in text.splitlines()) <= 80
    golden("compare_three.txt", text)


def test_every_text_line_fits_80_columns_with_long_points_and_facts() -> None:
    # limits-like points: many parameters, no common ones besides the recipe; a kernel
    # release and a label far longer than a table column
    long_kernel = "6.18.44-fc-v669-with-a-very-long-localversion-string-from-a-distro-build"
    extra = {
        "bytes": 2147483648,
        "end_fsync": 1,
        "files_per_job": 10,
        "ioengine": "io_uring",
        "kind": "fio",
        "mount_options_for_this_point": "noatime,logbsize=256k,inode64",
    }
    base = runs("base-with-a-long-label", seed=1, params=extra)
    new = runs(
        "patched-with-an-even-longer-label-name",
        seed=2,
        scale={"0": 0.9},
        kernel=long_kernel,
        start_id=100,
        params=extra,
    )
    other = runs("other", seed=3, start_id=200, params=extra)
    for news in (
        [Side("patched-with-an-even-longer-label-name", new)],
        [Side("patched-with-an-even-longer-label-name", new), Side("other", other)],
    ):
        text = render_text(compare(Side("base-with-a-long-label", base), news))
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert not wide, wide
        assert long_kernel in text.replace("\n", "").replace(" ", "") or long_kernel[:40] in text


def test_sides_sharing_a_run_are_found() -> None:
    base, new = two_sides()
    assert shared_run([Side("base", base), Side("patched", new)]) is None
    assert shared_run([Side("a", base), Side("b", base)]) == (str(base[0].id), 0, 1)
    # a store run and the same run from a bundle: known by uuid, ids may differ
    import dataclasses

    tagged = [dataclasses.replace(r, uuid=f"00000000-0000-4000-8000-{i:012d}") for i, r in enumerate(base)]
    moved = [dataclasses.replace(r, id=(r.id or 0) + 1000) for r in tagged[:3]]
    assert shared_run([Side("a", tagged), Side("b", new), Side("c", moved)]) == (str(moved[0].id), 0, 2)


def _with_value(run: Run, metric: str, value: float) -> Run:
    return dataclasses.replace(
        run,
        metrics=tuple(dataclasses.replace(m, value=value) if m.name == metric else m for m in run.metrics),
    )


def test_nan_and_inf_are_missing_values_with_a_note(tmp_path: Path) -> None:
    # Bundles write and accept NaN / Infinity (docs/bundle-format.md); compare must not fail.
    base, new = two_sides()
    target = [r for r in base if r.point.params["direct"] == 1 and r.point.params["jobs"] == 1]
    bad = {target[0].id: math.nan, target[1].id: math.inf}
    base = [_with_value(r, "write_bw_bytes_per_s", bad[r.id]) if r.id in bad else r for r in base]
    allbad = {r.id for r in new if r.point.params["direct"] == 0 and r.point.params["jobs"] == 2}
    new = [_with_value(r, "write_iops", -math.inf) if r.id in allbad else r for r in new]
    path = str(tmp_path / "nan.json")
    write_bundle(base, path)
    base = read_bundle(path)
    res = compare(Side("base", base), [Side("patched", new)])
    rows = {(r.point_text, r.metric): r for r in res.rows}
    row = rows[("direct=1 jobs=1", "write_bw_bytes_per_s")]
    assert row.dropped == 2 and row.cmp.n_base == 3 and row.cmp.n_new == 5
    assert all(math.isfinite(v) for v in row.base_samples)
    assert ("direct=0 jobs=2", "write_iops") not in rows  # no finite value on one side
    note = next(n for n in res.notes if n.startswith("non-finite"))
    assert "direct=1 jobs=1 write_bw_bytes_per_s (patched): 2" in note
    assert "direct=0 jobs=2 write_iops (patched): 5" in note
    assert "non-finite values" in render_text(res) and "NaN" in render_md(res)
    assert any("non-finite" in n for n in render_json(res)["notes"])


def test_compare_samples_drops_non_finite_values() -> None:
    c = compare_samples([100.0, math.nan, 101.0, 99.0], [110.0, 111.0, math.inf, 109.0], direction="higher")
    assert (c.n_base, c.n_new, c.dropped_base, c.dropped_new) == (3, 3, 1, 1)
    assert c.significant and c.better is True and c.ratio == pytest.approx(1.1, rel=1e-3)
    with pytest.raises(ValueError, match="no finite"):
        compare_samples([math.nan, math.nan], [1.0, 2.0], direction="higher")
