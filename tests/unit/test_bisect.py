"""`iowall bisect`: the search (pure), the kernel spec with its options, and whole bisections
with a fake boot that stores runs whose throughput comes from a table per candidate (no
guest): the culprit found in about log2(N) + 1 steps, no regression said, a candidate that
does not boot skipped, an interrupted bisection resumed without a step measured twice, and
`git bisect` driven in a tiny real repository with a fake build."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from iowall.ab.kernels import Kernel, resolve, split_spec
from iowall.ab.rounds import SIDES, AbConfig, BootRecord
from iowall.ab.vm import vng_argv
from iowall.actions import bisect as bisect_mod
from iowall.actions.ab import _labels
from iowall.actions.bisect_step import Guests, Rule
from iowall.analysis.regress.bisect import Mark, estimated_steps, next_index, outcome, window
from iowall.cli.main import main
from iowall.model import Metric, Point, Run
from iowall.report.emit import render
from iowall.store import Store
from iowall.vocab.errors import UserError

# ------------------------------------------------------------------------------ the search


def _bisect_pure(n: int, first_bad: int, skip: frozenset[int] = frozenset()) -> tuple[list[int], object]:
    marks: dict[int, Mark] = {}
    tested = []
    while (i := next_index(n, marks)) is not None:
        tested.append(i)
        marks[i] = "skip" if i in skip else ("bad" if i >= first_bad else "good")
    return tested, outcome(n, marks)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 9, 16, 17])
def test_the_search_finds_every_first_bad_in_log2_steps(n: int) -> None:
    for first_bad in range(1, n):
        tested, out = _bisect_pure(n, first_bad)
        assert out.kind == "culprit" and out.first_bad == first_bad  # type: ignore[attr-defined]
        assert out.last_good == first_bad - 1  # type: ignore[attr-defined]
        assert len(tested) <= 1 + math.ceil(math.log2(n - 1)) == estimated_steps(n)
        assert tested[0] == n - 1 and len(set(tested)) == len(tested)


def test_the_bad_end_is_measured_first_and_a_good_one_ends_it() -> None:
    assert next_index(8, {}) == 7
    assert next_index(8, {7: "good"}) is None
    assert outcome(8, {7: "good"}).kind == "none"  # type: ignore[union-attr]
    assert outcome(8, {7: "skip"}).kind == "undecided"  # type: ignore[union-attr]
    assert outcome(8, {7: "bad"}) is None  # candidates left to test


def test_a_skipped_candidate_sends_the_search_to_a_neighbour() -> None:
    tested, out = _bisect_pure(8, 5, frozenset({4}))
    assert tested == [7, 3, 5, 4]
    assert out.kind == "range" and out.candidates == (4, 5)  # type: ignore[attr-defined]
    tested, out = _bisect_pure(8, 5, frozenset({3}))
    assert tested[:3] == [7, 3, 4]  # the middle skipped: its nearest neighbour next
    assert out.kind == "culprit" and out.first_bad == 5  # type: ignore[attr-defined]


def test_a_good_above_the_first_bad_is_not_followed() -> None:
    assert window(8, {7: "bad", 3: "bad", 5: "good", 1: "good"}) == (1, 3)


# --------------------------------------------------------------------- kernel with options


def test_a_kernel_spec_carries_its_options_and_its_own_label(tmp_path: Path) -> None:
    assert split_spec("  6.1.0-50-amd64   init_on_alloc=1  quiet ") == (
        "6.1.0-50-amd64",
        "init_on_alloc=1 quiet",
    )
    assert split_spec("linux-image-6.12.111+deb12-amd64-unsigned") == (
        "linux-image-6.12.111+deb12-amd64-unsigned",
        "",
    )
    with pytest.raises(UserError):
        split_spec("   ")
    img = tmp_path / "vmlinuz-6.1.0-50-amd64"
    img.write_bytes(b"x")
    plain, planted = resolve(str(img), str(tmp_path)), resolve(f"{img} init_on_alloc=1", str(tmp_path))
    assert planted.name == "6.1.0-50-amd64+init_on_alloc=1" and plain.name == "6.1.0-50-amd64"
    assert _labels((plain, planted)) == ("6.1.0-50-amd64", "6.1.0-50-amd64+init_on_alloc=1")
    argv = vng_argv("vng", planted, cpus=1, memory="1G", kvm=True, shared="/s", command="true")
    assert argv[argv.index("--append") + 1] == "init_on_alloc=1"
    assert "--append" not in vng_argv(
        "vng", plain, cpus=1, memory="1G", kvm=True, shared="/s", command="true"
    )


# ------------------------------------------------------------------ bisections, fake boots

GOOD_BW, BAD_BW = 1.0e9, 0.8e9


def _fake_boot(
    speed: Callable[[Kernel], float],
    calls: list[tuple[str, int]],
    *,
    dead: set[str] = frozenset(),
    stop_at: int = 0,
    emulated: bool = False,
) -> Callable[..., BootRecord]:
    """A boot that stores one run of the kernel's table speed (0.3% noise by round and
    side); ``dead`` labels never reach the command; the ``stop_at``-th call is a Ctrl-C;
    ``emulated``: the runs say so, as a guest without KVM's do."""

    def boot(cfg: AbConfig, store: Store, rnd: int, side: int, attempt: int) -> BootRecord:
        label = cfg.labels[side]
        calls.append((label, cfg.side_env[1]["bisect"]["step"]))
        if stop_at and len(calls) == stop_at:
            raise KeyboardInterrupt
        if label in dead:
            return BootRecord(rnd, SIDES[side], label, False, False, 1.0, None, (), "no banner")
        noise = 1.0 + 0.003 * ((rnd * 2 + side) % 3 - 1)
        run = Run(
            point=Point("plan:bisect", {"rw": "write"}),
            label=label,
            status="ok",
            started_at=float(rnd),
            finished_at=float(rnd) + 1,
            metrics=(Metric("write_bw_bytes_per_s", speed(cfg.kernels[side]) * noise, "B/s"),),
            env={
                "host": {"cpu_count": 2, "mem_total_bytes": 2 << 30},
                "ab": {"round": rnd, "side": SIDES[side]},
            }
            | dict(cfg.side_env[side])
            | {"emulated": emulated},
            batch=cfg.batch,
        )
        return BootRecord(rnd, SIDES[side], label, True, True, 1.0, 1.0, (store.add_run(run),))

    return boot


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No virtme-ng, no KVM check, no recipe lookup: the fake boot stands for the guests."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(bisect_mod, "vng_path", lambda: "vng")
    monkeypatch.setattr(bisect_mod, "_kvm", lambda kernels, allow: (True, "faked"))
    monkeypatch.setattr(bisect_mod, "_recipe_of", lambda target: "plan:bisect")
    return tmp_path


