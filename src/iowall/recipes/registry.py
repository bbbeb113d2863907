"""The recipe registry: name → Recipe (seed, description, how to run it).

A recipe module in ``iowall.recipes`` plugs in by calling ``register`` at import time; the
registry imports every module of the package the first time it is asked (``recipes()``,
``get()``), so adding a module is all it takes. A recipe is either

- plan-shaped: ``plan(opts) -> Plan`` builds its plan (scaled to the machine, smaller with
  ``opts.quick``); the registry applies ``--set``/``--label``/``--repeat``/``--bed`` and runs
  it with ``iowall.plan.run_plan``, rendering the generic plan table unless ``render`` is
  given; or
- custom: ``execute(opts, store, progress) -> RecipeResult`` does the whole job (provision,
  tasks, Schedule) and returns its runs with its own renderers.

``iowall run NAME [--set …]`` and ``iowall recipes`` go through here.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..model import Run
from ..repeat import RepeatPolicy, as_policy

if TYPE_CHECKING:
    from ..knobs import Knob
    from ..plan import Plan, PlanResult
    from ..runner import Progress
    from ..store import Store


@dataclass(frozen=True)
class RecipeOptions:
    """What the user asked for on ``iowall run NAME``; None means "the recipe's default"."""

    quick: bool = False
    sets: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    label: str | None = None
    #: ``--repeat`` (a fixed count or auto); None: the recipe's default
    repeat: RepeatPolicy | None = None
    bed: str | None = None

    def repeats(self, quick_default: int = 1, default: int = 3) -> RepeatPolicy:
        """The policy to run with: ``--repeat`` if given, else ``quick_default`` fixed rounds
        with ``--quick`` and ``default`` without."""
        if self.repeat is not None:
            return as_policy(self.repeat)
        return RepeatPolicy(quick_default if self.quick else default)

    def values(self, name: str) -> tuple[Any, ...] | None:
        """The ``--set`` values of one axis, or None when it was not set."""
        return next((v for k, v in self.sets if k == name), None)

    def check_sets(self, recipe: str, allowed: Sequence[str]) -> None:
        """A UserError for a ``--set`` axis the recipe does not take."""
        bad = [k for k, _ in self.sets if k not in allowed]
        if bad:
            raise UserError(f"recipe {recipe} has no axis {bad[0]!r}: it takes --set "
                            + ", ".join(f"{a}=…" for a in allowed))


@dataclass(frozen=True)
class RecipeResult:
    """What a recipe run produced: the stored runs, its table as text (and Markdown), and
    extra JSON merged into ``iowall run --format json`` next to ``run_ids`` and ``runs``."""

    runs: tuple[Run, ...]
    render_text: Callable[[], str]
    render_md: Callable[[], str] | None = None
    doc: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    """A named, parameterised experiment reproducing a seed (``seed`` is its number, "002")."""

    name: str
    seed: str
    description: str
    plan: Callable[[RecipeOptions], Plan] | None = None
    execute: Callable[[RecipeOptions, Store, Progress], RecipeResult] | None = None
    #: a plan-shaped recipe's own renderer of its PlanResult (default: the plan table)
    render: Callable[[PlanResult], RecipeResult] | None = None
    module: str = ""

    def __post_init__(self) -> None:
        if (self.plan is None) == (self.execute is None):
            raise ValueError(f"recipe {self.name}: give exactly one of plan= or execute=")

    @property
    def shape(self) -> str:
        return "plan" if self.plan is not None else "custom"

    def build_plan(self, opts: RecipeOptions) -> Plan:
        """A plan-shaped recipe's plan with the command-line overrides applied."""
        if self.plan is None:
            raise UserError(f"recipe {self.name} is not plan-shaped")
        return self.plan(opts).with_overrides(sets=opts.sets, label=opts.label,
                                              repeat=opts.repeat, bed=opts.bed)

    def run(self, opts: RecipeOptions, store: Store, progress: Progress) -> RecipeResult:
        """Run the recipe (every run is stored as it ends) and return its result."""
        if self.execute is not None:
            from dataclasses import replace

            from ..knobs import KnobSession

            knobs, rest = recipe_knobs(self.name, opts)
            with KnobSession() as ks:
                for knob, value in knobs:
                    ks.set(knob, value)
                return with_repeat(self.execute(replace(opts, sets=rest), store, progress))
        from ..plan import run_plan

        res = run_plan(self.build_plan(opts), store, progress)
        return (self.render or plan_result)(res)


def recipe_knobs(name: str, opts: RecipeOptions
                 ) -> tuple[list[tuple[Knob, Any]], tuple[tuple[str, tuple[Any, ...]], ...]]:
    """Split ``--set`` into knobs held for the whole recipe (one value each: a recipe does
    not sweep knobs, a plan does) and the recipe's own axes."""
    from ..knobs import check_exists, looks_like_knob, parse_knob

    knobs: list[tuple[Knob, Any]] = []
    rest = []
    for k, vals in opts.sets:
        if not looks_like_knob(k):
            rest.append((k, vals))
            continue
        knob = parse_knob(k)
        if knob.kind not in ("sysctl", "sysfs") or knob.needs_bed:
            raise UserError(f"--set {k}: a recipe holds sysctl: and sysfs:/sys/… knobs for its "
                            "whole run; knobs of the bed's device need a plan (docs/plans.md)")
        if len(vals) != 1:
            raise UserError(f"--set {k}= takes one value on recipe {name}; sweep it in a plan")
        if os.geteuid() != 0:
            raise UserError("knobs (sysctl, sysfs) need root: run iowall as root")
        check_exists(knob)
        knobs.append((knob, vals[0]))
    return knobs, tuple(rest)


