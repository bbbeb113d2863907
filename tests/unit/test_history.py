"""`iowall history`: series per fingerprint from stored runs or from rows, change points with
their bisect windows, and the CLI's inputs."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from iowall.actions.series import read_series
from iowall.analysis.regress.history import SeriesRow, from_rows, from_runs, worse
from iowall.model import Metric, Point, Run
from iowall.report.history import history_report
from iowall.report.recipe import render_text, report_json
from iowall.vocab.errors import UserError


def _runs(
    kernels: int = 8, bad_from: int = 5, repeats: int = 3, cv: float = 0.02, step: float = 0.10, seed: int = 1
) -> list[Run]:
    rng = random.Random(seed)
    out, rid = [], 0
    for k in range(1, kernels + 1):
        for _ in range(repeats):
            rid += 1
            v = 1000.0 * (1 - step if k >= bad_from else 1.0) * rng.gauss(1.0, cv)
            out.append(_run(rid, v, f"k{k}", {"kernel": f"6.18.{k}", "commit": f"c{k:03d}"}))
    return out


def _run(rid: int, v: float, label: str, env: dict[str, object]) -> Run:
    """Run ``rid`` of the plan's one point, started at second ``rid``, writing at ``v``."""
    return Run(
        point=Point("plan:p", {"rw": "write", "jobs": 2}),
        label=label,
        status="ok",
        started_at=float(rid),
        finished_at=rid + 0.5,
        id=rid,
        env=env,
        metrics=(Metric("write_bw_bytes_per_s", v, "B/s"),),
    )


def test_change_at_the_fifth_kernel_with_its_bisect_window() -> None:
    (h,) = from_runs(_runs(), by="label")
    assert h.groups == 8 and len(h.observations) == 24
    (w,) = h.windows
    assert w.last_good.label == "k4" and w.first_bad.label == "k5"
    assert (w.last_good.kernel, w.first_bad.commit) == ("6.18.4", "c005")
    assert worse(h, w) and w.change.rel_change == pytest.approx(-0.10, abs=0.03)
    text = render_text(history_report([h], "recipe=plan:p"))
    assert "bisect window: last before run 12, k4, 6.18.4, commit c004; first worse run 13" in " ".join(
        text.split()
    )
    doc = report_json(history_report([h], "recipe=plan:p"))
    assert doc["changes"] == 1 and doc["series"][0]["changes"][0]["first_bad"]["label"] == "k5"


def test_no_change_in_an_aa_history_and_groups_are_never_split() -> None:
    (h,) = from_runs(_runs(step=0.0), by="label")
    assert h.windows == ()
    (t,) = from_runs(_runs(), by="time")
    assert all(w.first_bad.index % 3 == 0 for w in from_runs(_runs(), by="label")[0].windows)
    assert t.by == "time"


def test_one_series_per_fingerprint_and_metric_choice() -> None:
    runs = _runs(kernels=3, bad_from=99)
    other = [
        Run(
            point=Point("plan:p", {"rw": "write", "jobs": 4}),
            label=r.label,
            status="ok",
            started_at=r.started_at,
            finished_at=r.finished_at,
            id=(r.id or 0) + 100,
            metrics=r.metrics,
        )
        for r in runs
    ]
    assert len(from_runs(runs + other)) == 2
    assert from_runs(runs, metric="nonesuch") == []


def test_rows_and_files(tmp_path: Path) -> None:
    rows = [("s", float(i), 10.0 if i < 20 else 12.0) for i in range(40)]
    (h,) = from_rows(rows)
    (w,) = h.windows
    assert w.first_bad.index == 20 and w.first_bad.at == "20"
    csv = tmp_path / "s.csv"
    csv.write_text("series,index,value\n" + "".join(f"s,{i:g},{v}\n" for _, i, v in rows))
    want = [SeriesRow("s", f"{i:g}", v) for _, i, v in rows]
    assert read_series(str(csv)) == want
    js = tmp_path / "s.json"
    js.write_text(json.dumps([{"series": "s", "index": int(i), "value": v} for _, i, v in rows]))
    assert read_series(str(js)) == want
    bad = tmp_path / "bad.csv"
    bad.write_text("series,index,value\ns,1,fast\n")
    with pytest.raises(UserError, match="row 1 is not series,index,value"):
        read_series(str(bad))
    with pytest.raises(UserError, match="no such file|No such file"):
        read_series(str(tmp_path / "missing.csv"))


