"""The recipe registry: name → Recipe (seed, description, how to run it).

A recipe module in ``iowall.recipes`` plugs in by calling ``register`` at import time; the
registry imports every module of the package the first time it is asked (``recipes()``,
``get()``), so adding a module is all it takes. A recipe is one function,
``execute(opts, store, progress) -> Report``: it reads its options, builds its tasks, runs
them through a Session and returns a Report (``iowall.results``), never rendering it; its
``check`` (the options step, reading ``--set``) runs first, before the machine lock. (A
second, plan-shaped kind of recipe existed once; no seed recipe used it, so it went: a
workload that is a plan is a plan file.)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..measure.repeat import policy_of, replay, to_json
from ..results import Report
from ..store import RunFilter, Store
from ..tuning.knob_session import KnobSession, check_exists
from ..vocab.errors import UserError
from ..vocab.knob import Knob, looks_like_knob, parse_knob
from ..vocab.progress import Progress
from .catalog import recipe_modules
from .options import RecipeOptions


@dataclass(frozen=True)
class Recipe:
    """A named, parameterised experiment reproducing a seed (``seed`` is its number, "002")."""

    name: str
    seed: str
    description: str
    execute: Callable[[RecipeOptions, Store, Progress], Report]
    module: str = ""
    #: reads the recipe's own ``--set`` axes and refuses what it cannot take, with no
    #: machine: called before the lock is taken (``checked``); a recipe passes its options
    #: step, whose result is dropped
    check: Callable[[RecipeOptions], object] | None = None
    #: the recipe holds guest memory itself, at its own step, as ``RecipeOptions.hold_memory``
    #: says (limits: before its beds); for the others `run` holds it before the recipe runs
    holds_memory: bool = False

    def run(self, opts: RecipeOptions, store: Store, progress: Progress) -> Report:
        """Run the recipe with the ``--set`` knobs held (every run is stored as it ends) and
        return its Report."""
        knobs, own = self.checked(opts)
        with KnobSession() as ks:
            for knob, value in knobs:
                ks.set(knob, value)
            held = tuple(ks.in_force.items())
            return with_repeat(self.execute(replace(own, knobs=held), store, progress), store)

    def checked(self, opts: RecipeOptions) -> tuple[list[tuple[Knob, Any]], RecipeOptions]:
        """The knobs ``--set`` holds for the whole recipe, and the options its own axes leave
        for it, checked as far as they can be without running anything (``iowall run`` calls
        this before it takes the machine lock)."""
        knobs, rest = recipe_knobs(self.name, opts)
        own = replace(opts, sets=rest)
        if self.check is not None:
            self.check(own)
        return knobs, own


def recipe_knobs(
    name: str, opts: RecipeOptions
) -> tuple[list[tuple[Knob, Any]], tuple[tuple[str, tuple[Any, ...]], ...]]:
    """Split ``--set`` into knobs held for the whole recipe (one value each: a recipe does
    not sweep knobs, a plan does) and the recipe's own axes."""
    knobs: list[tuple[Knob, Any]] = []
    rest = []
    for k, vals in opts.sets:
        if not looks_like_knob(k):
            rest.append((k, vals))
            continue
        knob = parse_knob(k)
        if knob.kind not in ("sysctl", "sysfs") or knob.needs_bed:
            raise UserError(
                f"--set {k}: a recipe holds sysctl: and sysfs:/sys/… knobs for its "
                "whole run; knobs of the bed's device need a plan (docs/plans.md)"
            )
        if len(vals) != 1:
            raise UserError(f"--set {k}= takes one value on recipe {name}; sweep it in a plan")
        if os.geteuid() != 0:
            raise UserError("knobs (sysctl, sysfs) need root: run iowall as root")
        check_exists(knob, vals)
        knobs.append((knob, vals[0]))
    return knobs, tuple(rest)


def with_repeat(rep: Report, store: Store) -> Report:
    """``rep`` with ``"repeat"`` (policy and per-point decisions) in its data, recomputed
    from its runs and the policy they recorded, unless the recipe gave it already."""
    if "repeat" in rep.data or not rep.batch:
        return rep
    runs = store.runs(RunFilter(batch=rep.batch))
    policy = policy_of(runs)
    if policy is None:
        return rep
    return replace(rep, data={**rep.data, "repeat": to_json(policy, replay(runs, policy))})


_REGISTRY: dict[str, Recipe] = {}
_BROKEN: dict[str, str] = {}
_loaded = False


def register(recipe: Recipe) -> Recipe:
    """Add a recipe (called by recipe modules at import time); names are unique."""
    old = _REGISTRY.get(recipe.name)
    if old is not None and old.module != recipe.module:
        raise ValueError(f"recipe {recipe.name!r} is registered twice ({old.module}, {recipe.module})")
    _REGISTRY[recipe.name] = recipe
    return recipe


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in recipe_modules():
        try:
            importlib.import_module(f"{__package__}.{name}")
        except Exception as e:  # one broken recipe must not hide the others
            _BROKEN[name] = f"{type(e).__name__}: {e}"


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
    raise UserError(
        f"no plan file or recipe named {name!r}: give a PLAN.toml path or one of {known} (iowall recipes)"
    )
