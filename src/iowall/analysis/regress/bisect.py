"""Pure: the search of `iowall bisect` over candidates ordered from good (index 0) to bad
(the last), the mark a step's gate result gives its candidate, and the bisection's report
as data (rendered by ``report.bisect``).

The search is git's: index 0 is good by definition (it is the baseline of every step); the
bad end is measured first, and a bisection whose bad end does not regress stops there. Then
the candidate nearest the middle of the window between the last good and the first bad is
tested; a skipped candidate (undecided after the most rounds, or one that does not boot)
stays in the window and its nearest untested neighbour is tested instead. The search ends
when no untested candidate is left between the last good and the first bad: the first bad is
the culprit, or, with skipped candidates just before it, one of a range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .gate import EXIT_PASS, EXIT_REGRESSION, GateResult, Verdict

Mark = Literal["good", "bad", "skip"]
#: How a bisection ends: the first bad candidate, a range of them (skips), no regression
#: between good and bad (the bad end measured good), or the bad end undecided.
OutcomeKind = Literal["culprit", "range", "none", "undecided"]


def window(n: int, marks: Mapping[int, Mark]) -> tuple[int, int]:
    """The last good and the first bad index: the bad nearest the good end (the last index
    until one is measured), and the good nearest below it (index 0 at first). A good mark
    above the first bad (noise) is not followed."""
    hi = min([i for i, m in marks.items() if m == "bad"], default=n - 1)
    lo = max([0] + [i for i, m in marks.items() if m == "good" and i < hi])
    return lo, hi


def next_index(n: int, marks: Mapping[int, Mark]) -> int | None:
    """The candidate to test next, or None when the search is over: the bad end first, then
    the untested candidate nearest the window's middle (the lower one of two as near)."""
    if n < 2:
        raise ValueError("a bisection needs a good and a bad candidate")
    if n - 1 not in marks:
        return n - 1
    if marks[n - 1] != "bad":
        return None
    lo, hi = window(n, marks)
    left = [i for i in range(lo + 1, hi) if i not in marks]
    if not left:
        return None
    mid = (lo + hi) / 2
    return min(left, key=lambda i: (abs(i - mid), i))


def estimated_steps(n: int, marks: Mapping[int, Mark] | None = None) -> int:
    """Steps a bisection of ``n`` candidates takes without skips: the bad end, then
    log2 of the window's gaps (``~4`` for 8 candidates). With ``marks``, the steps done plus
    those the current window needs."""
    marks = marks or {}
    if n - 1 not in marks:
        return 1 + math.ceil(math.log2(max(n - 1, 1)))
    lo, hi = window(n, marks)
    untested = sum(1 for i in range(lo + 1, hi) if i not in marks)
    return len(marks) + (math.ceil(math.log2(untested + 1)) if untested else 0)


@dataclass(frozen=True)
class Outcome:
    """How the search ended: ``first_bad`` (the culprit, or the last of a range),
    ``candidates`` (every index that may be the first bad: one for a culprit) and
    ``last_good``."""

    kind: OutcomeKind
    last_good: int
    first_bad: int | None
    candidates: tuple[int, ...] = ()


def outcome(n: int, marks: Mapping[int, Mark]) -> Outcome | None:
    """The end of the search, or None while a candidate is left to test."""
    if next_index(n, marks) is not None:
        return None
    end = marks[n - 1]
    if end != "bad":
        return Outcome("none" if end == "good" else "undecided", 0, None)
    lo, hi = window(n, marks)
    skipped = tuple(i for i in range(lo + 1, hi) if marks.get(i) == "skip")
    if skipped:
        return Outcome("range", lo, hi, (*skipped, hi))
    return Outcome("culprit", lo, hi, (hi,))


def mark_of(res: GateResult) -> Literal["good", "bad", "undecided"]:
    """A step's gate result as the search reads it: pass is good (an improvement too), a
    regression bad, anything else (inconclusive, or an emulated side) undecided."""
    code = res.exit_code
    return "good" if code == EXIT_PASS else "bad" if code == EXIT_REGRESSION else "undecided"


def shown_within_floor(res: GateResult) -> bool:
    """Whether no gating row can be a regression beyond the floor: each one's interval has
    its worse end inside it (new/base at least 1 - floor where higher is better, at most
    1 + floor where lower is): an equivalence test at the compare's confidence. A pass alone
    is not that: with few and noisy runs, a 71% fall whose interval spans 0.05-1.53 passes
    (nothing shown), and a bisection would take its bad end for good."""
    rows = [v for v in res.verdicts if v.gating]
    if not rows:
        return False
    for v in rows:
        c, fl = v.row.cmp, res.compare.floor
        worse = c.ci_low if c.direction == "higher" else c.ci_high
        if worse != worse or (worse < 1 - fl if c.direction == "higher" else worse > 1 + fl):
            return False
    return True


def shown_better(res: GateResult) -> bool:
    """Whether the candidate is shown better than the bad end (``res``: the candidate against
    the bad end's runs): a gating improvement and no regression."""
    return bool(res.of("improvement")) and not res.of("regression")


