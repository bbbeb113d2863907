"""A target of `iowall run` (and of `gate`, which runs its workload the same way, and of
`limits`: ``actions.limits``): a plan file, a fio job file (a plan of one point) or a
registered recipe, checked as far as it can be without the machine, then run under the
machine lock."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..beds import BedSpec, check_place
from ..machine import journal
from ..machine.machine_lock import exclusive
from ..machine.signals import interruptible
from ..measure.repeat import RepeatPolicy
from ..measure.session import hold_memory_step, memory_note
from ..plan import Plan, load_jobfile, load_plan, memory_need, plan_report, preview, run_plan
from ..recipes.options import RecipeOptions
from ..recipes.registry import Recipe, get
from ..results import Outcome, Report
from ..store import RunFilter, Store
from ..tuning.knob_session import KnobSession
from ..vocab.errors import UserError
from ..vocab.progress import Progress

#: A progress display for a title (the face's: a rich bar on a terminal).
ProgressOf = Callable[[str], Progress]


def is_plan_path(target: str) -> bool:
    """Whether ``target`` names a file (a plan or a fio job file) rather than a recipe."""
    return target.endswith((".toml", ".fio")) or os.sep in target or os.path.isfile(target)


def load_target_plan(
    target: str,
    *,
    sets: Sequence[tuple[str, list[Any]]] = (),
    label: str | None = None,
    repeat: RepeatPolicy | None = None,
    quick: bool = False,
    bed: str | None = None,
    wipe: bool = False,
    probes: str | None = None,
    rel_target: float | None = None,
) -> Plan:
    """The plan file (or fio job file: a plan of one point) with the command line's
    overrides; ``wipe``: ``--wipe`` for the plan's own device bed when no ``--bed`` is
    given."""
    plan = load_jobfile(target) if target.endswith(".fio") else load_plan(target)
    return plan.with_overrides(
        sets=sets,
        label=label,
        repeat=repeat,
        bed=bed,
        wipe=wipe,
        quick=quick,
        target=rel_target,
        probes=probes,
    )


@dataclass(frozen=True)
class Target:
    """A plan or recipe checked as far as it can be without the machine, ready to run."""

    name: str
    title: str
    plan: Plan | None
    recipe: Recipe | None
    opts: RecipeOptions
    #: the command the machine lock's holder line names (``limits``: ``actions.limits``);
    #: None: ``run NAME``
    command: str | None = None


def prepare(
    target: str,
    *,
    sets: Sequence[tuple[str, list[Any]]] = (),
    label: str | None = None,
    repeat: RepeatPolicy | None = None,
    quick: bool = False,
    bed: str | None = None,
    wipe: bool = False,
    probes: str | None = None,
    rel_target: float | None = None,
) -> Target:
    """Load and check a plan file or a recipe's options — every check that needs no machine,
    refused knobs and the recipe's own ``--set`` axes included — before any store, lock or bed
    is touched."""
    policy = repeat
    plan: Plan | None = None
    recipe: Recipe | None = None
    if is_plan_path(target):
        plan = load_target_plan(
            target,
            sets=sets,
            label=label,
            repeat=policy,
            quick=quick,
            bed=bed,
            wipe=wipe,
            probes=probes,
            rel_target=rel_target,
        )
        preview(plan)
        title = f"plan {plan.label}"
    else:
        recipe = get(target)
        title = recipe.name
        if rel_target is not None:
            if policy is None:
                raise UserError("--target applies to --repeat auto[:MAX]: add --repeat auto")
            policy = policy.with_target(rel_target)
    opts = RecipeOptions(
        quick=quick,
        sets=tuple((k, tuple(v)) for k, v in sets),
        label=label,
        repeat=policy,
        bed=bed,
        probes=probes or "default",
    )
    if recipe is not None:
        recipe.checked(opts)
        if bed is not None:  # refused before the machine lock, not after waiting for it
            check_place(BedSpec.parse(bed))
    return Target(target, title, plan, recipe, opts)


def execute(
    t: Target, store: Store, progress: ProgressOf, wait: float | None = None, hold_memory: bool = True
) -> Report:
    """Run a prepared target under the machine lock, after recovering what a crash left.
    ``hold_memory`` (the default; False is --no-hold-memory): first hold guest memory as
    `limits` does (free page reporting off, the free memory touched), restored on every way
    out by the KnobSession; a plan touches only what it can allocate where that is known
    (``plan.execute.memory_need``); a recipe that holds it itself (``Recipe.holds_memory``:
    limits) is told through its options instead. The report's line on it (``session.memory_note``)
    ends its notes and is its ``data["guest_memory"]``. A store that could not keep a run
    (no room, read-only) is refused first (``Store.check_room``)."""
    own = t.recipe is not None and t.recipe.holds_memory
    store.check_room()  # a store that could not keep the runs: refused before the lock, not after a job
    with exclusive(t.command or f"run {t.name}", wait), interruptible(), KnobSession() as ks:
        journal.recover()
        need = memory_need(t.plan) if t.plan is not None else None
        gm = hold_memory_step(ks, progress(t.title), need) if hold_memory and not own else None
        said = None if own else memory_note(hold_memory, gm)
        if t.plan is not None:
            report = plan_report(run_plan(t.plan, store, progress(t.title)))
        else:
            assert t.recipe is not None
            report = t.recipe.run(replace(t.opts, hold_memory=hold_memory), store, progress(t.title))
        if said is not None:
            report = replace(report, notes=(*report.notes, said), data={**report.data, "guest_memory": said})
        return with_outcome(report, store)


def with_outcome(report: Report, store: Store) -> Report:
    """The report with its runs' outcome (``results.Outcome``: measured, failed, interrupted,
    the exit code) in its data and, when any run did not measure, a line of its tail."""
    runs = store.runs(RunFilter(ids=report.run_ids), metrics=lambda _: False) if report.run_ids else []
    o = Outcome.of(runs)
    said = o.sentence()
    return replace(
        report,
        data={**report.data, "outcome": o.to_json()},
        tail=(*report.tail, said) if said else report.tail,
    )


def run_target(
    target: str,
    store: Store,
    progress: ProgressOf,
    *,
    wait: float | None = None,
    hold_memory: bool = True,
    **kwargs: Any,
) -> Report:
    """Prepare and run a plan file or a recipe; ``kwargs`` are ``prepare``'s."""
    return execute(prepare(target, **kwargs), store, progress, wait, hold_memory)
