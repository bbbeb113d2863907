"""`iowall bisect`'s work: between a good and a bad kernel, the first bad one. Either over
ordered candidates (what `ab` boots, each with its own options), searched by
``analysis.regress.bisect``; or over the commits of a kernel tree, searched by `git bisect`
with the user's build command (``ab.gitbisect``). Each step is ``bisect_step.measure``;
the bisection's id comes from what it measures, so running the same command again resumes
it from the store. The report ends with what moved between the last good and the first bad:
their budgets side by side and the differential flame graph when both were profiled."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, Literal

from ..ab import gitbisect
from ..ab.kernels import Kernel, cache_dir, resolve
from ..ab.rounds import one_boot
from ..ab.summary import flame_pair
from ..ab.vm import vng_path
from ..analysis.explain.budget import MIN_WINDOW_S
from ..analysis.explain.context import representative
from ..analysis.explain.facts import Cost
from ..analysis.explain.run import explain
from ..analysis.regress.bisect import (
    BisectReport,
    Candidate,
    Mark,
    Moved,
    Outcome,
    Step,
    estimated_steps,
    next_index,
    outcome,
    window,
)
from ..machine.signals import interruptible
from ..model import MEASURED_STATUSES, Run, primary_metric
from ..report.emit import wrote
from ..report.flame import write_svg
from ..store import RunFilter, Store
from ..vocab.errors import UserError
from ..vocab.units import parse_size
from .ab import _kvm, _recipe_of
from .bisect_step import Bisection, Boot, Guests, Rule, measure
from .flame import flame_svg

Say = Callable[[str], None]


def read_candidates(path: str) -> list[str]:
    """The kernels of a candidates file, good first and bad last: one ``SPEC [OPTION...]``
    a line; blank lines and ``#`` comments left out."""
    try:
        with open(path) as f:
            lines = [x.split("#", 1)[0].strip() for x in f]
    except OSError as e:
        raise UserError(f"--candidates {path}: {e.strerror}") from None
    return [x for x in lines if x]


