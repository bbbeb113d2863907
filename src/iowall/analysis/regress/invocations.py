"""Compare's rule when a side's runs come in invocations of several runs: the invocation, not
the run, as the unit that can differ.

The runs of one invocation (one ``iowall run``: its batch) share that minute's machine state,
so they are not independent witnesses of a side's level; taken as independent, two like sets
of two invocations of five runs each are marked in 14-37% of comparisons when the invocations
hold 20-80% of the variance, one invocation against two or three in up to 48% (docs/statistics.md,
"Runs of one invocation are not independent"). Method: Welch's t on the means of log values,
each side's mean the mean of its invocations' means, its variance from the invocations'
spread (the variance of invocation means, pooled over the sides that hold two or more, over
k; their degrees of freedom) or, where the runs vary more, from the runs' (s²/n, n − 1
degrees of freedom). A side of one invocation always takes the invocations' spread: its runs
cannot show the machine's state they share. Degrees of freedom: the pooled invocations' when
both sides use it, the smaller of the two sides' when one does (the Welch-Satterthwaite value
overcounts a variance estimated from two or three invocations), else Welch-Satterthwaite.
Simulated in benchmarks/compare_invocations.py (docs/benchmarks.md)"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ...vocab.units import plural
from .stats import Comparison, Direction, judged
from .tdist import t_quantile


def groups(values: Sequence[float], batches: Sequence[str]) -> list[list[float]]:
    """The log values of each invocation, in the order the invocations first appear."""
    out: dict[str, list[float]] = {}
    for v, b in zip(values, batches, strict=True):
        out.setdefault(b, []).append(math.log(v))
    return list(out.values())


def clustered(
    base: Sequence[float], new: Sequence[float], base_batches: Sequence[str], new_batches: Sequence[str]
) -> bool:
    """Whether a row is judged by invocation: every run's invocation known, every value
    positive (the rule is on logs), an invocation holding two runs or more, and a side holding
    two invocations or more (else the invocations' spread cannot be seen, or each run is its
    own invocation and the runs' rule already counts it)."""
    if len(base) != len(base_batches) or len(new) != len(new_batches) or not base or not new:
        return False
    if "" in base_batches or "" in new_batches or min(*base, *new) <= 0:
        return False
    sizes = (*Counter(base_batches).values(), *Counter(new_batches).values())
    many = len(set(base_batches)) >= 2 or len(set(new_batches)) >= 2
    return many and max(sizes) >= 2 and min(len(base), len(new)) >= 2


def _pooled(sides: Sequence[list[list[float]]]) -> tuple[float, int]:
    """The variance of invocation means pooled over the sides with two or more, and its
    degrees of freedom (0 when no side has two)."""
    ss, df = 0.0, 0
    for gs in sides:
        if len(gs) >= 2:
            means = np.array([np.mean(g) for g in gs])
            ss += float(((means - means.mean()) ** 2).sum())
            df += len(gs) - 1
    return (ss / df if df else 0.0), df


def _side(gs: list[list[float]], inv_var: float, inv_df: int) -> tuple[float, float, int, bool]:
    """(mean, variance of the mean, its degrees of freedom, whether from the invocations): the
    invocations' spread where it is the larger or the side is one invocation, else the runs'."""
    runs = np.array([v for g in gs for v in g])
    mean = float(np.mean([np.mean(g) for g in gs]))
    v_runs = float(runs.var(ddof=1)) / runs.size if runs.size >= 2 else math.inf
    v_inv = inv_var / len(gs) if inv_df else 0.0
    if inv_df and (v_inv > v_runs or len(gs) == 1):
        return mean, v_inv, inv_df, True
    return mean, v_runs, runs.size - 1, False


def by_invocation(
    base: Sequence[float],
    new: Sequence[float],
    base_batches: Sequence[str],
    new_batches: Sequence[str],
    *,
    direction: Direction,
    floor: float = 0.02,
    confidence: float = 0.95,
) -> Comparison:
    """The comparison of a ``clustered`` row (the module's method): the ratio of the sides'
    geometric means of invocation means, its interval, and the mark (interval excluding 1 and
    the ratio beyond the floor); ``invocations`` holds each side's count."""
    gb, gn = groups(base, base_batches), groups(new, new_batches)
    inv_var, inv_df = _pooled((gb, gn))
    mb, vb, db, ib = _side(gb, inv_var, inv_df)
    mn, vn, dn, i_n = _side(gn, inv_var, inv_df)
    d, var = mn - mb, vb + vn
    if ib and i_n:
        df = float(inv_df)
    elif ib or i_n:
        df = float(min(db, dn))
    else:
        df = var**2 / (vb**2 / db + vn**2 / dn) if var > 0 else float(db + dn)
    half = t_quantile(df, 0.5 + confidence / 2.0) * math.sqrt(var)
    return judged(
        base,
        new,
        (math.exp(d), math.exp(d - half), math.exp(d + half)),
        direction=direction,
        floor=floor,
        confidence=confidence,
        invocations=(len(gb), len(gn)),
    )


def one_a_side(base_batches: Sequence[str], new_batches: Sequence[str]) -> bool:
    """Each side's runs come from one batch (invocation); False when a batch is not known
    (``""``: runs stored before batches were)."""
    return all(len(set(b)) == 1 and "" not in b for b in (base_batches, new_batches))


def invocation_notes(rows: Sequence[tuple[Comparison, Sequence[str], Sequence[str]]]) -> list[str]:
    """Compare's notes on invocations, from each row's comparison and batches: the rows judged
    by invocation, and a marked row whose sides are one invocation each (which no rule of
    the runs alone can judge for the drift between invocations)."""
    out = []
    judged = [c.invocations for c, _, _ in rows if c.invocations]
    if judged:
        few = min(sum(k) for k in judged)
        lo, hi = min(min(k) for k in judged), max(max(k) for k in judged)
        which = "every row" if len(judged) == len(rows) else f"{len(judged)} of {len(rows)} rows"
        out.append(
            f"{which} came in invocations of several runs "
            f"({lo if lo == hi else f'{lo}-{hi}'} invocations a side): "
            "judged by invocation, the runs of one sharing that minute's machine state (Welch's t "
            "on log means, each side's variance from the spread of its invocations, or its runs' "
            'where larger; docs/statistics.md, "Runs of one invocation are not independent")'
            + (
                f"; with {few} invocations in all the spread of invocations rests on "
                f"{plural(few - 2, 'degree')} of freedom and only a large change is marked: "
                "measure more invocations, or interleave the sides one run an invocation"
                if few <= 4
                else ""
            )
        )
    if any(c.significant and one_a_side(b, n) for c, b, n in rows):
        out.append(
            "a marked row's sides are one invocation each: the runs of one invocation share that "
            "minute's machine state, and the interval, which takes them as independent, cannot see "
            'the drift between invocations (docs/statistics.md, "Runs of one invocation are not '
            'independent"); before trusting a small change, interleave the sides (one run an '
            "invocation, taking turns) or gate with several invocations a side"
        )
    return out