def _candidates(root: Path, n: int = 8) -> list[str]:
    out = []
    for i in range(n):
        img = root / f"vmlinuz-c{i}"
        img.write_bytes(b"x")
        out.append(str(img))
    return out


def _table(first_bad: int) -> Callable[[Kernel], float]:
    return lambda k: BAD_BW if int(k.release[1:]) >= first_bad else GOOD_BW


def _bisect(db: str, specs: list[str], boot: Callable[..., BootRecord], **rule: object) -> object:
    return bisect_mod.run_bisect(
        "plan.toml",
        specs,
        db,
        lambda _: None,
        guests=Guests(),
        rule=Rule(**rule),
        boot=boot,  # type: ignore[arg-type]
    )


def test_a_bisection_finds_the_first_bad_candidate(host: Path, db_url: str) -> None:
    calls: list[tuple[str, int]] = []
    rep = _bisect(db_url, _candidates(host), _fake_boot(_table(5), calls))
    assert rep.outcome.kind == "culprit" and rep.outcome.first_bad == 5  # type: ignore[attr-defined]
    assert rep.candidates[5].label == "c5" and rep.exit_code == 0  # type: ignore[attr-defined]
    steps = rep.steps  # type: ignore[attr-defined]
    assert [s.index for s in steps] == [7, 3, 5, 4] and len(steps) <= math.log2(8) + 2
    assert [s.mark for s in steps] == ["bad", "good", "bad", "good"]
    assert all(s.rounds == 2 for s in steps) and len(calls) == 4 * 2 * 2
    bad = steps[0]
    assert bad.metric == "write_bw_bytes_per_s" and 0.78 < bad.ratio < 0.82  # type: ignore[operator]
    # the baseline grows: step 4 judged against every good-side run so far
    assert len(steps[3].good_runs) == 2 and bad.n == (2, 2) and steps[3].n == (8, 2)
    store = Store(db_url)
    runs = store.runs()
    assert all(r.env["bisect"]["id"] == rep.id for r in runs)  # type: ignore[attr-defined]
    text = render(rep, "text")
    assert text.startswith("iowall bisect: first bad: c5") and "last good: c4 (candidate 5 of 8)" in text
    assert "no completed run" not in text and "no wall-clock budget" in text
    assert render(rep, "mail").startswith("Subject: [iowall bisect] first bad: c5: write_bw_bytes_per_s -20.")
    assert "| step |" in render(rep, "md")
    doc = json.loads(render(rep, "json"))
    assert doc["first_bad"]["label"] == "c5" and len(doc["steps"]) == 4 and doc["exit_code"] == 0


