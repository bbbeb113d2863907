"""The replay benchmark's corpus: synthetic performance series of one value per result, shaped
like kernel-CI histories, with the true change positions known.

Noise families (multiplicative, median about 1; higher is better):

- ``cv1``, ``cv3``, ``cv10``, ``cv30``: log-normal, coefficient of variation 1, 3, 10, 30%;
- ``t3``: Student-t (3 degrees of freedom) on the log scale, standard deviation 5%;
- ``outlier``: CV 3%, and each result with probability 5% hit by a neighbour (15-40% slower);
- ``drift``: CV 3% with a slow linear drift of 4% over the series, either way;
- ``bimodal``: CV 2% in each of two modes 8% apart, 30% of results in the minor mode, which
  lies above or below the major one (either way);

each with a step of 0 (none), 2, 5, 10 or 25% (either sign) at a result between 15 and
``RUNS - 10``; and ``excursion``: CV 1-3%, a shift of 5, 10 or 25% (either sign) for 5-12
results, then back: two true changes, the second at the excursion's end.
"""

from __future__ import annotations

from dataclasses import dataclass

import changepoints
import numpy as np
from changepoints import lognormal

RUNS = 60
FAMILIES = ("cv1", "cv3", "cv10", "cv30", "t3", "outlier", "drift", "bimodal")
STEPS = (0.0, 0.02, 0.05, 0.10, 0.25)
EXCURSIONS = (0.05, 0.10, 0.25)


@dataclass(frozen=True)
class Series:
    """One synthetic series: family, step size (relative, 0 for none), values, and its true
    changes as (index of the first result after the change, factor new/old level)."""

    family: str
    step: float
    values: tuple[float, ...]
    changes: tuple[tuple[int, float], ...]


def noise(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Multiplicative noise of one family (module docstring): drift and the minor mode either
    way; the others as ``benchmarks/changepoints.py`` makes them."""
    if family == "drift":
        return lognormal(rng, 0.03, n) * np.linspace(1.0, 0.96 if rng.random() < 0.5 else 1.04, n)
    if family == "bimodal":
        minor = 1.08 if rng.random() < 0.5 else 1.0 / 1.08
        return lognormal(rng, 0.02, n) * np.where(rng.random(n) < 0.3, minor, 1.0)
    return changepoints.noise(rng, family, n, 1)


def _factor(rng: np.random.Generator, size: float) -> float:
    return 1.0 + size if rng.random() < 0.5 else 1.0 / (1.0 + size)


def make(rng: np.random.Generator, family: str, step: float) -> Series:
    """One series of ``family`` with a step of ``step`` (random sign and place), or none."""
    x = 1000.0 * noise(rng, family, RUNS)
    changes: tuple[tuple[int, float], ...] = ()
    if step > 0.0:
        at, f = int(rng.integers(15, RUNS - 10 + 1)), _factor(rng, step)
        x[at:] *= f
        changes = ((at, f),)
    return Series(family, step, tuple(x.tolist()), changes)


def excursion(rng: np.random.Generator, size: float) -> Series:
    """A short excursion: CV 1-3%, a shift of ``size`` for 5-12 results, then back."""
    x = 1000.0 * lognormal(rng, float(rng.uniform(0.01, 0.03)), RUNS)
    length = int(rng.integers(5, 13))
    at = int(rng.integers(15, RUNS - length - 8))
    f = _factor(rng, size)
    x[at : at + length] *= f
    return Series("excursion", size, tuple(x.tolist()), ((at, f), (at + length, 1.0 / f)))


def build(seed: int, per_cell: int) -> list[Series]:
    """``per_cell`` series for each family and step, and ``2 × per_cell`` excursions of each
    size, from a fixed seed."""
    rng = np.random.default_rng(seed)
    out = [make(rng, f, st) for f in FAMILIES for st in STEPS for _ in range(per_cell)]
    out += [excursion(rng, size) for size in EXCURSIONS for _ in range(2 * per_cell)]
    return out
