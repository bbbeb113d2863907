"""--repeat N|auto[:MAX]: parsing, the deciding metric, and Schedule rounds over the points
not yet decided (fake tasks drawing throughput from a seeded RNG, a real SQLite store)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from iowall.measure.repeat import (
    RepeatPolicy,
    min_runs,
    parse_repeat,
    parse_target,
    policy_of,
    replay,
    summary,
    to_json,
)
from iowall.measure.runner import Outcome, Partial, Schedule, Task
from iowall.model import Metric, Point, Run, primary_metric
from iowall.plan import PlanError, interleave, load_plan, plan_from_doc, rounds
from iowall.recipes.options import RecipeOptions
from iowall.store import Store
from iowall.vocab.errors import UserError, WorkloadError
from iowall.vocab.progress import Progress

# ------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("3", RepeatPolicy(3)),
        ("1", RepeatPolicy(1)),
        ("auto", RepeatPolicy(10, auto=True)),
        ("auto:15", RepeatPolicy(15, auto=True)),
        (" Auto:4 ", RepeatPolicy(4, auto=True)),
        (7, RepeatPolicy(7)),
    ],
)
def test_parse_repeat(text: str | int, want: RepeatPolicy) -> None:
    assert parse_repeat(text) == want
    assert parse_repeat(want.spec()) == want


@pytest.mark.parametrize("text", ["x", "0", "-2", "1.5", "auto:", "auto:0", "auto:x", "autox", "", "3:auto"])
def test_parse_repeat_refuses_in_one_line(text: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_repeat(text)
    msg = str(ei.value)
    assert msg.startswith(f"--repeat: use a number ≥ 1 or auto[:MAX] (got {text!r}")
    assert "\n" not in msg


def test_parse_target_and_policy_text() -> None:
    assert parse_target("2%") == pytest.approx(0.02) and parse_target("0.02") == 0.02
    assert parse_target("0.5%") == pytest.approx(0.005)
    for bad in ("2", "0", "0%", "100%", "x", "-1%"):
        with pytest.raises(UserError, match="--target"):
            parse_target(bad)
    auto = parse_repeat("auto:12").with_target(0.014)
    assert auto.describe() == "repeat auto (max 12, target ±1.4%)"
    assert auto.to_json() == {
        "mode": "auto",
        "max": 12,
        "target": 0.014,
        "confidence": 0.95,
        "spec": "auto:12",
    }
    assert RepeatPolicy(3).describe() == "3 repeats" and RepeatPolicy(1).describe() == "1 repeat"
    with pytest.raises(UserError, match="applies to --repeat auto"):
        RepeatPolicy(3).with_target(0.01)
    assert min_runs() == 6  # the order-statistic interval of the median needs 6 runs at 95%


# --------------------------------------------------------------------- deciding metric


def _run(metrics: dict[str, float], status: str = "ok") -> Run:
    return Run(
        point=Point("t", {}),
        label="l",
        status=status,  # type: ignore[arg-type]
        started_at=0.0,
        finished_at=1.0,
        metrics=tuple(Metric(k, v, "") for k, v in metrics.items()),
    )


def test_primary_metric_is_the_throughput_whatever_the_order() -> None:
    fio = {"disk_write_bytes_per_s": 1.0, "write_iops": 2.0, "write_bw_bytes_per_s": 3.0}
    assert primary_metric(_run(fio)).name == "write_bw_bytes_per_s"  # type: ignore[union-attr]
    mix = {"write_bw_bytes_per_s": 1.0, "read_bw_bytes_per_s": 2.0}
    assert primary_metric(_run(mix)).name == "read_bw_bytes_per_s"  # type: ignore[union-attr]
    inst = {"inst2_read_bw_bytes_per_s": 1.0, "inst1_read_bw_bytes_per_s": 2.0}
    assert primary_metric(_run(inst)).name == "inst1_read_bw_bytes_per_s"  # type: ignore[union-attr]
    mem = {"memcopy_avx_bytes_per_s": 1.0, "memcopy_bytes_per_s": 2.0}
    assert primary_metric(_run(mem)).name == "memcopy_bytes_per_s"  # type: ignore[union-attr]
    meta = {"chmod_files_per_s": 1.0, "create_files_per_s": 2.0, "create_wall_s": 3.0}
    assert primary_metric(_run(meta)).name == "create_files_per_s"  # type: ignore[union-attr]
    assert primary_metric(_run({"files_per_s": 5.0, "wall_s": 1.0})).value == 5.0  # type: ignore[union-attr]
    assert primary_metric(_run({"disk_read_bytes_per_s": 1.0, "cpu_sys_share_max": 0.5})) is None


# ------------------------------------------------------------------ schedule, fake tasks


class Bar(Progress):
    """A progress display that remembers what it was told."""

    def __init__(self) -> None:
        self.total = 0.0
        self.done = 0.0
        self.steps: list[str] = []

    def begin(self, total: float) -> None:
        self.total = total

    def step(self, description: str) -> None:
        self.steps.append(description)

    def advance(self, amount: float) -> None:
        self.done += amount


def noisy(name: str, cv: float, rng: np.random.Generator, weight: float = 1.0, fail: bool = False) -> Task:
    """A point whose write bandwidth is 1 GB/s with log-normal noise of about ``cv``."""

    def execute(partial: Partial) -> Outcome:
        if fail:
            raise WorkloadError("fio: no space left")
        bw = 1e9 * math.exp(rng.normal(0.0, cv))
        return Outcome(
            metrics=(Metric("write_bw_bytes_per_s", bw, "B/s"), Metric("disk_write_bytes_per_s", 1.0, "B/s"))
        )

    return Task(Point("fake", {"name": name}), execute, weight=weight, title=name)


def schedule(db_url: str, bar: Progress | None = None, seed: int | None = None) -> Schedule:
    return Schedule(
        store=Store(db_url),
        label="t",
        env=lambda: {"host": {}},
        bed=lambda: {"kind": "ram"},
        progress=bar or Progress(),
        shuffle_seed=seed,
    )


def names(runs: list[Run]) -> list[str]:
    return [str(r.point.params["name"]) for r in runs]


def repeat_notes(run: Run) -> list[str]:
    return [n for n in run.notes if n.startswith("repeat auto")]


@pytest.fixture
def rng() -> Iterator[np.random.Generator]:
    yield np.random.default_rng(20240611)


def test_low_noise_stops_at_the_minimum(db_url: str, rng: np.random.Generator) -> None:
    sched = schedule(db_url)
    task = noisy("a", 0.001, rng)
    runs = sched.execute([task], parse_repeat("auto"))
    assert len(runs) == min_runs() == 6
    (st,) = sched.decisions.values()
    assert st.decided and st.stop and st.n == 6 and st.achieved <= 0.02
    assert [repeat_notes(r) for r in runs[:-1]] == [[]] * 5
    (note,) = repeat_notes(runs[-1])
    assert note.startswith("repeat auto on write_bw_bytes_per_s: decided after 6 runs")
    assert "target ±2%" in note
    # the note is stored with the run, and the policy in every run's environment
    stored = sched.store.runs()
    assert repeat_notes(stored[-1]) == [note] and not repeat_notes(stored[0])
    assert all(r.env["repeat"]["spec"] == "auto:10" for r in stored)
    assert policy_of(stored) == parse_repeat("auto")


def test_high_noise_hits_the_maximum(db_url: str, rng: np.random.Generator) -> None:
    sched = schedule(db_url)
    runs = sched.execute([noisy("b", 0.10, rng)], parse_repeat("auto:8"))
    assert len(runs) == 8 and [r.repeat_index for r in runs] == list(range(8))
    (st,) = sched.decisions.values()
    assert st.stop and not st.decided and st.n == 8 and st.achieved > 0.02
    (note,) = repeat_notes(runs[-1])
    assert "stopped at the maximum of 8 runs, undecided" in note
    assert not any(repeat_notes(r) for r in runs[:-1])


def test_mixed_points_stop_independently_and_stay_interleaved(db_url: str, rng: np.random.Generator) -> None:
    bar = Bar()
    sched = schedule(db_url, bar)
    tasks = [noisy("a", 0.001, rng), noisy("b", 0.10, rng, weight=2.0), noisy("c", 0.002, rng)]
    policy = parse_repeat("auto:9")
    runs = sched.execute(tasks, policy)
    # rounds 0-5 run every point; from round 6 only the undecided one
    assert names(runs) == ["a", "b", "c"] * 6 + ["b"] * 3
    assert [r.repeat_index for r in runs] == [i // 3 for i in range(18)] + [6, 7, 8]
    dec = {t.title: sched.decisions[t.point.key()] for t in tasks}
    assert dec["a"].decided and dec["c"].decided and dec["a"].n == dec["c"].n == 6
    assert dec["b"].stop and not dec["b"].decided and dec["b"].n == 9
    last = {n: max(i for i, r in enumerate(runs) if names([r]) == [n]) for n in "abc"}
    noted = [i for i, r in enumerate(runs) if repeat_notes(r)]
    assert noted == sorted(last.values())
    # the bar was sized for the maximum and is full at the end (skipped rounds advanced)
    assert bar.total == pytest.approx(4.0 * 9) and bar.done == pytest.approx(bar.total)
    assert bar.steps[0] == "a  [1/≤9]"
    # the same decisions, recomputed from the runs as stored
    again = replay(sched.store.runs(), policy)
    assert again.decisions == sched.decisions
    lines = summary(policy, again, {t.point.key(): t.title for t in tasks})
    assert lines[0] == "repeat auto (max 9, target ±2%): 6–9 runs per point"
    assert len(lines) == 2 and lines[1].startswith("undecided at the maximum of 9 runs: b (±")
    doc = to_json(policy, again)
    assert set(doc["decisions"]) == {"name=a", "name=b", "name=c"}
    b = doc["decisions"]["name=b"]
    assert (b["n"], b["runs"], b["decided"], b["metric"]) == (9, 9, False, "write_bw_bytes_per_s")
    assert b["achieved"] > 0.02 and b["reason"] == dec["b"].reason


def test_shuffled_auto_rounds_run_each_pending_point_once(db_url: str, rng: np.random.Generator) -> None:
    sched = schedule(db_url, seed=3)
    tasks = [noisy(n, cv, rng) for n, cv in (("a", 0.001), ("b", 0.1), ("c", 0.1), ("d", 0.0))]
    runs = sched.execute(tasks, parse_repeat("auto:7"))
    by_round: dict[int, list[str]] = {}
    for r in runs:
        by_round.setdefault(r.repeat_index, []).append(str(r.point.params["name"]))
    assert all(sorted(v) == ["a", "b", "c", "d"] for r, v in by_round.items() if r < 6)
    assert sorted(by_round[6]) == ["b", "c"]
    assert len({tuple(v) for r, v in by_round.items() if r < 6}) > 1  # the order was shuffled


def test_failures_count_towards_the_maximum(db_url: str, rng: np.random.Generator) -> None:
    sched = schedule(db_url)
    runs = sched.execute([noisy("x", 0.01, rng, fail=True)], parse_repeat("auto:4"))
    assert [r.status for r in runs] == ["failed"] * 4
    (st,) = sched.decisions.values()
    assert st.stop and st.n == 0 and "no run measured it" in st.reason
    assert len(repeat_notes(runs[-1])) == 1


def test_fixed_repeat_runs_every_round_and_adds_no_note(db_url: str, rng: np.random.Generator) -> None:
    bar = Bar()
    sched = schedule(db_url, bar)
    runs = sched.execute([noisy("a", 0.001, rng), noisy("b", 0.001, rng)], 3)
    assert names(runs) == ["a", "b"] * 3 and not any(repeat_notes(r) for r in runs)
    assert all(st.stop and not st.decided and st.n == 3 for st in sched.decisions.values())
    assert bar.steps[0] == "a  [1/3]" and bar.done == bar.total == 6.0
    with pytest.raises(UserError, match="at least 1"):
        schedule(db_url).execute([noisy("a", 0.0, rng)], 0)


# --------------------------------------------------------------------------- plans


PLAN = """\
label = "t"
repeat = "auto:12"
[workload]
rw = "write"
size = "1M"
[axes]
jobs = [1, 2]
fs = ["xfs", "ext4"]
"""


def test_plan_file_takes_auto_and_overrides(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text(PLAN)
    plan = load_plan(p)
    assert plan.repeats == RepeatPolicy(12, auto=True) and plan.repeat == 12
    assert plan.describe()["repeat"] == "auto:12" and plan.describe()["target"] == 0.02
    assert plan.with_overrides(target=0.01).repeats.target == 0.01
    assert plan.with_overrides(repeat=parse_repeat("4")).repeats == RepeatPolicy(4)
    assert plan.with_overrides(quick=True).repeats == RepeatPolicy(1)
    assert plan.with_overrides(quick=True, repeat=parse_repeat("auto")).repeats.auto
    with pytest.raises(UserError, match="--target applies"):
        plan.with_overrides(quick=True, target=0.01)
    for bad, line in (('"auto:0"', 2), ('"often"', 2)):
        p.write_text(PLAN.replace('"auto:12"', bad))
        with pytest.raises(PlanError) as ei:
            load_plan(p)
        assert (ei.value.line, ei.value.key) == (line, "repeat")
        assert '"auto:MAX"' in ei.value.problem and bad.strip('"') in ei.value.problem


def test_plan_rounds_skip_decided_points_and_keep_bed_groups(tmp_path: Path) -> None:
    plan = plan_from_doc(
        {"workload": {"rw": "write", "size": "1M"}, "axes": {"jobs": [1, 2], "fs": ["xfs", "ext4"]}}
    )
    pts = plan.expand()
    assert list(rounds(pts, 3)) == interleave(pts, 3)
    done: set[int] = set()
    out = []
    for r, i in rounds(pts, 4, pending=lambda i: i not in done):
        out.append((r, i))
        if r == 1 and i in (0, 3):  # decided during round 1: skipped from round 2 on
            done.add(i)
    assert out[:8] == interleave(pts, 2)
    assert out[8:] == [(2, 1), (2, 2), (3, 1), (3, 2)]
    done.update(range(4))
    assert list(rounds(pts, 5, pending=lambda i: i not in done)) == []


def test_recipe_options_repeats() -> None:
    assert RecipeOptions().repeats() == RepeatPolicy(3)
    assert RecipeOptions(quick=True).repeats() == RepeatPolicy(1)
    assert RecipeOptions(quick=True).repeats(quick_default=3) == RepeatPolicy(3)
    auto = parse_repeat("auto:6")
    assert RecipeOptions(quick=True, repeat=auto).repeats() is auto


def test_recipe_reports_its_repeats(db_url: str, rng: np.random.Generator) -> None:
    """A recipe runs through a Session with opts.repeats(); its note says how the
    repeats went and its JSON gets the decisions, recomputed from the runs it stored."""
    from iowall.recipes.registry import Recipe
    from iowall.report.recipe import render_text
    from iowall.results import Report
    from iowall.store import RunFilter

    def execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
        repeat = opts.repeats(quick_default=1, default=3)
        tasks = [noisy("a", 0.001, rng), noisy("b", 0.1, rng)]
        session = opts.session(store, progress, "t")
        runs = session.execute(tasks, repeat)
        note = f"{repeat.summarise(runs)}, interleaved; medians"
        return Report(
            kind="recipe",
            name="fake",
            title=note,
            batch=session.batch,
            run_ids=tuple(r.id for r in runs if r.id is not None),
        )

    def runs_of(rep: Report) -> list:  # type: ignore[type-arg]
        return Store(db_url).runs(RunFilter(ids=rep.run_ids))

    rec = Recipe(name="fake", seed="999", description="t", execute=execute)
    res = rec.run(RecipeOptions(repeat=parse_repeat("auto:7"), probes="none"), Store(db_url), Progress())
    assert [str(r.point.params["name"]) for r in runs_of(res)] == ["a", "b"] * 6 + ["b"]
    text = render_text(res).rstrip("\n")
    assert text.startswith(
        "repeat auto (max 7, target ±2%): 6–7 runs per point; undecided at the maximum of 7 runs: name=b (±"
    )
    assert text.endswith("%, the 95% interval of the median), interleaved; medians")
    dec = res.data["repeat"]["decisions"]
    assert dec["name=a"]["decided"] and dec["name=a"]["n"] == 6
    assert not dec["name=b"]["decided"] and dec["name=b"]["runs"] == 7
    fixed = rec.run(RecipeOptions(quick=True, probes="none"), Store(db_url), Progress())
    assert len(runs_of(fixed)) == 2 and render_text(fixed).rstrip("\n") == (
        "1 repeat per point, interleaved; medians"
    )
    assert fixed.data["repeat"]["policy"] == {"mode": "fixed", "runs": 1, "spec": "1"}


def test_many_undecided_points_are_told_on_one_line() -> None:
    from iowall.analysis.regress.repeat_rule import DecisionState
    from iowall.measure.repeat import Decider, RepeatPolicy, summary

    policy = RepeatPolicy.until_decided(8, 0.05)
    d = Decider(policy)

    def state(decided: bool, achieved: float) -> DecisionState:
        return DecisionState(decided, True, 8, 1.0, 0.9, 1.1, achieved, 0.05, 0.95, "")

    for i, (ok, x) in enumerate(
        [(False, 0.153), (False, 0.112), (True, 0.04), (False, 0.081), (False, 0.07)]
    ):
        d.runs[f"k{i}"] = 8
        d.decisions[f"k{i}"] = state(ok, x)
    names = {f"k{i}": f"p{i}" for i in range(5)}
    lines = summary(policy, d, names)
    assert lines[1:] == [
        "undecided at the maximum of 8 runs, the 95% interval of the median wider than ±5%: 4 of 5 "
        "points: p0 ±15.3%; p1 ±11.2%; p3 ±8.1%; p4 ±7%"
    ]
    # a few keep a line each, saying what the bound is
    del d.decisions["k3"], d.decisions["k4"]
    assert summary(policy, d, names)[1:] == [
        "undecided at the maximum of 8 runs: p0 (±15.3%, the 95% interval of the median)",
        "undecided at the maximum of 8 runs: p1 (±11.2%, the 95% interval of the median)",
    ]
