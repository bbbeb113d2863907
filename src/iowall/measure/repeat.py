"""How often each point runs: a fixed number of interleaved rounds, or ``auto`` — repeat a
point until the 95% interval of its median is within ±target, or until a maximum.

``auto`` uses ``iowall.analysis.regress.stats.decision_state`` (the exact order-statistic interval
of the median, see docs/statistics.md): a point stops when decided or at the maximum, and
why is recorded. Which metric decides is the caller's ``key_metric(run)``; the default,
``primary_metric``, is the point's main throughput. The bookkeeping here is pure: it reads
finished runs and says which points are done; ``iowall.measure.runner.Schedule`` does the running.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..analysis.regress.repeat_rule import DecisionState, decision_state, median_ci
from ..model import MEASURED_STATUSES, Metric, Run, primary_metric
from ..vocab.errors import UserError
from ..vocab.units import json_number, parse_share

#: The most runs ``auto`` makes of one point unless ``auto:MAX`` says otherwise.
AUTO_MAX = 10
#: Relative half-width of the median's interval at which a point is decided.
TARGET = 0.02
CONFIDENCE = 0.95

#: What ``key_metric`` returns: the deciding value (a Metric names itself in the notes), or
#: None when the run has no such value (it then counts as a run but not as a sample).
KeyMetric = Callable[[Run], float | Metric | None]


@dataclass(frozen=True)
class RepeatPolicy:
    """``count`` runs of every point, or with ``auto`` at most ``count``, stopping a point
    once the ``confidence`` interval of its median is within ±``target`` of the median."""

    count: int = 3
    auto: bool = False
    target: float = TARGET
    confidence: float = CONFIDENCE

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("a repeat policy needs at least 1 run")
        if not 0.0 < self.target < 1.0 or not 0.0 < self.confidence < 1.0:
            raise ValueError("target and confidence are fractions between 0 and 1")

    @classmethod
    def until_decided(cls, max_runs: int = AUTO_MAX, target: float = TARGET) -> RepeatPolicy:
        return cls(count=max_runs, auto=True, target=target)

    @property
    def max_runs(self) -> int:
        """The most runs one point gets (all of them, for a fixed policy)."""
        return self.count

    def with_target(self, target: float) -> RepeatPolicy:
        """This policy deciding at ``target``; only ``auto`` decides, so fixed refuses."""
        if not self.auto:
            raise UserError(
                f"--target applies to --repeat auto[:MAX], not to a fixed "
                f"{self.count} run{'s' if self.count != 1 else ''} per point"
            )
        return replace(self, target=target)

    def spec(self) -> str:
        """The policy as typed: ``3`` or ``auto:10``."""
        return f"auto:{self.count}" if self.auto else str(self.count)

    def describe(self) -> str:
        """``3 repeats`` or ``repeat auto (max 10, target ±2%)``."""
        if self.auto:
            return f"repeat auto (max {self.count}, target ±{pct(self.target)})"
        return f"{self.count} repeat{'s' if self.count != 1 else ''}"

    def to_json(self) -> dict[str, Any]:
        if self.auto:
            return {
                "mode": "auto",
                "max": self.count,
                "target": self.target,
                "confidence": self.confidence,
                "spec": self.spec(),
            }
        return {"mode": "fixed", "runs": self.count, "spec": self.spec()}

    def summarise(
        self, runs: Sequence[Run], key_metric: KeyMetric | None = None, *, per: str = "point"
    ) -> str:
        """A report note on how ``runs`` went under this policy: ``3 repeats per point`` or
        ``repeat auto (max 10, target ±2%): 6–10 runs per point; undecided at …``."""
        d = replay(runs, self, key_metric or primary_metric)
        return "; ".join(summary(self, d, per=per))

    def __str__(self) -> str:
        return self.spec()


REPEAT_HELP = "a number ≥ 1 or auto[:MAX]"


def parse_repeat(text: str | int, *, what: str = "--repeat") -> RepeatPolicy:
    """``3`` → 3 fixed rounds; ``auto`` → auto with max 10; ``auto:15`` → auto with max 15."""
    if isinstance(text, bool):
        raise UserError(f"{what}: use {REPEAT_HELP} (got {text!r})")
    s = str(text).strip().lower()
    m = re.fullmatch(r"(auto)(?::\s*([+-]?\d+))?|([+-]?\d+)", s)
    if m is None:
        raise UserError(f"{what}: use {REPEAT_HELP} (got {str(text)!r})")
    n = int(m.group(3) if m.group(3) is not None else (m.group(2) or AUTO_MAX))
    if n < 1:
        raise UserError(f"{what}: use {REPEAT_HELP} (got {str(text)!r}: at least 1 run)")
    return RepeatPolicy(count=n, auto=m.group(1) is not None)


def parse_target(text: str | float) -> float:
    """``2%`` or ``0.02`` → 0.02: the relative half-width of the median's interval."""
    s = str(text).strip()
    v = parse_share(s)
    if not 0.0 < v < 1.0:
        raise UserError(f"--target: use a percentage such as 2% or a fraction such as 0.02 (got {s!r})")
    return v


