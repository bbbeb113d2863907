"""The limits job's pure parts: sizing, summary tables and sentences, report shapes."""

import pytest

from iowall.analysis.scaling.limits import summarise
from iowall.model import Metric, Point, Run
from iowall.recipes.limits.options import SET_NAMES, LimitsOptions, limits_options
from iowall.recipes.limits.report import LimitsContext, limits_report
from iowall.recipes.limits.sizing import default_jobs, parse_jobs, plan_bed_size, size_points
from iowall.report.recipe import render_md, render_text, report_json
from iowall.vocab.errors import UserError

GIB = 1 << 30


def test_default_jobs() -> None:
    assert default_jobs(2) == [1, 2, 3, 4]  # at least four counts: a USL fit needs them
    assert default_jobs(1) == [1, 2, 3, 4]
    assert default_jobs(2, quick=True) == [1, 2, 4]  # --quick: the powers only (seen, not fitted)
    assert default_jobs(4, quick=True) == default_jobs(4) == [1, 2, 4, 8]
    assert default_jobs(4) == [1, 2, 4, 8]
    assert default_jobs(6) == [1, 2, 4, 6, 8, 12]
    assert default_jobs(128)[-2:] == [128, 256]


def test_parse_jobs() -> None:
    assert parse_jobs("4,1,2,2") == [1, 2, 4]
    for bad in ("0", "x", "", "-1"):
        with pytest.raises(UserError):
            parse_jobs(bad)


def test_one_builder_of_limits_options() -> None:
    """`iowall limits` and `iowall run limits` build their options in one place; messages
    name the option as the user spelled it."""
    lo = limits_options(size="8G", jobs="4,1,2,2", fs_block="16k,4k", label="x")
    assert lo == LimitsOptions(size=8 * GIB, jobs=(1, 2, 4), fs_blocks=(16384, 4096), label="x")
    assert limits_options() == LimitsOptions()
    with pytest.raises(UserError, match=r"^--size: cannot read '8Q'"):
        limits_options(size="8Q")
    with pytest.raises(UserError, match=r"^--set jobs '0': job counts must be at least 1"):
        limits_options(jobs="0", names=SET_NAMES)
    with pytest.raises(UserError, match=r"^--set bed_size: cannot read"):
        limits_options(size="lots", names=SET_NAMES)


def test_bed_size_covers_twice_the_threshold_it_will_have() -> None:
    avail = 22 * GIB
    b = plan_bed_size(
        bed_kind="ram", mem_available=avail, dirty_ratio=20, dirty_bytes=0, quick=False, size_override=None
    )
    threshold_after = 0.2 * (avail - b)
    assert b >= 2 * threshold_after + 2 * GIB  # write set + read set fit
    assert b <= avail // 2
    assert (
        plan_bed_size(
            bed_kind="ram", mem_available=avail, dirty_ratio=20, dirty_bytes=0, quick=True, size_override=None
        )
        == 5 * GIB
    )
    assert (
        plan_bed_size(
            bed_kind="ram",
            mem_available=avail,
            dirty_ratio=20,
            dirty_bytes=0,
            quick=False,
            size_override=3 * GIB,
        )
        == 3 * GIB
    )


def test_sizing_says_when_it_cannot_cross_the_threshold() -> None:
    s = size_points(
        free_bytes=12 * GIB, dirty_threshold=3 * GIB, cpus=2, mem_total=24 * GIB, jobs=[1, 2, 4], quick=False
    )
    assert s.write_bytes == 6 * GIB and "2.0x the dirty threshold" in s.notes[0]
    q = size_points(
        free_bytes=5 * GIB, dirty_threshold=3 * GIB, cpus=2, mem_total=24 * GIB, jobs=[1, 2, 4], quick=True
    )
    assert q.write_bytes == 2 * GIB and any("smaller than the dirty threshold" in n for n in q.notes)
    assert q.memcopy_threads == (1, 2)
    with pytest.raises(UserError):
        size_points(
            free_bytes=100 << 20, dirty_threshold=GIB, cpus=2, mem_total=24 * GIB, jobs=[64], quick=True
        )