def test_no_regression_between_good_and_bad_is_said(host: Path, db_url: str) -> None:
    calls: list[tuple[str, int]] = []
    rep = _bisect(db_url, _candidates(host), _fake_boot(lambda k: GOOD_BW, calls))
    assert rep.outcome.kind == "none" and len(rep.steps) == 1 and rep.exit_code == 0  # type: ignore[attr-defined]
    assert "no regression between c0 (good) and c7 (bad)" in render(rep, "text")


def test_an_undecided_step_gets_more_rounds_then_is_skipped(host: Path, db_url: str) -> None:
    """Emulated guests are never judged: each step is booted up to --max-rounds, then
    skipped, and a bad end so undecided ends the bisection; --judge-emulated judges them."""
    calls: list[tuple[str, int]] = []
    specs = _candidates(host, 3)
    rep = _bisect(db_url, specs, _fake_boot(_table(2), calls, emulated=True), max_rounds=3)
    step = rep.steps[0]  # type: ignore[attr-defined]
    assert step.mark == "skip" and step.rounds == 3 and "undecided after 3 rounds" in step.why
    assert "emulated guests are not judged" in step.why and len(calls) == 6
    assert rep.outcome.kind == "undecided" and rep.exit_code == 3  # type: ignore[attr-defined]
    judged = _bisect(db_url, specs, _fake_boot(_table(2), [], emulated=True), judge_emulated=True)
    assert judged.outcome.first_bad == 2 and judged.steps[0].rounds == 2  # type: ignore[attr-defined]
    assert "--judge-emulated: emulated guests' timings judged anyway" in render(judged, "text")


def test_a_candidate_that_does_not_boot_is_skipped(host: Path, db_url: str) -> None:
    calls: list[tuple[str, int]] = []
    rep = _bisect(db_url, _candidates(host), _fake_boot(_table(5), calls, dead={"c4"}))
    marks = {s.index: s.mark for s in rep.steps}  # type: ignore[attr-defined]
    assert marks[4] == "skip" and "does not boot" in next(s.why for s in rep.steps if s.index == 4)  # type: ignore[attr-defined]
    assert rep.outcome.kind == "range" and rep.outcome.candidates == (4, 5) and rep.exit_code == 3  # type: ignore[attr-defined]
    assert "may be the first bad: c5" in render(rep, "text")
    step = next(s.step for s in rep.steps if s.index == 4)  # type: ignore[attr-defined]
    assert [label for label, st in calls if st == step] == ["c4"]  # found out before c0 booted