def test_stored_latency_reads_lower_as_better() -> None:
    """Each stored metric's direction comes from the model: a p99 latency that rose is worse,
    and its bisect window says "first worse"; a bandwidth that rose says "first better"."""
    runs = [
        replace(r, metrics=(Metric("write_clat_p99_s", 1e-3 / r.metrics[0].value * 1000, "s", "lower"),))
        for r in _runs()
    ]  # the bandwidth fell 10% from k5: the latency rose
    (h,) = from_runs(runs, metric="write_clat_p99_s", by="label")
    (w,) = h.windows
    assert h.direction == "lower" and worse(h, w)
    text = " ".join(render_text(history_report([h], "x")).split())
    assert "first worse run 13, k5" in text and "(lower is better)" in text
    up = [
        replace(r, metrics=(Metric("write_bw_bytes_per_s", 1e6 / r.metrics[0].value, "B/s"),))
        for r in _runs()
    ]
    (h,) = from_runs(up, by="label")
    assert "first better run 13, k5" in " ".join(render_text(history_report([h], "x")).split())


def _env_runs(n: int, fall_from: int, env_at: dict[int, dict[str, object]]) -> list[Run]:
    """``n`` runs of one kernel, 10% slower from run ``fall_from``; run i's env updated by
    ``env_at`` from i on (each key the first run with that env)."""
    rng = random.Random(5)
    out, env = [], {"kernel": "6.18.0", "thp": "always [madvise] never", "loadavg_1m": 0.1}
    for i in range(n):
        env = {**env, **env_at.get(i, {})}
        v = 1000.0 * (0.9 if i >= fall_from else 1.0) * rng.gauss(1.0, 0.01)
        out.append(_run(i + 1, v, f"nightly-{i}", {**env, "host": {"cpu_count": 2}}))
    return out


def test_what_the_runs_after_a_change_and_the_newest_runs_had_anew() -> None:
    """One kernel throughout: THP set to always at the change point's run, and a neighbour
    (load 2.1 on 2 CPUs) at the newest two: each said where it began, nothing where nothing
    was new (a label per run is not news, nor a kernel per commit)."""
    runs = _env_runs(40, 20, {20: {"thp": "[always] madvise never"}})
    (h,) = from_runs(runs)
    (w,) = h.windows
    assert [(d.field, d.values) for d in w.differs] == [
        ("thp", ("always [madvise] never", "[always] madvise never"))
    ]
    assert h.differs == ()
    busy = _env_runs(40, 38, {38: {"loadavg_1m": 2.1}})
    (b,) = from_runs(busy)
    assert [d.field for d in b.differs] == ["load average at start (1 min)"]
    assert "(busy: 2 CPUs)" in b.differs[0].values[1]
    text = " ".join(render_text(history_report([b], "recipe=plan:p")).split())
    said = "the newest results' runs, against their baseline's: load average at start (1 min) 0.10 → 2.10"
    assert said in text
    doc = report_json(history_report([h], "recipe=plan:p"))
    assert doc["series"][0]["changes"][0]["differs"][0]["after"] == "[always] madvise never"
    (k,) = from_runs(_runs(), by="label")
    assert all(w.differs == () for w in k.windows) and k.differs == ()


def test_a_fact_whose_one_value_holds_the_separator_is_still_news() -> None:
    """The runs before held one value that itself contains " | " (a kernel command line's
    alternation, say): a change to another value is news at the change point. Whether the
    runs before held one value is counted, not read back from the joined text."""
    one = "quiet | splash"
    runs = _env_runs(40, 20, {0: {"cmdline": one}, 20: {"cmdline": "quiet"}})
    (h,) = from_runs(runs)
    (w,) = h.windows
    assert [(d.field, d.values, d.held) for d in w.differs] == [("cmdline", (one, "quiet"), (1, 1))]
    two = _env_runs(40, 20, {0: {"cmdline": "a"}, 15: {"cmdline": "b"}, 20: {"cmdline": "c"}})
    (h2,) = from_runs(two)
    assert all("cmdline" not in [d.field for d in w.differs] for w in h2.windows)