def step_mark(vs_good: GateResult | None, vs_bad: GateResult | None, bad_end: bool) -> tuple[str, str]:
    """A step's mark and why, from both ends: bad when the candidate regresses against the
    good kernel; good when it passes against it and, for the bad end itself, is shown within
    the floor of it (``shown_within_floor``: else "no regression" would be said of a fall
    noise hid), for a candidate between, is shown better than the bad end (``shown_better``);
    undecided otherwise (more rounds, then a skip)."""
    if vs_good is None:
        return "undecided", "no point and metric measured on both sides"
    said = mark_of(vs_good)
    if said != "good":
        return said, ""
    if bad_end:
        if shown_within_floor(vs_good):
            return "good", ""
        return "undecided", "no regression shown, nor one beyond the floor ruled out"
    if vs_bad is not None and shown_better(vs_bad):
        return "good", ""
    return "undecided", "no regression against the good kernel shown, nor better than the bad end"


def headline(res: GateResult) -> Verdict | None:
    """The row a step's evidence shows: the worst regression, else the worst inconclusive
    row, else the gating row that moved most (throughput first, as the gate's mail)."""

    def order(v: Verdict) -> tuple[int, int, float]:
        head = 0 if v.row.metric.endswith(("_bw_bytes_per_s", "files_per_s")) else 1
        return head, 0 if v.gating else 1, -abs(v.row.cmp.ratio - 1)

    for st in ("regression", "inconclusive"):
        vs = sorted(res.of(st), key=order)
        if vs:
            return vs[0]
    return min(res.verdicts, key=order, default=None)


@dataclass(frozen=True)
class Step:
    """One measured candidate: its index, label, spec and commit, the rounds booted, the
    mark, why, and the evidence of its headline row (medians, change and interval)."""

    step: int
    index: int
    label: str
    spec: str
    commit: str
    rounds: int
    mark: Mark
    why: str
    metric: str = ""
    unit: str = ""
    base_median: float | None = None
    new_median: float | None = None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    n: tuple[int, int] = (0, 0)
    good_runs: tuple[int, ...] = ()
    candidate_runs: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Step:
        d = dict(doc)
        for k in ("good_runs", "candidate_runs", "n"):
            d[k] = tuple(d.get(k) or ())
        d["ci"] = tuple(d["ci"]) if d.get("ci") else None
        return Step(**d)


@dataclass(frozen=True)
class Candidate:
    """A kernel of the bisection, as the report names it."""

    label: str
    spec: str
    commit: str = ""


@dataclass(frozen=True)
class Moved:
    """What moved between the last good and the first bad: the wall-clock budget of each
    one's median run, per state (seconds and share), the state whose share grew most, the
    cost of each I/O, and the differential flame graph (a path, or why there is none)."""

    good_run: int | None
    bad_run: int | None
    states: tuple[tuple[str, float, float, float, float], ...] = ()  # state, s and share each
    grew: str = ""
    flame: str = ""
    why_not: str = ""  # no budget on a side: why
    #: the cost of each I/O on each side (``Cost`` field, good, bad): CPU per read/write
    #: call, per MiB, per I/O, where both sides measured it (a kernel that makes every system
    #: call dearer moves these, not the shares)
    costs: tuple[tuple[str, float, float], ...] = ()
    #: the sides whose I/O lasted under the 2 s an explanation needs, said as such
    short: str = ""


@dataclass(frozen=True)
class BisectReport:
    """What `iowall bisect` prints."""

    id: str
    target: str
    mode: Literal["candidates", "git"]
    candidates: tuple[Candidate, ...]
    outcome: Outcome
    steps: tuple[Step, ...]
    moved: Moved | None = None
    head: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exit_code(self) -> int:
        """0: a culprit found, or no regression; 3: a range (skips) or an undecided bad end."""
        return 0 if self.outcome.kind in ("culprit", "none") else 3

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "target": self.target,
            "mode": self.mode,
            "outcome": asdict(self.outcome),
            "first_bad": asdict(self.candidates[self.outcome.first_bad])
            if self.outcome.first_bad is not None
            else None,
            "last_good": asdict(self.candidates[self.outcome.last_good]),
            "candidates": [asdict(c) for c in self.candidates],
            "steps": [s.to_json() for s in self.steps],
            "moved": asdict(self.moved) if self.moved is not None else None,
            "head": list(self.head),
            "notes": list(self.notes),
            "exit_code": self.exit_code,
        }


def summary_line(r: BisectReport) -> str:
    """The bisection's answer in one line (the mail's subject)."""
    o = r.outcome
    good, bad = r.candidates[0].label, r.candidates[-1].label
    if o.kind == "none":
        return f"no regression between {good} (good) and {bad} (bad)"
    if o.kind == "undecided":
        return f"undecided: {bad} (bad) is not shown to regress against {good} (good)"
    first = r.candidates[o.first_bad or 0]
    if o.kind == "culprit":
        return f"first bad: {first.label}" + (f" (commit {first.commit})" if first.commit else "")
    names = ", ".join(r.candidates[i].label for i in o.candidates)
    return f"the first bad is one of {names} (skipped candidates left a range)"
