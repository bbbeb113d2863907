"""Pure: the regression gate's decision over a compare of a stored baseline with new runs.

Every (point, metric) row of the compare is tested: a per-row p-value (Welch's t-test on log
values, which keeps its level with unequal sizes and spreads; on invocation means when the
baseline holds several invocations, ``invocation_p``; or the caller's own test, as the series
gate's early test), and Benjamini-Hochberg over the rows that can fail the gate (the headline
metrics: throughput, latency, runtime; ``--fail-on``) as one family, the other rows as
another. A row counts only when compare's own rule also calls it (calibrated Hodges-Lehmann
interval excluding 1, change beyond the floor; docs/statistics.md): the rejections are a
subset of BH's, so the FDR bound holds within the family. Other metrics that changed are
listed. Runs of an emulated guest are judged by neither compare nor the gate: inconclusive,
whatever they measured. A suspected regression (worse beyond the floor, within the FDR but not
shown by the interval, or with one run on a side; or shown by the runs' interval with every
new invocation worse than every base one, but not by the few invocations' test) is
inconclusive, not a pass.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...model import Run
from .compare import HEADLINE, NOT_HEADLINE, CompareResult, Row
from .stats import FloatArray
from .tdist import upper_tail

Status = Literal["regression", "improvement", "same", "inconclusive", "accepted", "changed"]
#: Exit codes: pass, regression confirmed, inconclusive (2 stays "bad input").
EXIT_PASS, EXIT_REGRESSION, EXIT_INCONCLUSIVE = 0, 1, 3


@dataclass(frozen=True)
class Accept:
    """A known change that does not fail the gate: point text (glob), metric (glob),
    direction (worse or better) and the last day it holds (ISO date, inclusive)."""

    point: str
    metric: str
    direction: str = "worse"
    until: str = ""
    reason: str = ""

    def covers(self, row: Row, today: str) -> bool:
        return (
            fnmatch.fnmatchcase(row.point_text, self.point)
            and fnmatch.fnmatchcase(row.metric, self.metric)
            and (not self.until or today <= self.until)
        )


@dataclass(frozen=True)
class Verdict:
    """One row's outcome: the compare row, its p-value and BH q-value, the status and why."""

    row: Row
    p_value: float
    q_value: float
    status: Status
    reason: str
    gating: bool
    #: invocations (batches) on the base and new side; the p-value is by invocation when the
    #: base holds two or more (``invocation_p``)
    invocations: tuple[int, int] = (1, 1)
    #: inconclusive for the base's sake (measured while the machine was busier): more new
    #: runs cannot decide it, so no confirmation is run for it (``machine_busier``)
    base_busier: bool = False

    @property
    def by_invocation(self) -> bool:
        return self.invocations[0] >= 2


@dataclass(frozen=True)
class GateResult:
    """All verdicts, and what the gate says."""

    compare: CompareResult
    verdicts: tuple[Verdict, ...]
    fdr: float
    floor: float
    #: how the rows were tested when the caller tested them (the series gate), for the report
    method: str = ""

    def _gating(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.gating] or list(self.verdicts)

    @property
    def unit(self) -> str:
        """What the gating rows' p-values take as independent, in a few words."""
        if self.method:
            return self.method
        rows = self._gating()
        by = [v for v in rows if v.by_invocation]
        if not by:
            return "p-values from single runs (Welch's t-test): the baseline is one invocation"
        kb = min(v.invocations[0] for v in by)
        kn = max(v.invocations[1] for v in by)
        how = "Welch's t-test" if kn >= 2 else "t prediction test"
        text = f"p-values from the means of invocations, {kb} base and {kn} new ({how})"
        if len(by) < len(rows):
            text += (
                f" for {len(by)} of {len(rows)} gating rows; from single runs where the "
                "baseline holds one invocation"
            )
        return text

    @property
    def method_notes(self) -> list[str]:
        """What the user should know about how the rows were tested, and what to do."""
        if self.method or self.compare.emulated or all(v.by_invocation for v in self._gating()):
            return []
        return [
            "the baseline is one invocation, so how much whole invocations differ on this "
            "machine is not counted and a machine that changed speed between them reads "
            "as a change: give --baseline two or more stored invocations (the last few "
            "nightly labels, say)"
        ]

    def of(self, status: Status) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == status]

    @property
    def suspected(self) -> list[Verdict]:
        """Rows worth confirming: regressions, inconclusive rows, and gating rows whose
        estimate is worse by more than half the floor (a regression the runs so far may
        have hidden); not rows the base's busier machine left undecided (new runs cannot
        decide them)."""
        return [
            v
            for v in self.verdicts
            if not v.base_busier
            and (
                v.status in ("regression", "inconclusive")
                or (
                    v.gating
                    and v.status == "same"
                    and _worse(v.row)
                    and abs(v.row.cmp.ratio - 1.0) > self.floor / 2
                )
            )
        ]

    @property
    def exit_code(self) -> int:
        if self.compare.emulated:  # neither pass nor fail: emulation's timings say nothing
            return EXIT_INCONCLUSIVE
        if self.of("regression"):
            return EXIT_REGRESSION
        if self.of("inconclusive"):
            return EXIT_INCONCLUSIVE
        return EXIT_PASS

    @property
    def word(self) -> str:
        return {EXIT_PASS: "pass", EXIT_REGRESSION: "regression", EXIT_INCONCLUSIVE: "inconclusive"}[
            self.exit_code
        ]


