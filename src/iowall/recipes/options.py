"""What the user asked of a recipe (``iowall run NAME --set … --quick …``), and reading its
``--set`` values: one value, whole counts, sizes. A recipe's Session comes from here, so the
knobs held for the whole recipe and the chosen probes reach every run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..measure.repeat import RepeatPolicy, as_policy
from ..measure.session import Session
from ..store import Store
from ..vocab.errors import UserError
from ..vocab.progress import Progress
from ..vocab.units import parse_size

if TYPE_CHECKING:  # the limits package registers its recipe with these options: a cycle at run time
    from .limits.options import LimitsOptions


@dataclass(frozen=True)
class RecipeOptions:
    """What the user asked for on ``iowall run NAME``; None means "the recipe's default"."""

    quick: bool = False
    sets: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    label: str | None = None
    #: ``--repeat`` (a fixed count or auto); None: the recipe's default
    repeat: RepeatPolicy | None = None
    bed: str | None = None
    #: ``--probes``: default, all, none or a comma list
    probes: str = "default"
    #: knobs held for the whole recipe (name → value read back), set by ``Recipe.run``
    knobs: tuple[tuple[str, str], ...] = ()
    #: guest memory held (False: --no-hold-memory); read by a recipe that holds it itself
    #: (``Recipe.holds_memory``), set by ``actions.target.execute``
    hold_memory: bool = True
    #: `iowall limits`: the limits recipe's options built from that command's own flags
    #: (``actions.limits.prepare_limits``; its messages name them), read instead of ``sets``;
    #: None for `iowall run limits`, which sets them with ``--set``
    limits: LimitsOptions | None = None

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
            raise UserError(
                f"recipe {recipe} has no axis {bad[0]!r}: it takes --set "
                + ", ".join(f"{a}=…" for a in allowed)
            )

    def session(self, store: Store, progress: Progress, label: str) -> Session:
        """The Session a recipe runs its points in."""
        return Session(
            store=store,
            label=self.label or label,
            progress=progress,
            probes=self.probes,
            knobs=dict(self.knobs),
        )


def one(opts: RecipeOptions, name: str, default: Any = None) -> Any:
    """The single ``--set`` value of an axis that takes one value, or ``default``."""
    v = opts.values(name)
    if v is None:
        return default
    if len(v) != 1:
        raise UserError(f"--set {name}= takes one value here")
    return v[0]


def counts(opts: RecipeOptions, name: str, default: Sequence[int]) -> list[int]:
    """Whole positive numbers of an axis (``--set threads=1,2``), or ``default``."""
    v = opts.values(name)
    if v is None:
        return list(default)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v):
        raise UserError(f"--set {name}=…: whole numbers, at least 1")
    return sorted(set(int(x) for x in v))


def powers(top: int) -> list[int]:
    """1, 2, 4 … up to and including ``top``."""
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= 2
    return out + [top]


def size_opt(opts: RecipeOptions, name: str, default: int) -> int:
    """A size axis (``--set bed_size=8G``), or ``default``."""
    v = one(opts, name)
    return parse_size(v, what=f"--set {name}") if v is not None else default