def test_a_good_kernel_that_does_not_boot_ends_the_bisection(host: Path, db_url: str) -> None:
    with pytest.raises(UserError, match="the good kernel c0 does not boot"):
        _bisect(db_url, _candidates(host), _fake_boot(_table(5), [], dead={"c0"}))


def test_an_interrupted_bisection_resumes_without_measuring_a_step_twice(host: Path, db_url: str) -> None:
    specs = _candidates(host)
    first: list[tuple[str, int]] = []
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C in step 3's first round
        _bisect(db_url, specs, _fake_boot(_table(5), first, stop_at=9))
    assert len(first) == 9 and {step for _, step in first} == {1, 2, 3}
    again: list[tuple[str, int]] = []
    rep = _bisect(db_url, specs, _fake_boot(_table(5), again))
    assert {step for _, step in again} == {3, 4}  # steps 1 and 2 read from the store
    assert rep.outcome.first_bad == 5 and [s.index for s in rep.steps] == [7, 3, 5, 4]  # type: ignore[attr-defined]
    assert rep.steps[1].n == (4, 2)  # type: ignore[attr-defined]
    third: list[tuple[str, int]] = []
    assert _bisect(db_url, specs, _fake_boot(_table(5), third)).outcome.first_bad == 5  # type: ignore[attr-defined]
    assert third == []  # a finished bisection is printed again from the store


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cands = tmp_path / "c.txt"
    cands.write_text("# good first\nc0\n")
    cases = [
        ["bisect", "t", "--candidates", str(cands), "--git", str(tmp_path)],
        ["bisect", "t", "--git", str(tmp_path), "--good-commit", "a", "--bad-commit", "b"],
        ["bisect", "t", "--good", "x"],
        ["bisect", "t", "--candidates", str(cands)],
        ["bisect", "t", "--good", "a", "--bad", "b", "--rounds", "5", "--max-rounds", "4"],
        ["bisect", "t", "--git", str(tmp_path), "--build", "true", "--good-commit", "a", "--bad-commit", "b"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("iowall: error: ") and err.count("\n") == 1, err
    assert main(cases[-1]) == 2 and "not a git work tree" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- git


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _repo(root: Path, n: int, first_bad: int, broken: int | None = None) -> tuple[Path, list[str]]:
    """A tree of ``n`` commits whose file ``speed`` is the kernel's throughput (lower from
    ``first_bad``); ``broken``'s build fails."""
    repo = root / "linux"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (repo / "speed").write_text("fail\n" if i == broken else f"{BAD_BW if i >= first_bad else GOOD_BW}\n")
        (repo / "n").write_text(f"{i}\n")
        _git(repo, "add", "speed", "n")
        _git(repo, "commit", "-q", "-m", f"commit {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


#: The fake build: the image is the speed file, left in the tree; "fail" fails the build.
BUILD = "grep -q fail speed && exit 1; cp speed bzImage-out && echo building >&2 && echo bzImage-out"


def _image_speed(k: Kernel) -> float:
    return float(Path(k.image).read_text())


def _git_bisect(db: str, repo: Path, shas: list[str], boot: Callable[..., BootRecord]) -> object:
    return bisect_mod.run_git_bisect(
        "plan.toml", tree=str(repo), build=BUILD, good=shas[0], bad=shas[-1], db=db,
        say=lambda _: None, guests=Guests(), rule=Rule(), boot=boot,  # type: ignore[arg-type]
    )  # fmt: skip


def test_git_bisect_is_driven_to_the_first_bad_commit(host: Path, db_url: str) -> None:
    repo, shas = _repo(host, 8, 5)
    calls: list[tuple[str, int]] = []
    rep = _git_bisect(db_url, repo, shas, _fake_boot(_image_speed, calls))
    assert rep.outcome.kind == "culprit" and rep.exit_code == 0  # type: ignore[attr-defined]
    assert rep.candidates[rep.outcome.first_bad].commit == shas[5]  # type: ignore[attr-defined]
    assert rep.candidates[rep.outcome.last_good].commit == shas[4]  # type: ignore[attr-defined]
    assert len(rep.steps) <= math.log2(8) + 2  # type: ignore[attr-defined]
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"  # git bisect reset
    assert not (repo / ".git" / "BISECT_LOG").exists()
    runs = Store(db_url).runs()
    assert {r.env["commit"] for r in runs if r.env["ab"]["side"] == "A"} == {shas[0]}
    assert shas[5] in {r.env["commit"] for r in runs}
    assert f"commit: {shas[5]}" in render(rep, "mail")


def test_a_commit_that_does_not_build_is_skipped_and_the_tree_reset(host: Path, db_url: str) -> None:
    repo, shas = _repo(host, 8, 5, broken=3)
    rep = _git_bisect(db_url, repo, shas, _fake_boot(_image_speed, []))
    skipped = [s for s in rep.steps if s.mark == "skip"]  # type: ignore[attr-defined]
    assert [s.commit for s in skipped] == [shas[3]] and "the build exited 1" in skipped[0].why
    assert rep.candidates[rep.outcome.first_bad].commit == shas[5]  # type: ignore[attr-defined]
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_git_is_reset_when_the_bisection_is_interrupted(host: Path, db_url: str) -> None:
    repo, shas = _repo(host, 8, 5)
    first: list[tuple[str, int]] = []
    with pytest.raises(KeyboardInterrupt):
        _git_bisect(db_url, repo, shas, _fake_boot(_image_speed, first, stop_at=6))
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    again: list[tuple[str, int]] = []
    rep = _git_bisect(db_url, repo, shas, _fake_boot(_image_speed, again))
    assert 1 not in {step for _, step in again}  # the bad end was measured before
    assert rep.candidates[rep.outcome.first_bad].commit == shas[5]  # type: ignore[attr-defined]


def test_what_moved_shows_both_budgets_and_names_the_state_that_grew() -> None:
    from iowall.analysis.regress.bisect import BisectReport, Candidate, Moved, Outcome, Step

    moved = Moved(
        14,
        10,
        (
            ("blocked:writeback", 1.0, 0.1, 3.0, 0.3),
            ("kernel", 6.0, 0.6, 5.6, 0.56),
            ("user", 3.0, 0.3, 1.4, 0.14),
        ),
        "blocked:writeback",
        "differential flame graph of runs 14 -> 10: /x/flame-diff.svg",
        costs=(("cpu_us_per_call", 111.054, 240.972), ("cpu_ms_per_mib", 24.6144, 59.7775)),
        short="the last good's I/O lasted 1.52 s: under 2 s, start-up and the ends weigh in these figures",
    )
    cands = tuple(Candidate(f"c{i}", f"c{i}") for i in range(3))
    step = Step(
        1, 2, "c2", "c2", "", 2, "bad", "regression", "write_bw_bytes_per_s", "B/s", 1e9, 8e8, 0.8, (0.7, 0.9)
    )
    rep = BisectReport("id", "plan.toml", "candidates", cands, Outcome("culprit", 1, 2, (2,)), (step,), moved)
    text = render(rep, "text")
    assert "What moved between c1 (run 14) and c2 (run 10)" in text
    row = next(x for x in text.splitlines() if x.lstrip().startswith("blocked"))
    assert row.split()[-5:] == ["1.00", "10.0%", "3.00", "30.0%", "+20.0"]
    assert "grew most: blocked: " in text and "10.0% -> 30.0% of the wall-clock time" in text
    assert "/x/flame-diff.svg" in text and "/x/flame-diff.svg" in render(rep, "md")
    assert json.loads(render(rep, "json"))["moved"]["grew"] == "blocked:writeback"
    # the cost of each call beside the shares (page-table isolation moves it, not the shares),
    # from the real bisection's runs 29 and 49 (docs/bisect.md)
    call = next(x for x in text.splitlines() if "per read/write call" in x)
    assert call.split()[-5:] == ["111.05", "us", "240.97", "us", "x2.17"], call
    assert "on a CPU: kernel" in text and "lasted 1.52 s: under 2 s" in " ".join(text.split())
    assert json.loads(render(rep, "json"))["moved"]["costs"][0] == ["cpu_us_per_call", 111.054, 240.972]


def test_git_inputs_are_checked_before_anything_is_built(host: Path, db_url: str) -> None:
    repo, shas = _repo(host, 3, 2)
    with pytest.raises(UserError, match="not an ancestor"):
        bisect_mod.run_git_bisect(
            "plan.toml", tree=str(repo), build=BUILD, good=shas[2], bad=shas[0], db=db_url,
            say=lambda _: None, guests=Guests(), rule=Rule(),
        )  # fmt: skip
    with pytest.raises(UserError, match="no such commit"):
        _git_bisect(db_url, repo, [shas[0], "nothere"], _fake_boot(_image_speed, []))
    _git(repo, "bisect", "start")
    with pytest.raises(UserError, match="a git bisect is in progress"):
        _git_bisect(db_url, repo, shas, _fake_boot(_image_speed, []))
    assert (repo / ".git" / "BISECT_START").exists()  # the user's own bisection is left alone
    assert not (repo / "bzImage-out").exists()


def _boot_runs(label: str, bws: list[float], boot: str) -> list[Run]:
    return [
        Run(
            Point("plan:bisect", {"rw": "write"}),
            label,
            "ok",
            float(i),
            float(i) + 1,
            metrics=(Metric("write_bw_bytes_per_s", bw, "B/s"),),
            env={"host": {"cpu_count": 2}, "ab": {"round": 1, "side": boot}},
            batch="b",
            id=hash((label, i)) % 10_000,
        )
        for i, bw in enumerate(bws)
    ]


def test_a_pass_is_not_good_unless_shown_from_both_ends() -> None:
    """One emulated boot a side (a real one: 51, 38 and 14 MB/s against 11, 14 and 10, a
    71% fall its interval could not show): the gate passes it, and before, the bisection took
    its bad end for good ("no regression between good and bad"). Now the bad end is good only
    when its interval rules out a regression beyond the floor, and a candidate between only
    when it is shown better than the bad end."""
    from iowall.actions.bisect_step import judge
    from iowall.analysis.regress.bisect import mark_of, step_mark

    good = _boot_runs("good", [50.8e6, 38.2e6, 13.9e6], "A")
    bad = _boot_runs("bad", [10.7e6, 14.5e6, 10.1e6], "B")
    res = judge(good, bad, ("good", "bad"), Rule())
    assert res is not None and mark_of(res) == "good"  # the gate alone: nothing shown, a pass
    assert step_mark(res, None, bad_end=True)[0] == "undecided"
    # a candidate between that passes against the good kernel but is not shown better than
    # the bad end: undecided; shown better: good
    tight = _boot_runs("good", [50e6, 50.1e6, 49.9e6, 50.05e6], "A")
    mid = _boot_runs("mid", [49.8e6, 50.2e6, 50e6, 49.95e6], "B")
    low = _boot_runs("bad", [40e6, 40.1e6, 39.9e6, 40.05e6], "B")
    vs_good = judge(tight, mid, ("good", "mid"), Rule())
    assert vs_good is not None and mark_of(vs_good) == "good"
    assert step_mark(vs_good, judge(low, mid, ("bad", "mid"), Rule()), bad_end=False)[0] == "good"
    assert step_mark(vs_good, judge(mid, mid, ("bad", "mid"), Rule()), bad_end=False)[0] == "undecided"
    assert step_mark(vs_good, None, bad_end=True)[0] == "good"  # within the floor: shown