def with_repeat(res: RecipeResult) -> RecipeResult:
    """``res`` with ``"repeat"`` (policy and per-point decisions) in its JSON, recomputed
    from its runs and the policy they recorded, unless the recipe gave it already."""
    from dataclasses import replace

    from ..repeat import policy_of, replay, to_json

    policy = policy_of(res.runs)
    if "repeat" in res.doc or policy is None:
        return res
    return replace(res, doc={**res.doc, "repeat": to_json(policy, replay(res.runs, policy))})


def plan_result(res: PlanResult) -> RecipeResult:
    """The generic RecipeResult of a plan run: the plan table, its JSON."""
    from ..analysis.why import why_points
    from ..plan import render_text, table_json
    from ..repeat import replay, to_json
    from ..report.why import why_lines

    d = res.decider or replay(res.runs, res.plan.repeats)
    doc = {"label": res.plan.label, "recipe": res.plan.recipe, "batch": res.batch,
           "plan": res.plan.describe(), "table": table_json(res), "beds": list(res.beds),
           "notes": list(res.notes), "kernel": res.kernel,
           "repeat": to_json(res.plan.repeats, d, {pp.point.key(): pp.title()
                                                   for pp in res.points})}
    why = why_points(res.runs)
    doc["explain"] = why

    def text(markdown: bool) -> str:
        tail = why_lines(why, markdown=markdown)
        return render_text(res, markdown=markdown) + ("\n".join(tail) + "\n" if tail else "")

    return RecipeResult(res.runs, lambda: text(False), lambda: text(True), doc)


_REGISTRY: dict[str, Recipe] = {}
_BROKEN: dict[str, str] = {}
_loaded = False


def register(recipe: Recipe) -> Recipe:
    """Add a recipe (called by recipe modules at import time); names are unique."""
    old = _REGISTRY.get(recipe.name)
    if old is not None and old.module != recipe.module:
        raise ValueError(f"recipe {recipe.name!r} is registered twice ({old.module}, "
                         f"{recipe.module})")
    _REGISTRY[recipe.name] = recipe
    return recipe


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from .. import recipes as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in ("registry",) or info.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{pkg.__name__}.{info.name}")
        except Exception as e:  # one broken recipe must not hide the others
            _BROKEN[info.name] = f"{type(e).__name__}: {e}"
    if "limits" not in _REGISTRY:
        register(_limits_recipe())


def recipes() -> list[Recipe]:
    """Every registered recipe, by seed then name."""
    _load()
    return sorted(_REGISTRY.values(), key=lambda r: (r.seed, r.name))


def broken() -> dict[str, str]:
    """Recipe modules that failed to import, with the error."""
    _load()
    return dict(_BROKEN)


def get(name: str) -> Recipe:
    """The recipe called ``name`` or a UserError listing the known ones."""
    _load()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _BROKEN:
        raise UserError(f"recipe {name} failed to load: {_BROKEN[name]}")
    known = ", ".join(r.name for r in recipes())
    raise UserError(f"no plan file or recipe named {name!r}: give a PLAN.toml path or one of "
                    f"{known} (iowall recipes)")


# ------------------------------------------------------------------------------------------
# limits (seed 002): a custom recipe whose module predates the registry


def _limits_recipe() -> Recipe:
    return Recipe(name="limits", seed="002",
                  description="the ceilings (memory copy, direct I/O) and buffered vs direct "
                              "sequential write and read at rising job counts",
                  execute=_run_limits, module=__name__)


def _run_limits(opts: RecipeOptions, store: Store, progress: Progress) -> RecipeResult:
    from ..report.limits import render_md, render_text
    from ..store import RunFilter
    from ..units import parse_size
    from ._common import one
    from .limits import LimitsOptions, limits_json, run_limits

    opts.check_sets("limits", ("jobs", "fs", "bed_size", "mkfs", "mount"))

    jobs = opts.values("jobs")
    if jobs is not None and not all(isinstance(j, int) and not isinstance(j, bool) and j >= 1
                                    for j in jobs):
        raise UserError("--set jobs=…: job counts are whole numbers, at least 1")
    size = one(opts, "bed_size")
    lo = LimitsOptions(bed=opts.bed or "ram", fs=str(one(opts, "fs") or "xfs"),
                       size=parse_size(size, what="--set bed_size") if size is not None else None,
                       jobs=tuple(sorted(set(jobs))) if jobs is not None else None,
                       repeat=opts.repeats(quick_default=3), quick=opts.quick,
                       label=opts.label or "limits", mkfs_opts=str(one(opts, "mkfs") or ""),
                       mount_opts=str(one(opts, "mount") or ""))
    summary, ctx = run_limits(lo, store, progress)
    runs = tuple(store.runs(RunFilter(batch=str(ctx["batch"]))))
    return RecipeResult(runs, lambda: render_text(summary, ctx),
                        lambda: render_md(summary, ctx), limits_json(summary, ctx))