def _worse(row: Row) -> bool:
    """Whether a row's estimate moved the bad way for its direction."""
    r = row.cmp.ratio
    return r != 1.0 and (r < 1.0) == (row.direction == "higher")


def _logs(values: Sequence[float]) -> FloatArray:
    return np.log([x for x in values if x > 0 and math.isfinite(x)])


def _welch_logs(b: FloatArray, n: FloatArray) -> float:
    if b.size < 2 or n.size < 2:
        return 1.0
    if float(np.var(b)) == 0.0 and float(np.var(n)) == 0.0:
        return 0.0 if float(b.mean()) != float(n.mean()) else 1.0
    vb, vn = float(np.var(b, ddof=1)) / b.size, float(np.var(n, ddof=1)) / n.size
    se2 = vb + vn
    df = se2 * se2 / (vb * vb / (b.size - 1) + vn * vn / (n.size - 1))
    t = abs(float(b.mean()) - float(n.mean())) / math.sqrt(se2)
    return _two_sided(t, df)


def _two_sided(t: float, df: float) -> float:
    if not (math.isfinite(t) and math.isfinite(df)) or df <= 0:
        return 1.0
    p = 2.0 * upper_tail(t, df)
    return min(1.0, p) if math.isfinite(p) else 1.0


def welch_p(base: Sequence[float], new: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test on log values, with the Welch-Satterthwaite degrees
    of freedom and the t tail of ``tdist`` (scipy.stats gave the same to 1e-12 and cost 1.2 s
    of import at every gate). 1.0 when either side has fewer than two positive finite values
    or both have no spread."""
    return _welch_logs(_logs(base), _logs(new))


def invocation_means(values: Sequence[float], batches: Sequence[str]) -> FloatArray:
    """The mean log value of each invocation (batch), in first-seen order; one group of all
    values when the batches are not known."""
    if len(batches) != len(values):
        batches = [""] * len(values)
    groups: dict[str, list[float]] = {}
    for v, b in zip(values, batches, strict=True):
        if v > 0 and math.isfinite(v):
            groups.setdefault(b, []).append(math.log(v))
    return np.array([sum(g) / len(g) for g in groups.values()])


def invocation_p(
    base: Sequence[float],
    new: Sequence[float],
    base_batches: Sequence[str] = (),
    new_batches: Sequence[str] = (),
) -> tuple[float, int, int]:
    """Two-sided p-value of a change between the sides, counting how much whole invocations
    differ, and the invocations on each side (a baseline of one: not counted).

    A run's invocation (its batch: one ``iowall run``, one round of the gate) shares the
    machine's state of that minute, so runs of one invocation are not independent evidence
    about another. With a baseline of two or more invocations the unit is the invocation:
    Welch's t-test on per-invocation means of log values when the new side has several, else
    a t prediction test of the one new invocation's mean against the baseline's invocation
    means (K - 1 degrees of freedom). With a baseline of one invocation, how much invocations
    differ cannot be seen: Welch on the runs (``welch_p``)."""
    gb, gn = invocation_means(base, base_batches), invocation_means(new, new_batches)
    k = (gb.size, gn.size)
    if gb.size < 2:
        return welch_p(base, new), *k
    if gn.size >= 2:
        return _welch_logs(gb, gn), *k
    if gn.size == 0:
        return 1.0, *k
    sd = float(np.std(gb, ddof=1))
    d = abs(float(gn[0]) - float(gb.mean()))
    if sd == 0.0:
        return (0.0 if d else 1.0), *k
    return _two_sided(d / (sd * math.sqrt(1.0 + 1.0 / gb.size)), gb.size - 1), *k


def bh_qvalues(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = min(1.0, running)
    return q


def gating(metric: str, fail_on: Sequence[str] | None) -> bool:
    """Whether a metric can fail the gate: the headline metrics by default."""
    if fail_on is None:
        return any(fnmatch.fnmatchcase(metric, p) for p in HEADLINE) and not any(
            fnmatch.fnmatchcase(metric, p) for p in NOT_HEADLINE
        )
    return any(fnmatch.fnmatchcase(metric, p) for p in fail_on)


def decide(
    res: CompareResult,
    *,
    fdr: float = 0.05,
    accept: Sequence[Accept] = (),
    today: str = "",
    fail_on: Sequence[str] | None = None,
    tests: Sequence[tuple[float, int, int]] | None = None,
    method: str = "",
) -> GateResult:
    """Every row's verdict (see the module docstring for the method). ``tests`` gives each
    row's p-value and invocations when the caller tested the rows itself (the series gate's
    early test: ``analysis.regress.series_gate``), and ``method`` says how, for the report."""
    rows = list(res.rows)
    tested = (
        list(tests)
        if tests is not None
        else [invocation_p(r.base_samples, r.new_samples, r.base_batches, r.new_batches) for r in rows]
    )
    ps = [p for p, _, _ in tested]
    gates = [gating(r.metric, fail_on) for r in rows]
    qs = _family_q(ps, gates)
    seps = [_ordered(r, res.floor) if g else None for r, g in zip(rows, gates, strict=True)]
    orders = _family_q([1.0 / math.comb(k[0] + k[1], k[1]) if k else 1.0 for k in seps], gates)
    out = []
    for r, p, q, k, oq, gate, (_, kb, kn) in zip(rows, ps, qs, seps, orders, gates, tested, strict=True):
        status, why = _status(res, r, (q, oq, k), gate, fdr, accept, today, supplied=tests is not None)
        out.append(Verdict(r, p, q, status, why, gate, (kb, kn)))
    return GateResult(res, tuple(out), fdr, res.floor, method)


def _family_q(ps: Sequence[float], gates: Sequence[bool]) -> list[float]:
    """Benjamini-Hochberg q-values within each family: the rows that can fail the gate, and
    the others (listed as changed, never failing). Only the tests that can fail the gate pay
    for each other: 120 probe metrics shown beside 3 gating ones do not dilute them."""
    out = [1.0] * len(ps)
    for fam in (True, False):
        idx = [i for i, g in enumerate(gates) if g == fam]
        for i, q in zip(idx, bh_qvalues([ps[i] for i in idx]), strict=True):
            out[i] = q
    return out


def _status(
    res: CompareResult,
    r: Row,
    qs: tuple[float, float, tuple[int, int] | None],
    gate: bool,
    fdr: float,
    accept: Sequence[Accept],
    today: str,
    *,
    supplied: bool,
) -> tuple[Status, str]:
    """One row's status and why: a regression is called by compare's rule (or the caller's
    interval) and its family's q-value; worse beyond the floor but not shown is inconclusive.
    ``qs``: the row's q-value, that of its invocations' order and their counts when in order
    (``_ordered``)."""
    q, order_q, k = qs
    c = r.cmp
    one = min(c.n_base, c.n_new) < 2
    if res.emulated:  # compare judges no row of an emulated guest, nor does the gate
        return "same", "not judged: measured in an emulated guest"
    if c.significant and q <= fdr:
        bad = not c.better
        if bad and any(a.covers(r, today) and a.direction == "worse" for a in accept):
            return "accepted", "a known change (--accept)"
        if not gate:
            return "changed", "changed, not a gating metric"
        return (
            "regression" if bad else "improvement",
            f"q = {q:.2g} <= {fdr:g} and beyond the {res.floor:.0%} floor",
        )
    if gate and _worse(r) and abs(c.ratio - 1.0) > res.floor and ((one and not supplied) or q <= fdr):
        if one and supplied:
            return "inconclusive", (
                f"q = {q:.2g}, but from one result: a regression or an outlier, the next result decides"
            )
        return "inconclusive", (
            "worse beyond the floor but not shown: "
            + ("one run on a side" if one else f"q = {q:.2g}, but the interval includes no change")
        )
    if gate and k and order_q <= fdr:
        return "inconclusive", (
            f"worse beyond the floor in every invocation ({k[1]} new, each worse than all {k[0]} "
            f"base by more than {res.floor:.0%}; that order 1 in {math.comb(k[0] + k[1], k[1])} "
            f"under no change, q {order_q:.2g}), but q = {q:.2g} from so few: run more"
        )
    return "same", ""


def _ordered(r: Row, floor: float) -> tuple[int, int] | None:
    """``_separated`` for a row worse beyond the floor and shown by the runs' interval, else
    None. Such an order has a chance of 1 in C(kb + kn, kn) under no change (the exact
    one-sided p of a rank test at its extreme), which ``decide`` corrects over the gating rows
    like their own p-values (Benjamini-Hochberg), so the order makes a row inconclusive at the
    gate's stated rate: alone, three gating rows at 4 and 3 invocations would do so in up to
    3 A/As in 35."""
    c = r.cmp
    if not (c.significant and _worse(r) and abs(c.ratio - 1.0) > floor):
        return None
    return _separated(r, floor)


def _separated(r: Row, floor: float) -> tuple[int, int] | None:
    """(base, new) invocation counts when the sides hold two or more invocations each and every
    new invocation's mean is worse than every base invocation's by more than ``floor``: the
    order a rank test would need (1 in C(kb + kn, kn) under no change, rarer still beyond the
    floor), which Welch's t-test on so few means with unequal spreads may not show (a 61% fall
    over 4 and 3 invocations gave p = 0.057)."""
    gb = invocation_means(r.base_samples, r.base_batches)
    gn = invocation_means(r.new_samples, r.new_batches)
    if gb.size < 2 or gn.size < 2:
        return None
    gap = math.log1p(floor)
    worse = gn.max() + gap < gb.min() if r.direction == "higher" else gn.min() - gap > gb.max()
    return (int(gb.size), int(gn.size)) if worse else None


def confirm(
    decide_now: Callable[[], GateResult], run_more: Callable[[], None], rounds: int
) -> tuple[GateResult, int]:
    """Decide; while a row is suspected (``GateResult.suspected``) and rounds are left, run
    more and decide again (a regression must survive its confirmation to fail the gate).
    The final result and the confirmation rounds used."""
    res = decide_now()
    used = 0
    while used < rounds and res.suspected:
        run_more()
        used += 1
        res = decide_now()
    return res, used


@dataclass(frozen=True)
class Shift:
    """How one CPU-time share moved between the sides (medians over the point's runs)."""

    metric: str
    base: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.base


def attribution_shift(base: Sequence[Run], new: Sequence[Run], top: int = 3) -> list[Shift]:
    """The CPU-time shares (``tasks_<class>_share``, ``profile_<path>_share``) that grew most
    from base to new, largest gain first: what the new side spends its time on instead."""

    def med(runs: Sequence[Run], name: str) -> float | None:
        vals = sorted(v for r in runs if (v := r.metric(name)) is not None and math.isfinite(v))
        return vals[len(vals) // 2] if vals else None

    names = {
        m.name
        for r in [*base, *new]
        for m in r.metrics
        if m.name.endswith("_share")
        and m.name.startswith(("tasks_", "profile_"))
        and m.name not in ("tasks_unattributed_share",)
    }
    out = []
    for n in sorted(names):
        b, x = med(base, n), med(new, n)
        if b is not None and x is not None:
            out.append(Shift(n, b, x))
    return sorted((s for s in out if s.delta > 0), key=lambda s: -s.delta)[:top]


@dataclass(frozen=True)
class Explanation:
    """Why one regression: the Why of each side's median run, the shares that grew most,
    and the differential flame graph (a written file, or the command that draws it)."""

    point: str
    metric: str
    base_run: int | None
    new_run: int | None
    why_base: tuple[str, ...]
    why_new: tuple[str, ...]
    shifts: tuple[Shift, ...]
    flame: str


@dataclass(frozen=True)
class GateReport:
    """What `iowall gate` prints: the decision, the explanations, how to reproduce."""

    result: GateResult
    baseline: str
    new: str
    explanations: tuple[Explanation, ...] = ()
    reproduce: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
