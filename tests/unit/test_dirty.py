"""analysis.explain.dirty and analysis.regress.env_numbers on fabricated runs: the threshold the
kernel applied during buffered writes, the tracepoint's limit against it, and what compare lists."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from iowall.analysis.explain.dirty import Span, applied_threshold, applied_threshold_note
from iowall.analysis.regress.compare import Side, compare
from iowall.analysis.regress.env_numbers import (
    LOAD_FIELD,
    NEIGHBOURS_FIELD,
    STEAL_FIELD,
    THRESHOLD_FIELD,
    numeric_differences,
)
from iowall.model import Metric, Point, Run, Series
from iowall.vocab.units import GIB, MIB

HOST = {"hostname": "t", "cpu_model": "c", "cpu_count": 2, "mem_total_bytes": 24 * GIB}


def run(
    rw: str = "write",
    direct: int = 0,
    *,
    thr: tuple[float, float] | None = None,
    limit: tuple[float, float] | None = None,
    calls: float | None = None,
    series: tuple[Series, ...] = (),
    env: dict[str, Any] | None = None,
    status: str = "ok",
    rid: int = 1,
    label: str = "a",
) -> Run:
    ms = [Metric("write_bw_bytes_per_s", 1e9, "B/s")]
    if thr:
        ms += [
            Metric("vm_dirty_threshold_min_bytes", thr[0], "bytes"),
            Metric("vm_dirty_threshold_max_bytes", thr[1], "bytes"),
            Metric("vm_dirty_threshold_bytes", sum(thr) / 2, "bytes"),
            Metric("vm_dirty_background_threshold_min_bytes", thr[0] / 2, "bytes"),
            Metric("vm_dirty_background_threshold_max_bytes", thr[1] / 2, "bytes"),
        ]
    if calls is not None:
        ms.append(Metric("throttle_calls", calls, "events"))
    if limit:
        ms += [
            Metric("throttle_limit_min_bytes", limit[0], "bytes"),
            Metric("throttle_limit_bytes", limit[1], "bytes"),
        ]
    return Run(
        point=Point("limits", {"kind": "fio", "rw": rw, "direct": direct, "jobs": 1}),
        label=label,
        status=status,
        started_at=rid,
        finished_at=rid + 1,  # type: ignore[arg-type]
        metrics=tuple(ms),
        series=series,
        env={"host": HOST, **(env or {})},
        id=rid,
    )


def test_range_over_buffered_writes_only() -> None:
    runs = [
        run(thr=(3.4 * GIB, 3.6 * GIB), rid=1),
        run(thr=(3.5 * GIB, 4.0 * GIB), rid=2),
        run(direct=1, thr=(1 * GIB, 9 * GIB), rid=3),
        run("read", thr=(GIB, GIB), rid=4),
        run(thr=(GIB, GIB), status="failed", rid=5),
    ]
    a = applied_threshold(runs)
    assert a is not None and a.runs == 2
    assert a.threshold == Span(3.4 * GIB, 4.0 * GIB)
    assert a.background == Span(1.7 * GIB, 2.0 * GIB)
    assert applied_threshold([run(direct=1)]) is None


def test_series_stand_in_for_missing_metrics() -> None:
    s = Series("vmstat", "dirty_threshold_bytes", "bytes", ((1.0, 3 * GIB), (2.0, 2.5 * GIB)))
    lim = Series("throttle", "dirty_limit_bytes", "bytes", ((1.0, 4 * GIB), (2.0, 3.9 * GIB)))
    a = applied_threshold([run(series=(s, lim), calls=10)])
    assert a is not None
    assert a.threshold == Span(2.5 * GIB, 3 * GIB) and a.limit == Span(3.9 * GIB, 4 * GIB)


def test_limit_above_a_fallen_threshold_is_explained() -> None:
    note = applied_threshold_note(
        [run(thr=(2.4 * GIB, 2.6 * GIB), limit=(3.3 * GIB, 3.5 * GIB), calls=100)], sized_from=int(4.6 * GIB)
    )
    assert note is not None
    assert "was 2.4–2.6 GiB, background 1.2–1.3 GiB" in note
    assert "fell from the 4.6 GiB the points were sized from" in note
    assert "limit (3.3–3.5 GiB) is the kernel's smoothed hard limit" in note
    assert "update_dirty_limit" in note and "up to 35% above it in run 1" in note


def test_one_run_whose_limit_lagged_is_named() -> None:
    # the union of ranges overlaps, but run 2's limit stood 10% above its own threshold
    runs = [
        run(thr=(0.86 * GIB, 1.08 * GIB), limit=(0.88 * GIB, 1.09 * GIB), calls=3, rid=1),
        run(thr=(0.92 * GIB, 1.0 * GIB), limit=(1.1 * GIB, 1.1 * GIB), calls=7, rid=2),
    ]
    note = applied_threshold_note(runs)
    assert note is not None and "up to 10% above it in run 2" in note


def test_agreeing_figures_and_no_throttling_say_so() -> None:
    agree = applied_threshold_note(
        [run(thr=(32 * MIB, 32 * MIB), limit=(32 * MIB, 33 * MIB), calls=5)], sized_from=32 * MIB
    )
    assert agree is not None and "agrees with the threshold within 5%" in agree
    assert "sized from" not in agree
    quiet = applied_threshold_note([run(thr=(3 * GIB, 3 * GIB), calls=0)])
    assert quiet is not None and "no balance_dirty_pages event came" in quiet
    off = applied_threshold_note([run(thr=(3 * GIB, 3 * GIB))])
    assert off is not None and "throttle probe did not run" in off
    blind = applied_threshold_note([run(calls=0)])
    assert blind is not None and "was not recorded (no vmstat probe)" in blind


def test_limit_lagging_below_a_risen_threshold() -> None:
    note = applied_threshold_note(
        [run(thr=(3 * GIB, 3.1 * GIB), limit=(2 * GIB, 3 * GIB), calls=5)], sized_from=int(3.05 * GIB)
    )
    assert note is not None and "lags below the threshold" in note and "sized from" not in note


def test_numeric_differences_margins() -> None:
    def side(thr: float, load: float, n: int = 3) -> list[Run]:
        return [
            run(env={"dirty_threshold_bytes": thr, "loadavg_1m": load + 0.01 * i}, rid=i) for i in range(n)
        ]

    same = numeric_differences([side(3 * GIB, 0.2), side(3.1 * GIB, 0.6)])
    assert same == []  # 3% and 0.4 apart, neither busy on 2 CPUs
    diff = dict(numeric_differences([side(3 * GIB, 0.2), side(3.5 * GIB, 1.3)]))
    assert diff[THRESHOLD_FIELD] == ("3.0 GiB", "3.5 GiB")
    assert diff[LOAD_FIELD] == ("0.20–0.22", "1.30–1.32 (busy: 2 CPUs)")
    # one side busy, though the medians are close: listed
    busy = dict(numeric_differences([side(3 * GIB, 0.9), side(3 * GIB, 1.1)]))
    assert busy == {LOAD_FIELD: ("0.90–0.92", "1.10–1.12 (busy: 2 CPUs)")}
    # a side without the fact: nothing to say
    assert numeric_differences([side(3 * GIB, 0.2), [run()]]) == []


def test_what_else_took_the_cpus_during_the_runs() -> None:
    """Other processes' CPU (the tasks probe) and steal (the cpu probe) beyond their margins:
    a neighbour spinning on 1.9 of 2 CPUs and 12% steal are listed; 0.1 CPUs and 1% are not;
    runs without the probes say nothing."""

    def side(neighbour_s: float, steal: float, n: int = 3) -> list[Run]:
        out = []
        for i in range(n):
            r = run(rid=i)
            ms = (
                Metric("tasks_neighbours_cpu_s", neighbour_s + 0.01 * i, "s"),
                Metric("tasks_window_s", 10.0, "s"),
                Metric("cpu_steal_share", steal, "share"),
            )
            out.append(replace(r, metrics=r.metrics + ms))
        return out

    assert numeric_differences([side(0.1, 0.0), side(1.1, 0.01)]) == []
    diff = dict(numeric_differences([side(0.1, 0.0), side(19.0, 0.12)]))
    assert diff[NEIGHBOURS_FIELD] == ("0.01 CPUs", "1.90 CPUs")
    wide = dict(numeric_differences([side(0.1, 0.0), side(19.0, 0.0, n=30)]))
    assert wide[NEIGHBOURS_FIELD] == ("0.01 CPUs", "1.90–1.93 CPUs")
    assert diff[STEAL_FIELD] == ("0.0%", "12.0%")
    assert numeric_differences([side(0.1, 0.0), [run()]]) == []


def test_compare_lists_them_among_what_else_differs() -> None:
    a = [
        run(env={"dirty_threshold_bytes": 3 * GIB, "loadavg_1m": 0.1}, rid=i, label="a") for i in range(1, 4)
    ]
    b = [
        run(
            thr=(2 * GIB, 2.2 * GIB),
            env={"dirty_threshold_bytes": 3 * GIB, "loadavg_1m": 0.1},
            rid=i,
            label="b",
        )
        for i in range(4, 7)
    ]
    res = compare(Side("a", a), [Side("b", b)])
    fields = {d.field: d.values for d in res.differences}
    # the vmstat probe's mean over the window wins over the start-of-run reading
    assert fields[THRESHOLD_FIELD] == ("3.0 GiB", "2.1 GiB")
    assert LOAD_FIELD not in fields