def bisection_id(key: Mapping[str, Any]) -> str:
    """The id of a bisection: a uuid made from what it measures, so the same command finds
    the steps it measured before."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "iowall-bisect:" + json.dumps(key, sort_keys=True)))


def _key(mode: str, target: str, guests: Guests, rule: Rule, **more: Any) -> dict[str, Any]:
    same = {k: v for k, v in asdict(rule).items() if k not in ("rounds", "max_rounds")}
    g = {k: getattr(guests, k) for k in ("cpus", "memory", "quick", "probes", "hold_memory")}
    return {"mode": mode, "target": target, **same, **g, **more}


def _host_checks(target: str, guests: Guests) -> tuple[str, str, str]:
    """Before any boot: the memory size, virtme-ng, the target; the target as the guest
    takes it, its recipe, and the kernel cache."""
    parse_size(guests.memory, what="--memory")
    vng_path()
    recipe = _recipe_of(target)
    target_arg = os.path.abspath(target) if os.path.isfile(target) else target
    return target_arg, recipe, os.path.realpath(cache_dir())


def _opening(b: Bisection, what: str) -> None:
    mode = "KVM" if b.kvm else "EMULATED"
    b.say(f"bisect {b.id}: {what}; guests: {mode} ({b.kvm_why}); run the same command again to resume")


def run_bisect(
    target: str,
    specs: Sequence[str],
    db: str | None,
    say: Say,
    *,
    guests: Guests,
    rule: Rule,
    flame: str | None = None,
    boot: Boot = one_boot,
) -> BisectReport:
    """Bisect ordered candidates (``SPEC [OPTION...]`` each, good first, bad last)."""
    if len(specs) < 2:
        raise UserError(f"a bisection needs a good and a bad kernel: {len(specs)} given")
    target_arg, recipe, cache = _host_checks(target, guests)
    kernels = [resolve(s, cache) for s in specs]
    labels = [k.name for k in kernels]
    for i, lab in enumerate(labels):
        if lab in labels[:i]:
            raise UserError(f"candidates {labels.index(lab) + 1} and {i + 1} are the same kernel ({lab})")
    works, why = _kvm((kernels[0], kernels[-1]), guests.allow_emulated)
    key = _key("candidates", target_arg, guests, rule, kernels=[[k.image, k.append] for k in kernels])
    b = Bisection(
        bisection_id(key), Store(db), say, target_arg, recipe, kernels[0], labels[0], cache,
        guests, rule, works, why, boot=boot,
    )  # fmt: skip
    cands = [
        Candidate(lab, k.spec + (f" {k.append}" if k.append else ""))
        for lab, k in zip(labels, kernels, strict=True)
    ]
    n = len(cands)
    _opening(b, f"{n} candidates, {labels[0]} (good) to {labels[-1]} (bad), ~{estimated_steps(n)} steps")
    with interruptible():  # SIGTERM too: the guest in flight is killed with its group
        steps = search(b, cands, kernels)
        marks = {s.index: s.mark for s in steps}
        return _report(b, "candidates", cands, outcome(n, marks), steps, flame)


def search(b: Bisection, cands: Sequence[Candidate], kernels: Sequence[Kernel]) -> list[Step]:
    """The steps of a bisection over ``cands`` (``analysis.regress.bisect.next_index``)."""
    n = len(cands)
    marks: dict[int, Mark] = {}
    steps: list[Step] = []
    while (i := next_index(n, marks)) is not None:
        lo, hi = window(n, marks)
        b.say(
            f"bisect: step {len(steps) + 1}/~{estimated_steps(n, marks)}: testing {cands[i].label} "
            f"(candidate {i + 1} of {n}, window {lo + 1}..{hi + 1})"
        )
        s = measure(b, len(steps) + 1, i, cands[i], lambda i=i: kernels[i])  # type: ignore[misc]
        marks[i] = s.mark
        steps.append(s)
    return steps


class _Images:
    """The image of each commit, built once: kept in the bisection's directory when the
    build left it in the tree (the next build would overwrite it), used in place when it
    is outside (``images.json`` remembers which)."""

    def __init__(self, root: str, tree: str, build: str, cache: str) -> None:
        self.root, self.tree, self.build, self.cache = root, tree, build, cache
        self.index = os.path.join(root, "images.json")
        os.makedirs(root, exist_ok=True)

    def _known(self) -> dict[str, str]:
        try:
            with open(self.index) as f:
                return dict(json.load(f))
        except (OSError, ValueError):
            return {}

    def kernel(self, sha: str) -> Kernel | str:
        known = self._known()
        path = known.get(sha)
        if path is None or not os.path.isfile(path):
            built, why = gitbisect.build(self.tree, self.build, sha)
            if built is None:
                return f"skipped: {why}"
            path = built
            if os.path.realpath(built).startswith(os.path.realpath(self.tree) + os.sep):
                path = os.path.join(self.root, "images", sha[:12], f"vmlinuz-{sha[:12]}")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copy2(built, path)
            known[sha] = path
            with open(self.index, "w") as f:
                json.dump(known, f)
        return resolve(path, self.cache)


def run_git_bisect(
    target: str,
    *,
    tree: str,
    build: str,
    good: str,
    bad: str,
    db: str | None,
    say: Say,
    guests: Guests,
    rule: Rule,
    flame: str | None = None,
    boot: Boot = one_boot,
) -> BisectReport:
    """Bisect the commits of ``tree`` from ``good`` to ``bad`` with `git bisect`, each built
    by ``build``; the tree is given back with ``git bisect reset`` whatever happens."""
    top = gitbisect.check_tree(tree)
    good_sha = gitbisect.commit_of(top, good, "--good-commit")
    bad_sha = gitbisect.commit_of(top, bad, "--bad-commit")
    if good_sha == bad_sha:
        raise UserError("--good-commit and --bad-commit are the same commit")
    if not gitbisect.is_ancestor(top, good_sha, bad_sha):
        raise UserError(f"--good-commit {good}: not an ancestor of --bad-commit {bad}")
    target_arg, recipe, cache = _host_checks(target, guests)
    key = _key("git", target_arg, guests, rule, tree=top, good=good_sha, bad=bad_sha, build=build)
    bid = bisection_id(key)
    images = _Images(os.path.join(cache, "bisect", bid), top, build, cache)
    gitbisect.begin(top)
    try:
        with interruptible():
            k = images.kernel(good_sha)
            if isinstance(k, str):
                raise UserError(f"--good-commit {good_sha[:12]}: {k}")
            works, why = _kvm((k, k), guests.allow_emulated)
            label = gitbisect.short(top, good_sha)
            b = Bisection(
                bid, Store(db), say, target_arg, recipe, k, label, cache, guests, rule, works, why,
                good_commit=good_sha, boot=boot,
            )  # fmt: skip
            _opening(b, f"git {top}, {label} (good) to {gitbisect.short(top, bad_sha)} (bad)")
            return _git_search(b, top, images, bad_sha, flame)
    finally:
        gitbisect.reset(top)


def _git_search(b: Bisection, top: str, images: _Images, bad_sha: str, flame: str | None) -> BisectReport:
    """The bad end against the good one, then git's steps until it names the first bad."""
    cands = [
        Candidate(b.good_label, "", b.good_commit),
        Candidate(gitbisect.short(top, bad_sha), "", bad_sha),
    ]
    b.say(f"bisect: step 1/~?: testing {cands[1].label} (the bad end)")
    steps = [measure(b, 1, 1, cands[1], lambda: images.kernel(bad_sha))]
    if steps[0].mark != "bad":
        return _report(b, "git", cands, outcome(2, {1: steps[0].mark}), steps, flame)
    gitbisect.git(top, "bisect", "bad", bad_sha)
    says = gitbisect.mark(top, "good", b.good_commit)
    while not says.done and says.next is not None:
        sha = says.next
        cands.append(Candidate(gitbisect.short(top, sha), "", sha))
        k = len(steps) + 1
        b.say(f"bisect: step {k}/~{k + (says.roughly or 0)}: testing {cands[-1].label} (git's choice)")
        steps.append(measure(b, k, len(cands) - 1, cands[-1], lambda sha=sha: images.kernel(sha)))  # type: ignore[misc]
        says = gitbisect.mark(top, steps[-1].mark, sha)
    at = {c.commit: i for i, c in enumerate(cands)}
    for named in (says.first_bad, *says.range):
        if named and named not in at:
            cands.append(Candidate(gitbisect.short(top, named), "", named))
            at[named] = len(cands) - 1
    if says.first_bad:
        parent = gitbisect.git(top, "rev-parse", f"{says.first_bad}^", check=False).strip()
        good = [s.index for s in steps if s.mark == "good" and cands[s.index].commit == parent]
        out = Outcome("culprit", good[0] if good else 0, at[says.first_bad], (at[says.first_bad],))
    else:
        idx = tuple(at[s] for s in says.range)
        out = Outcome("range", 0, idx[-1] if idx else None, idx)
    return _report(b, "git", cands, out, steps, flame)


