"""Scaling curves from runs (iowall.analysis.scaling.sweep): grouping, metric choice, weak scaling,
knee, USL fit and the side-by-side of labels, on synthetic runs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from iowall.actions.scaling import sides_of
from iowall.analysis.scaling.sweep import (
    analyse,
    axis_of,
    build_curves,
    derived_keys,
    why_no_curves,
)
from iowall.analysis.scaling.usl import usl
from iowall.model import Metric, Point, Run

MIB = 1 << 20
_ids = iter(range(1, 1_000_000))


def mkrun(
    label: str,
    params: dict[str, Any],
    metrics: dict[str, float],
    *,
    recipe: str = "limits",
    unit: str = "B/s",
    status: str = "ok",
    bed: dict[str, Any] | None = None,
) -> Run:
    def time(k: str) -> bool:
        return k.endswith(("_wall_s", "_runtime_s"))

    ms = tuple(
        Metric(k, v, "s" if time(k) else unit, "lower" if time(k) else "higher") for k, v in metrics.items()
    )
    return Run(
        point=Point(recipe, params),
        label=label,
        status=status,  # type: ignore[arg-type]
        started_at=0.0,
        finished_at=1.0,
        metrics=ms,
        bed=bed if bed is not None else {"kind": "ram", "fs": "xfs"},
        id=next(_ids),
    )


def fio_sweep(
    label: str,
    ns: list[int],
    lam: float,
    sigma: float,
    kappa: float,
    *,
    repeats: int = 1,
    noise: float = 0.0,
    seed: int = 0,
    rw: str = "write",
    direct: int = 0,
) -> list[Run]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(repeats):
        for n in ns:
            x = float(usl(n, lam, sigma, kappa)) * math.exp(rng.normal(0.0, noise) if noise else 0.0)
            out.append(
                mkrun(
                    label,
                    {"kind": "fio", "rw": rw, "direct": direct, "jobs": n, "bs": "2m", "bytes": 2 << 30},
                    {f"{rw}_bw_bytes_per_s": x, f"{rw}_runtime_s": 1.0},
                )
            )
    return out


def test_axis_of() -> None:
    assert axis_of({"jobs": 4, "threads": 2}) == "threads"
    assert axis_of({"numjobs": 8}) == "numjobs"
    assert axis_of({"nthreads": 3}) == "nthreads"
    assert axis_of({"jobs": True}) is None and axis_of({"jobs": 0}) is None
    assert axis_of({"bs": "4k"}) is None


def test_usl_sweep_recovers_sigma_kappa() -> None:
    ns = [1, 2, 4, 6, 8, 12, 16, 24, 32]
    runs = fio_sweep("base", ns, 500 * MIB, 0.05, 0.002, repeats=3, noise=0.02, seed=7)
    (c,) = build_curves([("base", runs)])
    assert c.metric == "write_bw_bytes_per_s" and c.unit == "B/s" and c.axis == "jobs"
    assert c.n == tuple(ns) and c.runs_per_n == (3,) * len(ns)
    assert c.fit is not None and c.fit_note == ""
    assert c.fit.n_obs == 27
    assert c.fit.sigma == pytest.approx(0.05, abs=0.02)
    assert c.fit.kappa == pytest.approx(0.002, rel=0.3)
    assert c.fit.sigma_ci[0] <= 0.05 <= c.fit.sigma_ci[1]
    assert c.fit.kappa_ci[0] <= 0.002 <= c.fit.kappa_ci[1]
    assert c.fit.n_star == pytest.approx(math.sqrt(0.95 / 0.002), rel=0.2)
    for i, n in enumerate(c.n):
        xs = [r.metric("write_bw_bytes_per_s") or 0.0 for r in runs if r.point.params["jobs"] == n]
        assert c.median[i] == pytest.approx(float(np.median(xs)))
        assert (c.low[i], c.high[i]) == (min(xs), max(xs))


def test_efficiency_and_knee_on_exact_curve() -> None:
    sigma, kappa = 0.05, 0.002
    ns = [1, 2, 4, 6, 8]
    runs = fio_sweep("base", ns, 100 * MIB, sigma, kappa)
    (c,) = build_curves([("base", runs)])
    want = [1 / (1 + sigma * (n - 1) + kappa * n * (n - 1)) for n in ns]
    assert c.efficiency == pytest.approx(want)
    # 0.949, 0.851, 0.763, ...: the first under 0.8 is N=6, the first under 0.9 N=4
    assert c.knee == 6
    (c9,) = build_curves([("base", runs)], knee_at=0.9)
    assert c9.knee == 4
    (c5,) = build_curves([("base", runs)], knee_at=0.5)
    assert c5.knee is None
    assert c.per_thread == pytest.approx([x / n for n, x in zip(ns, c.median, strict=True)])
    with pytest.raises(ValueError):
        build_curves([("base", runs)], knee_at=1.5)


def test_fewer_than_four_n_gives_the_note() -> None:
    runs = fio_sweep("base", [1, 2, 4], 100 * MIB, 0.1, 0.0, repeats=2)
    (c,) = build_curves([("base", runs)])
    assert c.fit is None
    assert c.fit_note == "USL fit needs at least 4 thread counts, have 3"
    assert len(c.efficiency) == 3 and c.efficiency[0] == pytest.approx(1.0)


def _inode_cache(label: str, ns: list[int], files: int, fs: str = "xfs") -> list[Run]:
    out = []
    for n in ns:
        # create scales perfectly (fixed time), unlink serialises (time grows with N)
        walls = {
            "create_wall_s": 2.0,
            "create_files_per_s": n * files / 2.0,
            "walk_wall_s": 1.0 + 0.1 * n,
            "unlink_wall_s": 1.0 * n,
        }
        out.append(
            mkrun(
                label,
                {"fs": fs, "threads": n, "files_per_thread": files, "files": n * files, "size": 0},
                walls,
                recipe="inode-cache",
                unit="files/s",
            )
        )
    return out


def test_weak_scaling_turned_into_rates() -> None:
    ns = [1, 2, 4, 8]
    runs = _inode_cache("ic", ns, 1000) + _inode_cache("ic", ns, 1000, fs="ext4")
    assert derived_keys(runs, "threads") == {"files"}
    curves = build_curves([("ic", runs)])
    assert [(c.params["fs"], c.metric) for c in curves] == [
        (fs, m) for fs in ("xfs", "ext4") for m in ("create_wall_s", "walk_wall_s", "unlink_wall_s")
    ]
    create, walk, unlink = curves[:3]
    assert create.unit == "files/s" and "files_per_thread" in create.derivation
    assert create.median == pytest.approx([n * 1000 / 2.0 for n in ns])
    assert create.efficiency == pytest.approx([1.0] * 4) and create.knee is None
    assert walk.median == pytest.approx([n * 1000 / (1.0 + 0.1 * n) for n in ns])
    assert unlink.median == pytest.approx([1000.0] * 4)  # no gain from threads at all
    assert unlink.knee == 2 and unlink.efficiency[-1] == pytest.approx(1 / 8)
    assert unlink.fit is not None and unlink.fit.sigma == pytest.approx(1.0, abs=1e-6)
    assert create.group == "inode-cache fs=xfs" and curves[3].group == "inode-cache fs=ext4"
    # the stored rate can be named instead; a time on a strong-scaling sweep cannot
    (stored,) = build_curves([("ic", runs[:4])], metric="create_files_per_s")
    assert stored.median == pytest.approx(create.median) and stored.derivation == ""
    (one,) = build_curves([("ic", runs[:4])], metric="unlink_wall_s")
    assert one.median == pytest.approx(unlink.median)


def test_time_metric_without_fixed_work_is_refused() -> None:
    runs = fio_sweep("base", [1, 2, 4, 8], 100 * MIB, 0.1, 0.0)
    assert build_curves([("base", runs)], metric="write_runtime_s") == []
    assert "not a throughput" in why_no_curves(runs, metric="write_runtime_s")
    assert build_curves([("base", runs)], metric="nope") == []
    assert why_no_curves(runs, metric="nope").startswith("no run of the sweep has metric nope")


def test_no_sweep_is_explained() -> None:
    runs = [
        mkrun("bw", {"variant": "seq", "direct": d, "jobs": 2}, {"write_bw_bytes_per_s": 1e9}) for d in (0, 1)
    ]
    assert build_curves([("bw", runs)]) == []
    assert why_no_curves(runs) == "every group of runs has a single thread count (limits jobs=2)"
    plain = [mkrun("x", {"rw": "write"}, {"write_bw_bytes_per_s": 1.0})]
    assert why_no_curves(plain).startswith("no run has a thread count")


def test_limits_like_sweep_is_split_into_lines() -> None:
    runs = []
    for rw in ("write", "read"):
        for d in (0, 1):
            runs += fio_sweep("l", [1, 2, 4], 100 * MIB * (d + 1), 0.1, 0.0, rw=rw, direct=d)
    for t in (1, 2):
        runs.append(
            mkrun(
                "l",
                {"kind": "memcopy", "threads": t, "bytes_per_thread": 1 << 26},
                {"memcopy_bytes_per_s": 8e9 * t},
            )
        )
    runs.append(
        mkrun(
            "l",
            {"kind": "fio", "rw": "write", "direct": 0, "jobs": 8, "bs": "2m", "bytes": 2 << 30},
            {"write_bw_bytes_per_s": 1.0},
            status="failed",
        )
    )
    curves = build_curves([("l", runs)])
    names = {(c.group, c.metric) for c in curves}
    assert names == {
        ("limits kind=fio rw=write direct=0", "write_bw_bytes_per_s"),
        ("limits kind=fio rw=write direct=1", "write_bw_bytes_per_s"),
        ("limits kind=fio rw=read direct=0", "read_bw_bytes_per_s"),
        ("limits kind=fio rw=read direct=1", "read_bw_bytes_per_s"),
        ("limits kind=memcopy", "memcopy_bytes_per_s"),
    }
    assert all(max(c.n) < 8 for c in curves)  # the failed run is not counted


def test_mixed_fio_point_sums_directions() -> None:
    runs = [
        mkrun(
            "m",
            {"rw": "rw", "rwmixwrite": 30, "numjobs": n},
            {
                "read_bw_bytes_per_s": 70.0 * n,
                "write_bw_bytes_per_s": 30.0 * n,
                "inst1_read_bw_bytes_per_s": 1.0,
            },
            recipe="bdev-rwmix",
        )
        for n in (1, 2, 4)
    ]
    (c,) = build_curves([("m", runs)])
    assert c.metric == "total_bw_bytes_per_s" and c.axis == "numjobs"
    assert c.median == pytest.approx([100.0, 200.0, 400.0])
    assert c.derivation == "read_bw_bytes_per_s + write_bw_bytes_per_s"


def test_crossed_axis_is_a_line_not_derived() -> None:
    runs = [
        mkrun(
            "p",
            {"kind": "fio", "rw": "write", "jobs": n, "size": s},
            {"write_bw_bytes_per_s": float(n * s)},
            recipe="plan",
        )
        for s in (1 << 30, 2 << 30)
        for n in (1, 2, 4)
    ]
    assert derived_keys(runs, "jobs") == set()
    curves = build_curves([("p", runs)])
    assert [c.params["size"] for c in curves] == [1 << 30, 2 << 30]
    assert {c.group for c in curves} == {f"plan size={1 << 30}", f"plan size={2 << 30}"}


def test_beds_of_different_shape_are_separate_curves() -> None:
    runs = fio_sweep("limits", [1, 2, 4], 100 * MIB, 0.1, 0.0)
    other = [
        mkrun(
            r.label,
            dict(r.point.params),
            {m.name: m.value for m in r.metrics},
            bed={"kind": "ram", "fs": "ext4"},
        )
        for r in runs
    ]
    curves = build_curves([("limits", runs + other)])
    assert [c.label for c in curves] == ["limits [ram xfs]", "limits [ram ext4]"]
    assert curves[0].key == curves[1].key


def test_two_labels_side_by_side() -> None:
    ns = [1, 2, 4, 8, 16]
    base = fio_sweep("base", ns, 200 * MIB, 0.02, 0.001, repeats=2, noise=0.01, seed=1)
    patched = fio_sweep("patched", ns, 200 * MIB, 0.2, 0.001, repeats=2, noise=0.01, seed=2)
    sc = analyse([("base", base), ("patched", patched)])
    assert sc.labels == ("base", "patched")
    assert len(sc.curves) == 2
    (row,) = sc.side_by_side
    assert [e.label for e in row.entries] == ["base", "patched"]
    b, p = row.entries
    assert b.sigma is not None and p.sigma is not None and b.sigma < p.sigma
    assert b.knee is not None and p.knee is not None and p.knee < b.knee
    assert p.x_peak is not None and b.x_peak is not None and p.x_peak < b.x_peak


def test_sides_of_names() -> None:
    a = fio_sweep("a", [1, 2], 1.0, 0.0, 0.0)
    b = fio_sweep("b", [1, 2], 1.0, 0.0, 0.0)
    assert [s for s, _ in sides_of([("recipe=limits", a + b)])] == ["a", "b"]
    assert [s for s, _ in sides_of([("kernel=1", a), ("kernel=2", b)])] == ["kernel=1", "kernel=2"]
    assert [s for s, _ in sides_of([("x", a + b), ("y", b)])] == ["x:a", "x:b", "y"]


def test_lines_match_across_labels_when_sizes_differ() -> None:
    def label(name: str, read_bytes: int, fs: str) -> list[Run]:
        out = []
        for rw, size in (("write", 2 << 30), ("read", read_bytes)):
            for n in (1, 2, 4, 8):
                out.append(
                    mkrun(
                        name,
                        {"kind": "fio", "rw": rw, "direct": 0, "jobs": n, "bytes": size},
                        {f"{rw}_bw_bytes_per_s": 100.0 * n},
                        bed={"kind": "ram", "fs": fs},
                    )
                )
        return out

    sc = analyse([("xfs", label("xfs", 1 << 30, "xfs")), ("ext4", label("ext4", 3 << 29, "ext4"))])
    assert [c.group for c in sc.curves[:2]] == ["limits rw=write", "limits rw=read"]
    write, read = sc.side_by_side
    assert [e.label for e in read.entries] == ["xfs", "ext4"]
    assert write.differs == ("bed fs: xfs (xfs), ext4 (ext4)",)
    assert read.differs == (f"bytes: {1 << 30} (xfs), {3 << 29} (ext4)", "bed fs: xfs (xfs), ext4 (ext4)")


def test_time_metric_on_a_limits_like_selection_names_the_real_reason() -> None:
    # as `iowall limits` stores them: memcopy points (threads), fio write and read points
    # (jobs); only the write points have write_runtime_s. The reason given must be the one
    # of the write points (a time on a strong-scaling sweep), not "no metric" from the others
    # (memcopy first, as limits runs it)
    runs = [
        mkrun(
            "l",
            {"kind": "memcopy", "threads": t, "bytes_per_thread": 1 << 26},
            {"memcopy_bytes_per_s": 8e9 * t},
        )
        for t in (1, 2)
    ]
    runs += fio_sweep("l", [1, 2, 4], 100 * MIB, 0.1, 0.0, rw="write")
    runs += fio_sweep("l", [1, 2, 4], 200 * MIB, 0.1, 0.0, rw="read")
    assert build_curves([("l", runs)], metric="write_runtime_s") == []
    why = why_no_curves(runs, metric="write_runtime_s")
    assert "write_runtime_s is a time" in why and "not a throughput" in why
    assert not why.startswith("no metric")