def _runs() -> list[Run]:
    out, rid = [], 0
    table = {  # (rw, direct, jobs): values over 3 repeats
        ("write", 0, 1): [1.0, 1.2, 0.9],
        ("write", 0, 2): [1.5, 1.5, 1.5],
        ("write", 0, 4): [1.55, 1.5, 1.6],
        ("write", 1, 1): [4.0] * 3,
        ("write", 1, 2): [6.0] * 3,
        ("write", 1, 4): [5.0] * 3,
        ("read", 0, 1): [2.0] * 3,
        ("read", 0, 2): [3.0] * 3,
        ("read", 0, 4): [4.0] * 3,
        ("read", 1, 1): [8.0] * 3,
        ("read", 1, 2): [8.0] * 3,
        ("read", 1, 4): [8.0] * 3,
    }
    for (rw, d, j), vals in table.items():
        for v in vals:
            rid += 1
            out.append(
                Run(
                    point=Point("limits", {"kind": "fio", "rw": rw, "direct": d, "jobs": j}),
                    label="l",
                    status="ok",
                    started_at=0,
                    finished_at=1,
                    id=rid,
                    metrics=(Metric(f"{rw}_bw_bytes_per_s", v * GIB, "B/s"),),
                )
            )
    for t, v in ((1, 20.0), (2, 30.0)):
        rid += 1
        out.append(
            Run(
                point=Point("limits", {"kind": "memcopy", "threads": t}),
                label="l",
                status="ok",
                started_at=0,
                finished_at=1,
                id=rid,
                metrics=(Metric("memcopy_bytes_per_s", v * GIB, "B/s"),),
            )
        )
    rid += 1
    out.append(
        Run(
            point=Point("limits", {"kind": "fio", "rw": "write", "direct": 0, "jobs": 4}),
            label="l",
            status="interrupted",
            started_at=0,
            finished_at=1,
            id=rid,
        )
    )
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
    assert s.direct_ceiling[("", "write")].cell.median == 6 * GIB
    assert s.direct_ceiling[("", "write")].at == 2
    text = " ".join(s.sentences)
    # the knee as `iowall scaling` finds it: 1.5 at 2 jobs is 75% of linear from 1.0
    assert "Buffered write stops scaling at 2 jobs (the knee): there it runs at 75%" in text
    # read: 2, 3, 4 at 1, 2, 4 jobs: 75% at 2 jobs
    assert "Buffered read stops scaling at 2 jobs" in text
    assert "26% of the direct-I/O ceiling" in text  # 1.55 / 6
    assert "1 interrupted" in text
    assert "1 of 12 cells spread more than ±10% (worst: write buffered 1 job, ±15%)" in text
    (noisy,) = s.noise
    assert noisy.cell == "write buffered 1 job" and "repeats disagree" in noisy.reason
    assert s.statuses == {"ok": 38, "interrupted": 1}


def test_reports_render() -> None:
    s = summarise(_runs(), cpus=2)
    ctx = LimitsContext(
        bed={
            "kind": "ram",
            "fs": "xfs",
            "device": "/dev/loop0",
            "image_bytes": 4 * GIB,
            "backing": "tmpfs:/dev/shm",
        },
        kernel="6.18",
        fio_version="3.33",
        host={"cpu_count": 2, "cpu_model": "AMD EPYC", "mem_total_bytes": 24 * GIB},
        batch="b",
        notes=["n1"],
    )
    text = render_text(limits_report(s, ctx))
    assert max(len(line) for line in text.splitlines() if not line.startswith("  - ")) <= 80
    assert "buf/dir" in text and "1536MiB/s" in text
    md = render_md(limits_report(s, ctx))
    assert "| jobs | buffered |" in md
    doc = report_json(limits_report(s, ctx))
    assert doc["ceilings"]["memcopy_bytes_per_s"] == {"1": 20 * GIB, "2": 30 * GIB}
    p = doc["points"][0]
    assert set(p) >= {
        "direction",
        "jobs",
        "buffered_bytes_per_s",
        "direct_bytes_per_s",
        "buffered_over_direct",
        "buffered_over_memcopy",
    }
    assert doc["run_ids"] and doc["sentences"]


def _point_runs(
    spec: dict[tuple[str, str, int, str], list[float]], *, extra: dict[str, float] | None = None
) -> list[Run]:
    """Runs of limits data points: (rw, mode, jobs, fs_block) → GiB/s over repeats; mode
    'engine' is the engine's buffered double. Each run moved 1 GiB and grew Cached by
    0.9 GiB (buffered), 0.02 GiB (uncached) or nothing (direct)."""
    out, rid = [], 100
    grew = {"buffered": 0.9, "uncached": 0.02, "direct": 0.0, "engine": 0.9}
    for (rw, mode, j, block), vals in spec.items():
        for v in vals:
            rid += 1
            params: dict[str, object] = {
                "kind": "stream" if mode == "engine" else "fio",
                "rw": rw,
                "direct": int(mode == "direct"),
                "jobs": j,
            }
            if mode == "uncached":
                params["uncached"] = 1
            if block:
                params["fs_block"] = block
            metrics = [
                Metric(f"{rw}_bw_bytes_per_s", v * GIB, "B/s"),
                Metric(f"{rw}_io_bytes", GIB, "B"),
                Metric("page_cache_growth_bytes", grew[mode] * GIB, "B"),
            ]
            metrics += [Metric(k, x, "") for k, x in (extra or {}).items()]
            out.append(
                Run(
                    point=Point("limits", params),
                    label="l",
                    status="ok",
                    started_at=0,
                    finished_at=1,
                    id=rid,
                    metrics=tuple(metrics),
                )
            )
    return out