def _report(
    b: Bisection,
    mode: Literal["candidates", "git"],
    cands: Sequence[Candidate],
    out: Outcome | None,
    steps: Sequence[Step],
    flame: str | None,
) -> BisectReport:
    assert out is not None
    moved = None
    if out.first_bad is not None:
        by = {s.index: s for s in steps}
        good_ids = b.good_runs if out.last_good == 0 else by[out.last_good].candidate_runs
        bad = by.get(out.first_bad)
        if bad is not None and bad.candidate_runs:
            path = flame or os.path.join(b.cache, "runs", b.id, "flame-diff.svg")
            moved = what_moved(b.store, good_ids, bad.candidate_runs, path)
    g = b.guests
    head = (
        (["EMULATED: no working KVM, the guests ran under software emulation"] if not b.kvm else [])
        + [
            f"guests: virtme-ng, {g.cpus} vCPUs, {g.memory}, "
            f"{'KVM' if b.kvm else 'software emulation (TCG)'}: {b.kvm_why}",
            f"each step: the candidate against every good-side run so far, {b.rule.rounds} rounds "
            f"first, one more while undecided up to {b.rule.max_rounds}, then skipped; the gate's "
            f"rule, false-discovery rate {b.rule.fdr:g}, floor {b.rule.floor:.0%}",
        ]
        + (["--judge-emulated: emulated guests' timings judged anyway"] if b.rule.judge_emulated else [])
    )
    return BisectReport(b.id, b.target, mode, tuple(cands), out, tuple(steps), moved, tuple(head))


def _measured(store: Store, ids: Sequence[int]) -> list[Run]:
    rs = store.iter_runs(RunFilter(ids=tuple(ids)), with_series=True, with_artifacts=True)
    return [r for r in rs if r.status in MEASURED_STATUSES]


