"""Static figures: what each builder draws (artists and SVG structure) and how it is written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from iowall.analysis.scaling.usl import usl, usl_fit
from iowall.model import Point, Run, Series
from iowall.report.plots import (
    BETTER,
    MAX_LINES,
    NEUTRAL,
    WORSE,
    CompareBar,
    ScalingCurve,
    binary_scale,
    compare_figure,
    run_figure,
    save,
    scaling_figure,
    to_svg,
)
from iowall.store import Store
from iowall.vocab.errors import UserError

GIB = float(1 << 30)
N = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def group(svg: str, gid: str) -> str:
    """The text of the SVG group ``<g id="gid">`` (groups drawn by one artist do not nest)."""
    m = re.search(rf'<g id="{re.escape(gid)}">(.*?)\n   </g>', svg, re.S)
    assert m, f"no group {gid}"
    return m.group(1)


def drawn_paths(fragment: str) -> int:
    """Paths that draw (marker shapes are ``<path id=…>`` definitions, reused by ``<use>``)."""
    return len(re.findall(r"<path d=", fragment))


def curve(label: str, lam: float, sigma: float, kappa: float, spread: bool = True) -> ScalingCurve:
    x = [float(usl(n, lam, sigma, kappa)) for n in N]
    lo = [v * 0.9 for v in x] if spread else None
    hi = [v * 1.1 for v in x] if spread else None
    return ScalingCurve(label, N, x, lo, hi, usl_fit(N, x))


# ------------------------------------------------------------------------------ scaling


def test_scaling_figure_draws_points_linear_reference_and_usl_per_curve() -> None:
    a, b = curve("xfs", GIB, 0.05, 0.002), curve("ext4", GIB / 2, 0.1, 1e-7, spread=False)
    fig = scaling_figure([a, b], title="buffered write", ylabel="throughput", unit="B/s")
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.get_lines() if ln.get_gid()}
    for i, c in enumerate((a, b)):
        assert c.fit is not None
        fit = lines[f"usl-{i}"]
        xs, ys = np.asarray(fit.get_xdata()), np.asarray(fit.get_ydata())
        assert len(xs) == 200 and xs[0] == pytest.approx(1.0)
        # the drawn curve is the fitted USL, in GiB/s
        assert ys * GIB == pytest.approx(usl(xs, c.fit.lam, c.fit.sigma, c.fit.kappa), rel=1e-9)
        lin = lines[f"linear-{i}"]
        assert list(lin.get_xdata()) == [1.0, 32.0]
        assert lin.get_ydata()[1] == pytest.approx(32 * c.x[0] / GIB)
    # xfs peaks at sqrt(0.95/0.002) ~ 21.8 inside the range: marked; ext4's N* is far out: not
    assert a.fit is not None and 20 < a.fit.n_star < 23
    assert "peak-0" in lines and "peak-1" not in lines
    assert lines["peak-0"].get_xdata()[0] == pytest.approx(a.fit.n_star)
    assert ax.get_ylabel() == "throughput (GiB/s)"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"xfs: USL σ={a.fit.sigma:.3g} κ={a.fit.kappa:.3g}" in legend
    svg = to_svg(fig)
    for i in (0, 1):
        assert drawn_paths(group(svg, f"usl-{i}")) == 1
        assert drawn_paths(group(svg, f"linear-{i}")) == 1
    assert svg.count('id="usl-') == 2 and svg.count('id="points-') == 2
    assert "σ=0.05" in svg  # text kept as text in SVG


def test_scaling_error_bars_follow_low_high() -> None:
    c = curve("xfs", GIB, 0.05, 0.002)
    fig = scaling_figure([c], title="t", ylabel="throughput", unit="B/s")
    bars = [coll for coll in fig.axes[0].collections if coll.get_segments()]
    segs = bars[0].get_segments()
    assert len(segs) == len(N)
    for seg, x in zip(segs, c.x, strict=True):
        (_, y0), (_, y1) = seg
        assert (min(y0, y1), max(y0, y1)) == pytest.approx((0.9 * x / GIB, 1.1 * x / GIB))


def test_scaling_figure_rejects_empty_and_ragged() -> None:
    with pytest.raises(UserError):
        scaling_figure([], title="t", ylabel="y")
    with pytest.raises(UserError):
        scaling_figure([ScalingCurve("a", [1, 2], [1.0], None, None, None)], title="t", ylabel="y")


# ------------------------------------------------------------------------------ compare


BARS = [
    CompareBar("jobs=1", "write_bw_bytes_per_s", "patched", 1.12, 1.05, 1.20, True, True),
    CompareBar("jobs=4", "write_bw_bytes_per_s", "patched", 0.85, 0.80, 0.90, True, False),
    CompareBar("jobs=8", "write_bw_bytes_per_s", "patched", 1.01, 0.97, 1.05, False, True),
    CompareBar("jobs=8", "wall_s", "patched", 0.99, 0.95, 1.02, True, None),
]


def test_compare_bars_count_colour_and_geometry() -> None:
    fig = compare_figure(BARS, title="base vs patched")
    ax = fig.axes[0]
    rects = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    assert sorted(rects) == ["bar-0", "bar-1", "bar-2", "bar-3"]
    for i, b in enumerate(BARS):
        r = rects[f"bar-{i}"]
        assert r.get_x() == pytest.approx(1.0) and r.get_width() == pytest.approx(b.ratio - 1)
    svg = to_svg(fig)
    assert svg.count('id="bar-') == 4
    fills = [re.search(r'style="fill: (#[0-9a-f]{6})', group(svg, f"bar-{i}")) for i in range(4)]
    assert [f.group(1) if f else None for f in fills] == [BETTER, WORSE, NEUTRAL, NEUTRAL]
    # a line at 1.0 and whiskers spanning each interval
    assert any(list(ln.get_xdata()) == [1, 1] for ln in ax.get_lines())
    spans = sorted(
        tuple(round(v, 6) for v in sorted({p[0] for p in seg}))
        for coll in ax.collections
        for seg in coll.get_segments()
    )
    assert spans == sorted((b.ci_low, b.ci_high) for b in BARS)


def test_compare_groups_by_label() -> None:
    bars = [*BARS[:2], CompareBar("jobs=1", "write_bw_bytes_per_s", "other", 0.7, 0.6, 0.8, True, False)]
    fig = compare_figure(bars, title="t")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "patched" in texts and "other" in texts
    ticks = {t.get_position()[1]: t.get_text() for t in fig.axes[0].get_yticklabels()}
    # top to bottom: title row, two bars, title row, one bar
    row = "jobs={}  write_bw_bytes_per_s"
    assert [ticks[y] for y in sorted(ticks, reverse=True)] == [
        "",
        row.format(1),
        row.format(4),
        "",
        row.format(1),
    ]
    single = compare_figure(BARS, title="t")
    assert not [t for t in single.axes[0].texts if t.get_text() == "patched"]
    with pytest.raises(UserError):
        compare_figure([], title="t")


# ------------------------------------------------------------------------------ run


def ramp(probe: str, name: str, unit: str, level: float, n: int = 10) -> Series:
    return Series(probe, name, unit, tuple((float(t), level * (1 + t / n)) for t in range(n)))


def make_run(series: tuple[Series, ...]) -> Run:
    return Run(
        Point("buffered-wall", {"jobs": 2, "direct": 0}), "base", "ok", 0.0, 10.0, series=series, id=42
    )


def test_run_figure_panels_in_probe_order_with_units() -> None:
    series = (
        ramp("vmstat", "pgpgout_per_s", "pages_per_s", 1e4),
        ramp("cpu", "cpu_sys_share", "share", 0.4),
        ramp("cpu", "cpu0_sys_share", "share", 0.4),  # per-CPU: left out beside the total
        ramp("diskstats", "loop3_write_bytes_per_s", "bytes_per_s", 3e8),
        ramp("meminfo", "dirty_bytes", "bytes", 5e8),
        ramp("fio", "write_bw", "B/s", 2 * GIB),
        Series("psi", "io_some_share", "share", ()),  # empty: no panel
    )
    fig = run_figure(make_run(series))
    axes = fig.axes
    titles = [ax.get_title() for ax in axes]
    assert titles == ["fio", "cpu", "meminfo", "vmstat", "diskstats"]
    assert [ax.get_ylabel() for ax in axes] == ["GiB/s", "share (0-1)", "MiB", "pages/s", "MiB/s"]
    fio = axes[0].get_lines()[0]
    assert fio.get_ydata()[0] == pytest.approx(2.0)  # 2 GiB/s shown as 2.0 GiB/s
    assert [ln.get_label() for ln in axes[1].get_lines()] == ["cpu_sys_share"]
    svg = to_svg(fig)
    assert svg.count('id="series-') == 5
    for gid in ("series-fio-write_bw", "series-cpu-cpu_sys_share", "series-meminfo-dirty_bytes"):
        assert drawn_paths(group(svg, gid)) == 1


def test_run_figure_keeps_the_largest_lines() -> None:
    many = tuple(
        ramp("vmstat", f"c{i:02d}_per_s", "events_per_s", 10.0 * (i + 1)) for i in range(MAX_LINES + 4)
    )
    fig = run_figure(make_run(many))
    shown = sorted(ln.get_label() for ln in fig.axes[0].get_lines())
    assert shown == [f"c{i:02d}_per_s" for i in range(4, MAX_LINES + 4)]
    assert f"largest {MAX_LINES} of {MAX_LINES + 4}" in fig.axes[0].get_title()


def test_run_figure_without_series() -> None:
    with pytest.raises(UserError, match="no series"):
        run_figure(make_run(()))


def test_binary_scale() -> None:
    assert binary_scale("B/s", 3 * 2**20) == (2.0**20, "MiB/s")
    assert binary_scale("bytes", 5 * 2**40) == (2.0**40, "TiB")
    assert binary_scale("bytes_per_s", 100) == (1.0, "B/s")
    assert binary_scale("events_per_s", 1e9) == (1.0, "events/s")


# ------------------------------------------------------------------------------ output


def test_save_png_svg_and_bad_extension(tmp_path: Path) -> None:
    fig = run_figure(make_run((ramp("fio", "write_bw", "B/s", GIB),)))
    png, svg = tmp_path / "r.png", tmp_path / "r.SVG"
    save(fig, str(png))
    save(fig, str(svg))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    text = svg.read_text()
    assert text.startswith("<?xml") and 'id="series-fio-write_bw"' in text
    with pytest.raises(UserError, match=r"\.png or \.svg"):
        save(fig, str(tmp_path / "r.pdf"))
    assert not (tmp_path / "r.pdf").exists()
    with pytest.raises(UserError, match="cannot write"):
        save(fig, str(tmp_path / "missing" / "r.png"))
    inline = to_svg(fig)
    assert inline.startswith("<svg") and inline.rstrip().endswith("</svg>")
    again = run_figure(make_run((ramp("fio", "write_bw", "B/s", GIB),)))
    assert to_svg(again) == to_svg(run_figure(make_run((ramp("fio", "write_bw", "B/s", GIB),))))


# ------------------------------------------------------------------------------ CLI


def test_cli_plot_run(tmp_path: Path, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from iowall.cli.main import main

    store = Store(db_url)
    rid = store.add_run(
        make_run((ramp("fio", "write_bw", "B/s", GIB), ramp("cpu", "cpu_sys_share", "share", 0.5)))
    )
    bare = store.add_run(make_run(()))
    out = tmp_path / "run.svg"
    assert main(["plot", "run", str(rid), "-o", str(out), "--db", db_url]) == 0
    # the figure is the output; the path is said on stderr, as for every file iowall writes
    assert capsys.readouterr().err.strip() == f"wrote {out}"
    text = out.read_text()
    assert 'id="series-fio-write_bw"' in text and 'id="series-cpu-cpu_sys_share"' in text
    assert main(["plot", "run", str(rid), "-o", str(tmp_path / "run.png"), "--db", db_url]) == 0
    assert (tmp_path / "run.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", "run", str(bare), "-o", str(out), "--db", db_url]) == 2
    assert "has no time series" in capsys.readouterr().err
    assert main(["plot", "run", str(rid), "-o", str(tmp_path / "x.jpg"), "--db", db_url]) == 2
    assert main(["plot", "run", "999", "-o", str(out), "--db", db_url]) == 2


def test_cli_plot_run_child(tmp_path: Path, iowall_env: dict[str, str]) -> None:
    from tests.conftest import iowall

    rid = Store(iowall_env["IOWALL_DB"]).add_run(make_run((ramp("fio", "read_bw", "B/s", GIB),)))
    out = tmp_path / "r.png"
    cp = iowall("plot", "run", str(rid), "-o", str(out), env=iowall_env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr.strip() == f"wrote {out}" and out.read_bytes()[:4] == b"\x89PNG"
    assert cp.stdout == ""
    cp = iowall("plot", "run", str(rid), "-o", str(tmp_path / "r.gif"), env=iowall_env)
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1 and ".png or .svg" in cp.stderr


def test_compare_long_points_keep_the_width_and_one_run_has_no_whisker() -> None:
    from iowall.analysis.regress.compare import Side, compare
    from iowall.report.compare import figure, render_json

    from .compare_data import runs

    # limits-like points (long texts); the base side has one run per point
    write = {"bytes": 2147483648, "end_fsync": 1, "files_per_job": 10, "ioengine": "io_uring", "kind": "fio"}
    read = {"bytes": 1778384896, "end_fsync": 0, "files_per_job": 0, "ioengine": "io_uring", "kind": "fio"}

    def side(label: str, n: int, start: int) -> list[Run]:
        return runs(label, n=n, seed=start, start_id=start, params=write) + runs(
            label, n=n, seed=start + 1, start_id=start + 50, params=read
        )

    res = compare(Side("limits", side("limits", 1, 1)), [Side("again", side("again", 2, 100))])
    assert max(len(r.point_text) for r in res.rows) > 60
    assert all(r["ci_low"] is None and r["ci_high"] is None for r in render_json(res)["rows"])
    fig = figure(res)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_position().width > 0.6, "labels take the width of the bars"
    assert max(len(t.get_text()) for t in ax.get_yticklabels()) <= 24
    assert not ax.collections, "a one-run side drew a whisker"
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert all(a.x1 < b.x0 for a, b in zip(boxes[:-1], boxes[1:], strict=True)), "x tick labels overlap"