def test_uncached_column_cache_left_and_generators() -> None:
    spec = {
        ("write", "buffered", 2, ""): [1.0, 1.1, 0.9],
        ("write", "uncached", 2, ""): [1.4] * 3,
        ("write", "direct", 2, ""): [2.0] * 3,
        ("write", "engine", 2, ""): [1.05, 1.0, 1.02],
    }
    s = summarise(_point_runs(spec), cpus=2)
    (row,) = s.rows
    assert row.uncached and row.uncached.median == 1.4 * GIB
    assert row.uncached_over_direct == pytest.approx(0.7)
    assert s.cache_left[("", "write", "uncached")] == pytest.approx(0.02)
    assert s.cache_left[("", "write", "buffered")] == pytest.approx(0.9)
    text = " ".join(s.sentences)
    assert "Uncached write at 2 jobs runs at 1434MiB/s, 1.40x buffered and 70% of direct" in text
    assert "20.5 MiB of page cache per GiB of its files, buffered 921.6 MiB" in text
    (agree,) = s.agreement
    assert agree.within and agree.ratio == pytest.approx(1.02)
    far = summarise(_point_runs({**spec, ("write", "engine", 2, ""): [1.5] * 3}), cpus=2)
    assert not far.agreement[0].within
    ctx = LimitsContext(
        bed={"kind": "ram", "fs": "xfs"},
        kernel="6.18",
        fio_version="3.33",
        host={"cpu_count": 2, "cpu_model": "x", "mem_total_bytes": 24 * GIB},
        batch="b",
    )
    text = render_text(limits_report(s, ctx))
    assert "uncached" in text and "unc/dir" in text and "Page cache left behind" in text
    assert "Two generators, one point" in text and "yes" in text
    assert max(len(line) for line in text.splitlines() if not line.startswith("  - ")) <= 80
    doc = report_json(limits_report(s, ctx))
    assert doc["points"][0]["uncached_bytes_per_s"] == 1.4 * GIB
    assert doc["generators"][0]["agree"] is True


def test_noise_names_its_cause() -> None:
    spec = {("write", "buffered", 1, ""): [1.0, 1.3, 0.8], ("write", "buffered", 2, ""): [2.0] * 3}
    s = summarise(_point_runs(spec, extra={"tasks_neighbours_share": 0.3, "tasks_steal_share": 0.05}), cpus=2)
    reasons = {n.cell: n.reason for n in s.noise}
    assert "other processes took 30% of the busy CPU time" in reasons["write buffered 1 job"]
    assert "steal took 5%" in reasons["write buffered 2 jobs"]  # disturbed though tight


def test_block_sizes_side_by_side() -> None:
    spec = {
        ("write", "buffered", 1, "4k"): [1.0] * 3,
        ("write", "buffered", 1, "16k"): [1.2] * 3,
        ("write", "direct", 1, "4k"): [2.0] * 3,
        ("write", "direct", 1, "16k"): [2.0] * 3,
    }
    s = summarise(_point_runs(spec), cpus=2)
    assert s.blocks == ("4k", "16k")
    assert set(s.direct_ceiling) == {("4k", "write"), ("16k", "write")}
    text = " ".join(s.sentences)
    assert "Best buffered write with 4k blocks: 1024MiB/s; 16k 1229MiB/s (+20%)" in text
    ctx = LimitsContext(
        bed={"kind": "ram", "fs": "xfs"},
        kernel="6.18",
        fio_version="3.33",
        host={"cpu_count": 2, "cpu_model": "x", "mem_total_bytes": 24 * GIB},
        batch="b",
    )
    out = render_text(limits_report(s, ctx))
    assert "Sequential write, bs 2M, pvsync2, 4k fs blocks" in out
    assert "Sequential write, bs 2M, pvsync2, 16k fs blocks" in out


def test_limits_knee_is_the_scaling_knee() -> None:
    """limits' sentence and `iowall scaling`'s curve name the same knee on the same runs."""
    from iowall.analysis.scaling.sweep import build_curves

    spec = {("write", "buffered", j, ""): [v] for j, v in ((1, 1.0), (2, 1.9), (3, 2.0), (4, 2.05))}
    runs = _point_runs(spec)
    s = summarise(runs, cpus=2)
    (curve,) = build_curves([("l", runs)])
    assert curve.knee == 3
    assert "Buffered write stops scaling at 3 jobs (the knee)" in " ".join(s.sentences)