def as_policy(repeat: RepeatPolicy | int) -> RepeatPolicy:
    """A RepeatPolicy from a policy or a plain count (fixed rounds)."""
    if isinstance(repeat, RepeatPolicy):
        return repeat
    if isinstance(repeat, bool) or repeat < 1:
        raise UserError("--repeat must be at least 1")
    return RepeatPolicy(count=int(repeat))


# ------------------------------------------------------------------------------------------
# Deciding


def _sample(run: Run, key_metric: KeyMetric) -> tuple[float | None, str]:
    """The run's deciding value (None when not measured) and the metric's name if known."""
    if run.status not in MEASURED_STATUSES:
        return None, ""
    v = key_metric(run)
    if isinstance(v, Metric):
        name, value = v.name, v.value
    elif v is None:
        return None, ""
    else:
        name, value = "", float(v)
    return (value, name) if math.isfinite(value) else (None, name)


def min_runs(confidence: float = CONFIDENCE) -> int:
    """The fewest runs whose order-statistic interval of the median is bounded (6 at 95%)."""
    n = 1
    while math.isinf(median_ci([float(i) for i in range(n)], confidence)[0]):
        n += 1
    return n


def point_state(samples: Sequence[float], runs: int, policy: RepeatPolicy) -> DecisionState:
    """Where one point stands after ``runs`` runs of which ``samples`` were measured.

    Method: ``decision_state`` (exact order-statistic interval of the median within
    ±target). A fixed policy stops at its count whatever the interval; ``auto`` stops when
    decided or at its maximum. Runs without a sample (failed) count towards the maximum."""
    cap = policy.max_runs
    if not samples:
        return DecisionState(
            decided=False,
            stop=runs >= cap,
            n=0,
            median=math.nan,
            low=-math.inf,
            high=math.inf,
            achieved=math.inf,
            target=policy.target,
            confidence=policy.confidence,
            reason=(
                f"stopped at the maximum of {cap} runs, undecided: no run measured it"
                if runs >= cap
                else f"undecided after {runs} runs: none measured it yet"
            ),
        )
    st = decision_state(samples, max_repeats=cap, rel_halfwidth=policy.target, confidence=policy.confidence)
    if not policy.auto:
        st = replace(st, stop=runs >= cap)
    elif runs >= cap and not st.stop:
        st = replace(
            st,
            stop=True,
            reason=f"{st.reason}; stopped at the maximum of {cap} runs "
            f"({runs - len(samples)} without a measurement)",
        )
    return st


@dataclass
class Decider:
    """Per-point bookkeeping of a RepeatPolicy: runs and samples so far, and the latest
    DecisionState of every point (keyed by ``Point.key()``)."""

    policy: RepeatPolicy
    key_metric: KeyMetric = primary_metric
    runs: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    #: the name of the deciding metric per point, when key_metric returns a Metric
    metric: dict[str, str] = field(default_factory=dict)
    decisions: dict[str, DecisionState] = field(default_factory=dict)

    def done(self, key: str) -> bool:
        """True once the point needs no more runs."""
        st = self.decisions.get(key)
        return st is not None and st.stop

    def runs_of(self, key: str) -> int:
        return self.runs.get(key, 0)

    def observe(self, run: Run) -> DecisionState:
        """Count a finished run of its point and return the point's new state."""
        key = run.point.key()
        self.runs[key] = self.runs.get(key, 0) + 1
        value, name = _sample(run, self.key_metric)
        if name:
            self.metric.setdefault(key, name)
        if value is not None:
            self.samples.setdefault(key, []).append(value)
        st = point_state(self.samples.get(key, []), self.runs[key], self.policy)
        self.decisions[key] = st
        return st

    def note(self, key: str) -> str:
        """The note stored on a point's last run under ``auto``: why it stopped."""
        st = self.decisions[key]
        on = f" on {self.metric[key]}" if key in self.metric else ""
        return f"repeat auto{on}: {st.reason}"


