"""One step of `iowall bisect`: boot the good kernel and a candidate in interleaved rounds
(``ab.rounds``), decide with the gate's rule (``compare`` then ``decide``) whether the
candidate regressed against every good-side run of the bisection so far, add a round while
undecided up to the most, and keep the step in the store (a report under the step's own
batch), so that an interrupted bisection resumes without measuring a step twice."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..ab.kernels import Kernel
from ..ab.rounds import AbConfig, BootRecord, DoesNotBoot, one_boot, run_rounds
from ..analysis.regress.bisect import Candidate, Mark, Step, headline, step_mark
from ..analysis.regress.compare import Side, compare
from ..analysis.regress.gate import GateResult, decide
from ..model import Run
from ..results import Report
from ..store import RunFilter, Store
from ..store.reports import add_report, get_report
from ..vocab.errors import NotFound, UserError

Boot = Callable[[AbConfig, Store, int, int, int], BootRecord]


@dataclass(frozen=True)
class Guests:
    """The guests' options, as `ab` takes them."""

    cpus: int = 2
    memory: str = "2G"
    allow_emulated: bool = False
    quick: bool = False
    probes: str = "default"
    timeout: float = 3600.0
    boot_timeout: float = 120.0
    boot_attempts: int = 2
    hold_memory: bool = True

    def run_opts(self) -> tuple[str, ...]:
        return tuple(
            ["--bed", "ram", "--probes", self.probes]
            + (["--quick"] if self.quick else [])
            + ([] if self.hold_memory else ["--no-hold-memory"])
        )


@dataclass(frozen=True)
class Rule:
    """How a step decides: rounds first, at most ``max_rounds``, the gate's metrics, floor
    and false-discovery rate; ``judge_emulated`` judges emulated guests' runs anyway."""

    rounds: int = 2
    max_rounds: int = 4
    metric: tuple[str, ...] = ()
    floor: float = 0.02
    fdr: float = 0.05
    judge_emulated: bool = False


@dataclass
class Bisection:
    """What every step shares: the bisection's id and store, the good kernel, the target,
    the options, and the good-side runs measured so far (the baseline of the next step)."""

    id: str
    store: Store
    say: Callable[[str], None]
    target: str
    recipe: str
    good: Kernel
    good_label: str
    cache: str
    guests: Guests = field(default_factory=Guests)
    rule: Rule = field(default_factory=Rule)
    kvm: bool = False
    kvm_why: str = ""
    good_commit: str = ""
    boot: Boot = one_boot
    good_runs: list[int] = field(default_factory=list)
    #: the bad end's runs (step 1, once it regressed): a candidate between is good only when
    #: shown better than they are (``analysis.regress.bisect.step_mark``)
    bad_runs: list[int] = field(default_factory=list)


def step_batch(bisection_id: str, step: int, what: str) -> str:
    """The batch of a step's runs and report: the same for the same step of the same
    bisection testing the same candidate, so a second invocation finds it."""
    return str(uuid.uuid5(uuid.UUID(bisection_id), f"step {step}: {what}"))


def stored_step(b: Bisection, batch: str) -> Step | None:
    """The step kept under ``batch`` by an earlier invocation (its good-side runs joined to
    the baseline), or None."""
    try:
        rep = get_report(b.store, batch)
    except NotFound:
        return None
    step = Step.from_json(rep.data["step"])
    b.good_runs += [i for i in step.good_runs if i not in b.good_runs]
    return step


def keep(b: Bisection, batch: str, step: Step) -> Step:
    """Store ``step`` as the report of its batch."""
    add_report(
        b.store,
        Report(
            kind="bisect",
            name="bisect step",
            title=f"bisect {b.id}: step {step.step}: {step.label} {step.mark} ({step.why})",
            label=step.label,
            batch=batch,
            run_ids=(*step.good_runs, *step.candidate_runs),
            data={"bisect": b.id, "step": step.to_json()},
        ),
    )
    return step


def _per_boot(runs: Sequence[Run], judge_emulated: bool) -> list[Run]:
    """Runs as the decision takes them: each boot its own invocation (its batch and round),
    since one guest's runs share its state; emulated marks dropped when asked to judge."""
    out = []
    for r in runs:
        ab = r.env.get("ab") or {}
        env = {**r.env, "emulated": False} if judge_emulated else r.env
        out.append(replace(r, batch=f"{r.batch}/{ab.get('round', '')}{ab.get('side', '')}", env=env))
    return out


def judge(good: Sequence[Run], cand: Sequence[Run], labels: tuple[str, str], rule: Rule) -> GateResult | None:
    """The gate's result of the candidate's runs against the good side's, or None when no
    point and metric was measured on both."""
    metrics = list(rule.metric) or None
    res = compare(
        Side(labels[0], _per_boot(good, rule.judge_emulated)),
        [Side(labels[1], _per_boot(cand, rule.judge_emulated))],
        metrics=metrics,
        floor=rule.floor,
        compared="label",
        by_invocation=False,
    )
    if not res.rows:
        return None
    return decide(res, fdr=rule.fdr, fail_on=metrics)


