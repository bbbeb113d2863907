"""Pure, numpy-free checks and summaries of one sample of repeated measurements, for the code
that runs points (``--repeat auto``): without numpy, importing what `iowall run` needs takes
13-15% less time here (benchmarks/import_run_path.py), and more in an emulated `ab` guest."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def checked(samples: Sequence[float], what: str) -> list[float]:
    """The sample as floats: non-empty and finite, else ValueError naming ``what``."""
    vals = [float(x) for x in samples]
    if not vals:
        raise ValueError(f"{what}: no samples")
    if not all(math.isfinite(x) for x in vals):
        raise ValueError(f"{what}: samples must be finite numbers")
    return vals


def median(samples: Sequence[float]) -> float:
    """Sample median (middle value, or mean of the two middle values)."""
    return float(statistics.median(checked(samples, "median")))


def rel(value: float, ref: float) -> float:
    """value / |ref|, with 0/0 = 0 and x/0 = inf."""
    if ref != 0:
        return value / abs(ref)
    return 0.0 if value == 0 else math.inf