def replay(runs: Iterable[Run], policy: RepeatPolicy, key_metric: KeyMetric = primary_metric) -> Decider:
    """The Decider as it stood after ``runs`` (in order): the same decisions a live schedule
    made, recomputed from the stored runs (interrupted runs are not counted)."""
    d = Decider(policy, key_metric)
    for r in runs:
        if r.status != "interrupted":
            d.observe(r)
    return d


def policy_of(runs: Sequence[Run]) -> RepeatPolicy | None:
    """The policy recorded in the runs' environment (``env["repeat"]``), if any."""
    for r in runs:
        doc = r.env.get("repeat")
        if isinstance(doc, Mapping) and doc.get("spec"):
            p = parse_repeat(str(doc["spec"]))
            if p.auto and isinstance(doc.get("target"), (int, float)):
                p = replace(p, target=float(doc["target"]))
            return p
    return None


# ------------------------------------------------------------------------------------------
# Reporting


def pct(x: float) -> str:
    """A fraction as a percentage: 0.014 → 1.4%; inf → unbounded."""
    return "unbounded" if math.isinf(x) else f"{x * 100:.3g}%"


def summary(
    policy: RepeatPolicy, d: Decider, names: Mapping[str, str] | None = None, *, per: str = "point"
) -> list[str]:
    """Report lines: ``3 repeats per point`` or ``repeat auto (max 10, target ±2%): 6–10 runs
    per point``, then one line per point that hit the maximum undecided (``names`` maps
    point keys to how the report names them)."""
    counts = sorted(d.runs.values())
    if not policy.auto or not counts:
        return [f"{policy.describe()} per {per}"]
    lo, hi = counts[0], counts[-1]
    span = str(lo) if lo == hi else f"{lo}–{hi}"
    need = min_runs(policy.confidence)
    few = (
        f" (fewer than the {need} runs a {policy.confidence:.0%} interval of the median "
        "needs: no point can be decided)"
        if policy.max_runs < need
        else ""
    )
    out = [f"{policy.describe()}: {span} run{'s' if hi != 1 else ''} per {per}{few}"]
    left = []
    for key, st in d.decisions.items():
        if st.stop and not st.decided:
            name = (names or {}).get(key) or _describe_key(key)
            bound = (
                f"±{pct(st.achieved)}"
                if math.isfinite(st.achieved)
                else f"{st.n} measured runs cannot bound a {st.confidence:.0%} interval"
            )
            left.append((name, bound))
    what = f"the {policy.confidence:.0%} interval of the median"
    if len(left) > UNDECIDED_LINES:
        # one line for many: each point with its interval's half-width (not the half-range
        # of its runs, which the tables give)
        return [
            *out,
            f"undecided at the maximum of {policy.max_runs} runs, {what} wider than "
            f"±{pct(policy.target)}: {len(left)} of {len(d.decisions)} {per}s: "
            + "; ".join(f"{n} {b}" for n, b in left),
        ]
    return [
        *out,
        *(f"undecided at the maximum of {policy.max_runs} runs: {n} ({b}, {what})" for n, b in left),
    ]


#: more undecided points than this are told on one line
UNDECIDED_LINES = 3


def _describe_key(key: str) -> str:
    """``recipe:{json}`` → ``k=v k=v`` (the way Point.describe() writes a point)."""
    _, _, params = key.partition(":")
    try:
        doc = json.loads(params)
    except ValueError:
        return key
    return " ".join(f"{k}={v}" for k, v in sorted(doc.items())) if isinstance(doc, dict) else key


def to_json(policy: RepeatPolicy, d: Decider, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"policy": …, "decisions": {point: {n, runs, decided, achieved, …, reason}}}``;
    unbounded numbers are null."""
    out: dict[str, Any] = {}
    for key, st in d.decisions.items():
        name = (names or {}).get(key) or _describe_key(key)
        out[name] = {
            "n": st.n,
            "runs": d.runs_of(key),
            "decided": st.decided,
            "stopped": st.stop,
            "achieved": json_number(st.achieved),
            "target": st.target,
            "median": json_number(st.median),
            "metric": d.metric.get(key, ""),
            "reason": st.reason,
        }
    return {"policy": policy.to_json(), "decisions": out}