def _evidence(res: GateResult | None, mark: Mark, rounds: int) -> dict[str, object]:
    """The step's why and its headline row's numbers."""
    if res is None:
        return {"why": "no point and metric measured on both sides"}
    v = headline(res)
    if mark == "skip":
        why = f"undecided after {rounds} rounds" + (
            ": emulated guests are not judged (--judge-emulated)" if res.compare.emulated else ""
        )
    else:
        why = res.word + (f", q = {v.q_value:.2g}" if v is not None and mark == "bad" else "")
    if v is None:
        return {"why": why}
    c = v.row.cmp
    return {
        "why": why,
        "metric": v.row.metric,
        "unit": v.row.unit,
        "base_median": c.base_median,
        "new_median": c.new_median,
        "ratio": c.ratio,
        "ci": (c.ci_low, c.ci_high),
        "n": (c.n_base, c.n_new),
    }


def measure(
    b: Bisection,
    step: int,
    index: int,
    cand: Candidate,
    kernel: Callable[[], Kernel | str],
) -> Step:
    """Step ``step`` on candidate ``index``: the stored one when an earlier invocation
    finished it; else ``kernel()`` (a kernel, or why there is none: a build that failed,
    which skips it), booted beside the good kernel until the gate's rule decides or
    ``rule.max_rounds`` are booted (then skipped). A candidate that does not boot is
    skipped; a good kernel that does not boot ends the bisection (a UserError)."""
    batch = step_batch(b.id, step, f"{index} {cand.spec} {cand.commit}")
    done = stored_step(b, batch)
    if done is not None:
        b.say(f"bisect: step {step}: {cand.label} {done.mark} (measured before: {done.why})")
        return _bad_end(b, done)
    base = Step(step, index, cand.label, cand.spec, cand.commit, 0, "skip", "")
    k = kernel()
    if isinstance(k, str):
        return keep(b, batch, replace(base, why=k))
    workdir = os.path.join(b.cache, "runs", b.id, f"step{step}-{uuid.uuid4().hex[:8]}")
    os.makedirs(workdir)
    cfg = AbConfig(
        kernels=(b.good, k),
        labels=(b.good_label, cand.label),
        target=b.target,
        recipe=b.recipe,
        rounds=b.rule.rounds,
        cpus=b.guests.cpus,
        memory=b.guests.memory,
        kvm=b.kvm,
        kvm_why=b.kvm_why,
        workdir=workdir,
        batch=batch,
        run_opts=b.guests.run_opts(),
        timeout_s=b.guests.timeout,
        boot_timeout_s=b.guests.boot_timeout,
        boot_attempts=b.guests.boot_attempts,
        side_env=(_env(b, step, 0, b.good_commit), _env(b, step, index, cand.commit)),
        b_first=True,  # a candidate that does not boot is found out before the good kernel boots
    )
    return _bad_end(b, keep(b, batch, _rounds(b, cfg, base)))


def _bad_end(b: Bisection, s: Step) -> Step:
    """``s``, its runs kept as the bad end's when it is step 1 and regressed: the second
    end every later candidate is judged against."""
    if s.step == 1 and s.mark == "bad":
        b.bad_runs = list(s.candidate_runs)
    return s


def _env(b: Bisection, step: int, index: int, commit: str) -> dict[str, object]:
    env: dict[str, object] = {"bisect": {"id": b.id, "step": step, "index": index}}
    return {**env, "commit": commit} if commit else env


def _rounds(b: Bisection, cfg: AbConfig, base: Step) -> Step:
    """Rounds until the rule decides (``measure``); the step with its evidence."""
    records: list[BootRecord] = []
    done, todo = 0, cfg.rounds
    while True:
        try:
            records += run_rounds(replace(cfg, first_round=done + 1, rounds=todo), b.store, b.say, b.boot)
        except DoesNotBoot as e:
            if e.side == 0:
                raise UserError(f"the good kernel {b.good_label} does not boot: {e}") from None
            good = _ids(records, "A")
            b.good_runs += good
            return replace(base, rounds=done, why=f"does not boot ({str(e)[:160]})", good_runs=good)
        done += todo
        good_ids, cand_ids = _ids(records, "A"), _ids(records, "B")
        cand = _load(b.store, cand_ids)
        res = judge(_load(b.store, [*b.good_runs, *good_ids]), cand, cfg.labels, b.rule)
        vs_bad = (
            judge(_load(b.store, b.bad_runs), cand, ("the bad end", cfg.labels[1]), b.rule)
            if b.bad_runs
            else None
        )
        said, reason = step_mark(res, vs_bad, bad_end=base.step == 1)
        if said != "undecided" or done >= b.rule.max_rounds:
            break
        b.say(f"bisect: step {base.step}: {base.label} undecided after {done} rounds: one more round")
        todo = 1
    mark: Mark = "skip" if said == "undecided" else said  # type: ignore[assignment]
    b.good_runs += good_ids
    ev = _evidence(res, mark, done)
    if reason and mark == "skip":
        ev["why"] = f"undecided after {done} rounds: {reason}"
    return replace(base, rounds=done, mark=mark, good_runs=good_ids, candidate_runs=cand_ids, **ev)  # type: ignore[arg-type]


def _ids(records: Sequence[BootRecord], side: str) -> tuple[int, ...]:
    return tuple(i for r in records if r.side == side for i in r.run_ids)


def _load(store: Store, ids: Sequence[int]) -> list[Run]:
    return store.runs(RunFilter(ids=tuple(ids))) if ids else []
