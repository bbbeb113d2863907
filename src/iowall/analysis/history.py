"""Pure: a point's metric over its runs in order, one series per fingerprint, with change points
(``analysis.changepoints``) and, at each, the bisect window: the last good and the first bad run
with their kernels and commits. Series may also come from rows (``series, index, value``) read
from another system's results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..model import MEASURED_STATUSES, Metric, Run, primary_metric
from .changepoints import ALPHA, ChangePoint, Detection, analyse

#: How runs are ordered and grouped (repeats of one group are never split by a change).
By = Literal["time", "label", "kernel", "commit"]
BY: tuple[str, ...] = ("time", "label", "kernel", "commit")


@dataclass(frozen=True)
class Observation:
    """One value of a series: where it stands, its group, and the run behind it if any."""

    index: int
    value: float
    group: str
    run_id: int | None = None
    kernel: str = ""
    commit: str = ""
    label: str = ""
    started_at: float = 0.0


@dataclass(frozen=True)
class Window:
    """A change point and its bisect window: the last good and the first bad observation."""

    change: ChangePoint
    last_good: Observation
    first_bad: Observation


@dataclass(frozen=True)
class History:
    """One series (a fingerprint's metric, or a named series from a file) and its changes."""

    key: str
    name: str
    metric: str
    unit: str
    direction: str
    by: str
    observations: tuple[Observation, ...]
    detection: Detection
    windows: tuple[Window, ...]

    @property
    def groups(self) -> int:
        return len(dict.fromkeys(o.group for o in self.observations))


def _group(run: Run, by: str) -> str:
    if by == "label":
        return run.label
    if by == "kernel":
        return str(run.env.get("kernel", "")) or "?"
    if by == "commit":
        return str(run.env.get("commit", "")) or "?"
    return str(run.id if run.id is not None else run.started_at)


def _metric(run: Run, name: str | None) -> Metric | None:
    if name is None:
        return primary_metric(run)
    return next((m for m in run.metrics if m.name == name), None)


def _ordered(runs: Sequence[Run], by: str) -> list[Run]:
    """Runs oldest first; with groups, each group in place of its first run (so a group's
    repeats stay together even when they were interleaved with another group's)."""
    runs = sorted(runs, key=lambda r: (r.started_at, r.id or 0))
    if by == "time":
        return runs
    first: dict[str, int] = {}
    for i, r in enumerate(runs):
        first.setdefault(_group(r, by), i)
    return sorted(runs, key=lambda r: (first[_group(r, by)], r.started_at, r.id or 0))


def _windows(obs: Sequence[Observation], det: Detection) -> tuple[Window, ...]:
    out = []
    for cp in det.points:
        if 0 < cp.index < len(obs):
            out.append(Window(cp, obs[cp.index - 1], obs[cp.index]))
    return tuple(out)


def from_runs(runs: Sequence[Run], *, metric: str | None = None, by: str = "time",
              alpha: float | None = None) -> list[History]:
    """One History per fingerprint with at least two measured values of ``metric`` (default:
    each run's primary metric), ordered by ``by``; change points by ``changepoints.analyse``."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}")
    per: dict[str, list[Run]] = {}
    for r in runs:
        if r.status in MEASURED_STATUSES and _metric(r, metric) is not None:
            per.setdefault(r.fingerprint(), []).append(r)
    out = []
    for key, rs in per.items():
        rs = _ordered(rs, by)
        ms = [_metric(r, metric) for r in rs]
        first = next(m for m in ms if m is not None)
        obs = tuple(Observation(i, m.value if m is not None else math.nan, _group(r, by), r.id,
                                str(r.env.get("kernel", "")), str(r.env.get("commit", "")),
                                r.label, r.started_at)
                    for i, (r, m) in enumerate(zip(rs, ms, strict=True)))
        if len(obs) < 2:
            continue
        det = _detect(obs, by, alpha)
        out.append(History(key, rs[0].point.describe(), first.name, first.unit,
                           first.direction, by, obs, det, _windows(obs, det)))
    return out


def from_rows(rows: Sequence[tuple[str, float, float]], *, metric: str = "value",
              alpha: float | None = None) -> list[History]:
    """Series from ``(series, index, value)`` rows (another system's results): each series
    ordered by index; every value its own group."""
    per: dict[str, list[tuple[float, float]]] = {}
    for name, index, value in rows:
        per.setdefault(name, []).append((index, value))
    out = []
    for name, pts in per.items():
        pts.sort()
        obs = tuple(Observation(i, v, f"{idx:g}") for i, (idx, v) in enumerate(pts))
        if len(obs) < 2:
            continue
        det = _detect(obs, "time", alpha)
        out.append(History(name, name, metric, "", "higher", "index", obs, det,
                           _windows(obs, det)))
    return out


def _detect(obs: Sequence[Observation], by: str, alpha: float | None) -> Detection:
    groups = None if by in ("time", "index") else [o.group for o in obs]
    return analyse([o.value for o in obs], groups, alpha=ALPHA if alpha is None else alpha)


def worse(h: History, w: Window) -> bool:
    """Whether a change made the metric worse (by its direction)."""
    up = w.change.median_after > w.change.median_before
    return up != (h.direction == "higher")


def summary(histories: Sequence[History]) -> Mapping[str, int]:
    """Counts for the report's head: series, runs, change points, of them worse."""
    return {"series": len(histories),
            "observations": sum(len(h.observations) for h in histories),
            "changes": sum(len(h.windows) for h in histories),
            "worse": sum(worse(h, w) for h in histories for w in h.windows)}