def what_moved(store: Store, good_ids: Sequence[int], bad_ids: Sequence[int], flame: str) -> Moved:
    """The budgets of the last good's and the first bad's median runs side by side, the
    state whose share grew most, and their differential flame graph (written to ``flame``)."""
    g, x = _measured(store, good_ids), _measured(store, bad_ids)
    m = primary_metric(g[0]) if g else None
    rg = representative(g, m.name) if m is not None else None
    rb = representative(x, m.name) if m is not None else None
    if rg is None or rb is None:
        return Moved(None, None, why_not="no completed run with the primary metric on a side")
    pair = flame_pair(g, x)
    if isinstance(pair, str):
        drawn = pair.replace("side A", "the last good").replace("side B", "the first bad")
    else:
        write_svg(flame_svg(store, [str(pair[0]), str(pair[1])]), flame)
        wrote(flame)
        drawn = f"differential flame graph of runs {pair[0]} -> {pair[1]}: {flame}"
    eg, eb = explain(rg, g), explain(rb, x)
    costs = _costs(eg.cost, eb.cost)
    bg, bb = eg.budget, eb.budget
    if bg is None or bb is None:
        why = "no wall-clock budget on a side (it needs the threadstate probe)"
        return Moved(rg.id, rb.id, flame=drawn, why_not=why, costs=costs)
    cats = sorted(set(bg.totals) | set(bb.totals), key=lambda c: -bb.share(c))
    states = tuple((c, bg.totals.get(c, 0.0), bg.share(c), bb.totals.get(c, 0.0), bb.share(c)) for c in cats)
    grown = max(states, key=lambda s: s[4] - s[2], default=None)
    grew = grown[0] if grown is not None and grown[4] > grown[2] else ""
    short = [
        f"the {side}'s I/O lasted {b.window[1] - b.window[0]:.2f} s"
        for side, b in (("last good", bg), ("first bad", bb))
        if b.window[1] - b.window[0] < MIN_WINDOW_S
    ]
    said = (
        " and ".join(short) + f": under {MIN_WINDOW_S:g} s, start-up and the ends weigh in these figures "
        "(a larger size or a runtime explains it)"
        if short
        else ""
    )
    return Moved(rg.id, rb.id, states, grew, drawn, costs=costs, short=said)


#: The ``Cost`` fields "what moved" sets side by side, in report order.
COST_FIELDS = ("cpu_us_per_call", "cpu_ms_per_mib", "cpu_us_per_io")


def _costs(good: Cost | None, bad: Cost | None) -> tuple[tuple[str, float, float], ...]:
    """The cost of each I/O on both sides, the fields both measured."""
    if good is None or bad is None:
        return ()
    pairs = ((f, getattr(good, f), getattr(bad, f)) for f in COST_FIELDS)
    return tuple((f, a, b) for f, a, b in pairs if a is not None and b is not None)


def bisect(
    target: str,
    *,
    good: str | None,
    bad: str | None,
    kernels: Sequence[str],
    candidates: str | None,
    git: str | None,
    build: str | None,
    good_commit: str | None,
    bad_commit: str | None,
    db: str | None,
    say: Say,
    guests: Guests,
    rule: Rule,
    flame: str | None = None,
) -> BisectReport:
    """`iowall bisect` with its inputs checked: ``--good``/``--kernel``/``--bad``, a
    ``--candidates`` file, or ``--git DIR --build CMD`` with the two commits; one of them."""
    listed = good is not None or bad is not None or bool(kernels)
    if sum((listed, candidates is not None, git is not None)) != 1:
        raise UserError(
            "give one of: --good SPEC --bad SPEC [--kernel SPEC...], --candidates FILE, "
            "or --git DIR --build CMD --good-commit C --bad-commit C"
        )
    if rule.max_rounds < rule.rounds:
        raise UserError(f"--max-rounds {rule.max_rounds} is fewer than --rounds {rule.rounds}")
    if (build is not None or good_commit or bad_commit) and git is None:
        raise UserError("--build, --good-commit and --bad-commit go with --git DIR")
    if git is not None:
        if not build or not good_commit or not bad_commit:
            raise UserError("--git DIR needs --build CMD, --good-commit C and --bad-commit C")
        return run_git_bisect(
            target, tree=git, build=build, good=good_commit, bad=bad_commit, db=db, say=say,
            guests=guests, rule=rule, flame=flame,
        )  # fmt: skip
    if candidates is not None:
        specs = read_candidates(candidates)
    elif good is None or bad is None:
        raise UserError("give both --good SPEC and --bad SPEC (the --kernel ones go between them)")
    else:
        specs = [good, *kernels, bad]
    return run_bisect(target, specs, db, say, guests=guests, rule=rule, flame=flame)
