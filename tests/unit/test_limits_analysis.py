"""The limits job's pure parts: sizing, summary tables and sentences, report shapes."""

import pytest

from iowall.analysis.limits import summarise
from iowall.errors import UserError
from iowall.model import Metric, Point, Run
from iowall.recipes.limits import limits_report
from iowall.recipes.limits_sizing import default_jobs, parse_jobs, plan_bed_size, size_points
from iowall.report.recipe import render_md, render_text, report_json

GIB = 1 << 30


def test_default_jobs() -> None:
    assert default_jobs(2) == [1, 2, 4]
    assert default_jobs(6) == [1, 2, 4, 6, 12]
    assert default_jobs(128)[-2:] == [128, 256]


def test_parse_jobs() -> None:
    assert parse_jobs("4,1,2,2") == [1, 2, 4]
    for bad in ("0", "x", "", "-1"):
        with pytest.raises(UserError):
            parse_jobs(bad)


def test_bed_size_covers_twice_the_threshold_it_will_have() -> None:
    avail = 22 * GIB
    b = plan_bed_size(bed_kind="ram", mem_available=avail, dirty_ratio=20, dirty_bytes=0,
                      quick=False, size_override=None)
    threshold_after = 0.2 * (avail - b)
    assert b >= 2 * threshold_after + 2 * GIB  # write set + read set fit
    assert b <= avail // 2
    assert plan_bed_size(bed_kind="ram", mem_available=avail, dirty_ratio=20, dirty_bytes=0,
                         quick=True, size_override=None) == 5 * GIB
    assert plan_bed_size(bed_kind="ram", mem_available=avail, dirty_ratio=20, dirty_bytes=0,
                         quick=False, size_override=3 * GIB) == 3 * GIB


def test_sizing_says_when_it_cannot_cross_the_threshold() -> None:
    s = size_points(free_bytes=12 * GIB, dirty_threshold=3 * GIB, cpus=2, mem_total=24 * GIB,
                    jobs=[1, 2, 4], quick=False)
    assert s.write_bytes == 6 * GIB and "2.0x the dirty threshold" in s.notes[0]
    q = size_points(free_bytes=5 * GIB, dirty_threshold=3 * GIB, cpus=2, mem_total=24 * GIB,
                    jobs=[1, 2, 4], quick=True)
    assert q.write_bytes == 2 * GIB and any("smaller than the dirty threshold" in n for n in q.notes)
    assert q.memcopy_threads == (1, 2)
    with pytest.raises(UserError):
        size_points(free_bytes=100 << 20, dirty_threshold=GIB, cpus=2, mem_total=24 * GIB,
                    jobs=[64], quick=True)


def _runs() -> list[Run]:
    out, rid = [], 0
    table = {  # (rw, direct, jobs): values over 3 repeats
        ("write", 0, 1): [1.0, 1.2, 0.9], ("write", 0, 2): [1.5, 1.5, 1.5],
        ("write", 0, 4): [1.55, 1.5, 1.6], ("write", 1, 1): [4.0] * 3, ("write", 1, 2): [6.0] * 3,
        ("write", 1, 4): [5.0] * 3, ("read", 0, 1): [2.0] * 3, ("read", 0, 2): [3.0] * 3,
        ("read", 0, 4): [4.0] * 3, ("read", 1, 1): [8.0] * 3, ("read", 1, 2): [8.0] * 3,
        ("read", 1, 4): [8.0] * 3,
    }
    for (rw, d, j), vals in table.items():
        for v in vals:
            rid += 1
            out.append(Run(point=Point("limits", {"kind": "fio", "rw": rw, "direct": d, "jobs": j}),
                           label="l", status="ok", started_at=0, finished_at=1, id=rid,
                           metrics=(Metric(f"{rw}_bw_bytes_per_s", v * GIB, "B/s"),)))
    for t, v in ((1, 20.0), (2, 30.0)):
        rid += 1
        out.append(Run(point=Point("limits", {"kind": "memcopy", "threads": t}), label="l",
                       status="ok", started_at=0, finished_at=1, id=rid,
                       metrics=(Metric("memcopy_bytes_per_s", v * GIB, "B/s"),)))
    rid += 1
    out.append(Run(point=Point("limits", {"kind": "fio", "rw": "write", "direct": 0, "jobs": 4}),
                   label="l", status="interrupted", started_at=0, finished_at=1, id=rid))
    return out


def test_summary_numbers_and_sentences() -> None:
    s = summarise(_runs(), cpus=2)
    w1 = next(r for r in s.rows if r.direction == "write" and r.jobs == 1)
    assert w1.buffered and w1.buffered.median == GIB and w1.buffered.n == 3
    assert w1.buffered.spread == pytest.approx(0.15)
    assert w1.buffered_over_direct == pytest.approx(0.25)
    assert w1.buffered_over_memcopy == pytest.approx(1 / 20)
    w4 = next(r for r in s.rows if r.direction == "write" and r.jobs == 4)
    assert w4.memcopy_threads == 2 and w4.buffered_over_memcopy == pytest.approx(1.55 / 30)
    assert s.direct_ceiling["write"].at == 2 and s.direct_ceiling["write"].cell.median == 6 * GIB
    text = " ".join(s.sentences)
    assert "Buffered write stops scaling at 2 jobs" in text
    assert "Buffered read still gains at every step up to 4 jobs" in text
    assert "26% of the direct-I/O ceiling" in text  # 1.55 / 6
    assert "1 interrupted" in text
    assert "1 of 12 cells spread more than ±10% (worst: write buffered 1 job, ±15%)" in text
    assert s.statuses == {"ok": 38, "interrupted": 1}


def test_reports_render() -> None:
    s = summarise(_runs(), cpus=2)
    ctx = {"bed": {"kind": "ram", "fs": "xfs", "device": "/dev/loop0", "image_bytes": 4 * GIB,
                   "backing": "tmpfs:/dev/shm"}, "kernel": "6.18", "fio_version": "3.33",
                   "host": {"cpu_count": 2, "cpu_model": "AMD EPYC", "mem_total_bytes": 24 * GIB},
                   "batch": "b", "notes": ["n1"]}
    text = render_text(limits_report(s, ctx))
    assert max(len(line) for line in text.splitlines() if not line.startswith("  - ")) <= 80
    assert "buf/direct" in text and "1536MiB/s" in text
    md = render_md(limits_report(s, ctx))
    assert "| jobs | buffered |" in md
    doc = report_json(limits_report(s, ctx))
    assert doc["ceilings"]["memcopy_bytes_per_s"] == {"1": 20 * GIB, "2": 30 * GIB}
    p = doc["points"][0]
    assert set(p) >= {"direction", "jobs", "buffered_bytes_per_s", "direct_bytes_per_s",
                      "buffered_over_direct", "buffered_over_memcopy"}
    assert doc["run_ids"] and doc["sentences"]
