"""Pure: a point's metric over its runs in order, one series per fingerprint, with change points
(``analysis.regress.changepoints``) and, at each, the bisect window: the last good and the first bad run
with their kernels and commits. Series may also come from rows (``series, index, value``) read
from another system's results."""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np

from ...model import MEASURED_STATUSES, Metric, Run, could_be_primary, primary_metric
from .changepoints import ALPHA, ChangePoint, Detection, analyse
from .compare import Difference, Side, differences
from .env_numbers import METRICS as ENV_METRICS
from .series_gate import SeriesResults, Tested, newest_of

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
    #: the result's own index as its file wrote it (a build number, a date, a commit id)
    at: str = ""


@dataclass(frozen=True)
class Window:
    """A change point and its bisect window: the last good and the first bad observation."""

    change: ChangePoint
    last_good: Observation
    first_bad: Observation
    #: what the runs after the change had that the runs before it did not (``new_facts``)
    differs: tuple[Difference, ...] = ()


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
    #: the early test of the newest results against the history before them
    newest: Tested | None = None
    #: what the newest results' runs had that their baseline's did not (``new_facts``)
    differs: tuple[Difference, ...] = ()

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


def needed(metric: str | None) -> Callable[[str], bool]:
    """Which metrics ``from_runs(runs, metric=metric)`` reads, as a test on a name: the one
    named, or those that could be a run's primary metric (for loading only those), and those
    that say what else took the CPUs (``env_numbers.METRICS``, for ``new_facts``)."""
    wanted = (lambda n: n == metric) if metric else could_be_primary
    return lambda n: n in ENV_METRICS or wanted(n)


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


def _windows(obs: Sequence[Observation], det: Detection, runs: Sequence[Run] = ()) -> tuple[Window, ...]:
    """Each change point's bisect window, and with ``runs`` (one per observation) what the
    runs after it had that the runs before it did not (``new_facts``: up to ``AROUND`` runs
    either side, within the neighbouring change points; the kernel left out, which the
    window names)."""
    out = []
    cuts = sorted({0, *(cp.index for cp in det.points if 0 < cp.index < len(obs)), len(obs)})
    for cp in det.points:
        if 0 < cp.index < len(obs):
            differs: tuple[Difference, ...] = ()
            if runs:
                j = cuts.index(cp.index)
                lo, hi = max(cuts[j - 1], cp.index - AROUND), min(cuts[j + 1], cp.index + AROUND)
                differs = new_facts(runs[lo : cp.index], runs[cp.index : hi], skip=("kernel",))
            out.append(Window(cp, obs[cp.index - 1], obs[cp.index], differs))
    return tuple(out)


def from_runs(
    runs: Sequence[Run], *, metric: str | None = None, by: str = "time", alpha: float | None = None
) -> list[History]:
    """One History per fingerprint with a measured value of ``metric`` (default: each run's
    primary metric), ordered by ``by``; change points by ``changepoints.analyse`` (a series
    too short to search carries its reason), the newest results by ``early``."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}")
    per: dict[str, list[Run]] = {}
    for r in runs:
        if r.status in MEASURED_STATUSES and _metric(r, metric) is not None:
            per.setdefault(r.fingerprint(), []).append(r)
    series = []
    for key, rs in per.items():
        rs = _ordered(rs, by)
        ms = [_metric(r, metric) for r in rs]
        first = next(m for m in ms if m is not None)
        obs = tuple(
            Observation(
                i,
                m.value if m is not None else math.nan,
                _group(r, by),
                r.id,
                str(r.env.get("kernel", "")),
                str(r.env.get("commit", "")),
                r.label,
                r.started_at,
            )
            for i, (r, m) in enumerate(zip(rs, ms, strict=True))
        )
        series.append((key, rs[0].point.describe(), first, obs, rs))
    dets = _detect_all([obs for *_, obs, _ in series], by, alpha)
    out = []
    for (key, point, first, obs, rs), det in zip(series, dets, strict=True):
        h = _with_newest(
            History(key, point, first.name, first.unit, first.direction, by, obs, det, _windows(obs, det, rs))
        )
        out.append(replace(h, differs=_newest_facts(h, rs)))
    return out


#: Runs read either side of a change point for what differed (the nearest, within the segments).
AROUND = 10


def new_facts(
    before: Sequence[Run], after: Sequence[Run], skip: Sequence[str] = ()
) -> tuple[Difference, ...]:
    """What the runs ``after`` had that the runs ``before`` did not: each fact of
    ``compare.differences`` but the label (kernel, fio, THP, cmdline, sysctls, knobs, bed,
    cgroup limits) that held one value in every run before and another in some run after,
    and the numeric facts of ``env_numbers`` (the dirty threshold, the load average at start,
    other processes' CPU and steal during the run) beyond their margins. A fact that already
    varied before (a kernel per commit) is not news at a change."""
    if not before or not after:
        return ()
    out = []
    for d in differences([Side("before", before), Side("after", after)], skip=("label", *skip)):
        if not d.held or d.held[0] == 1:  # numeric beyond its margin, or one value before
            out.append(d)
    return tuple(out)


def _newest_facts(h: History, rs: Sequence[Run]) -> tuple[Difference, ...]:
    """``new_facts`` of the newest results' runs against their baseline's (the results the
    early test compared them with; a result is a group of runs)."""
    w = h.newest.early.window if h.newest is not None else None
    if w is None:
        return ()
    groups = list(dict.fromkeys(o.group for o in h.observations))
    n = len(groups)
    base, new = set(groups[w.base_from : n - w.k]), set(groups[n - w.k :])
    return new_facts(
        [r for r, o in zip(rs, h.observations, strict=True) if o.group in base],
        [r for r, o in zip(rs, h.observations, strict=True) if o.group in new],
    )


def _detect_all(series: Sequence[Sequence[Observation]], by: str, alpha: float | None) -> list[Detection]:
    """``_detect`` of each series, on as many threads as CPUs: each series' permutation null
    is its own (its length differs), numpy shuffles and sums without the GIL, and the
    results do not depend on the order (each generator is seeded by its series' shape)."""
    workers = min(len(series), len(os.sched_getaffinity(0)))  # the CPUs this process may run on
    if workers < 2:
        return [_detect(obs, by, alpha) for obs in series]
    with ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(lambda obs: _detect(obs, by, alpha), series))


class SeriesRow(NamedTuple):
    """One row of another system's series: its name, index (as written), value, and optionally
    the metric's direction (higher or lower is better) and unit."""

    series: str
    at: str
    value: float
    direction: str = ""
    unit: str = ""


def _order_key(indices: Sequence[str]) -> list[tuple[float, str]] | None:
    """How indices sort: as numbers when all are, as ISO dates or times when all are, else
    None (the file's order: commit ids, build names)."""
    try:
        return [(float(i), "") for i in indices]
    except ValueError:
        pass
    try:
        return [(datetime.datetime.fromisoformat(i).timestamp(), "") for i in indices]
    except ValueError:
        return None


def from_rows(
    rows: Sequence[SeriesRow | tuple[str, str | float, float]],
    *,
    metric: str = "value",
    alpha: float | None = None,
    direction: str = "higher",
    unit: str = "",
) -> list[History]:
    """Series from ``(series, index, value[, direction, unit])`` rows (another system's
    results): each series ordered by its index (numbers, ISO dates, or else as the file has
    them); rows with the same index are one result's repeats, kept together as a group. A
    row's direction and unit, when given, override ``direction`` and ``unit`` for its series.
    A series too short to search is kept, with its reason."""
    per: dict[str, list[SeriesRow]] = {}
    for r in rows:
        row = r if isinstance(r, SeriesRow) else SeriesRow(str(r[0]), _index_text(r[1]), float(r[2]))
        per.setdefault(row.series, []).append(row)
    series = []
    for name, rs in per.items():
        keys = _order_key([r.at for r in rs])
        first: dict[str, int] = {}
        for i, r in enumerate(rs):
            first.setdefault(_same(r.at, keys[i] if keys else None), i)
        order = sorted(
            range(len(rs)), key=lambda i: (keys[i] if keys else (float(first[_same(rs[i].at, None)]), ""), i)
        )
        obs = tuple(
            Observation(pos, rs[i].value, _same(rs[i].at, keys[i] if keys else None), at=rs[i].at)
            for pos, i in enumerate(order)
        )
        d = next((r.direction for r in rs if r.direction), direction)
        u = next((r.unit for r in rs if r.unit), unit)
        series.append((name, d, u, obs))
    dets = _detect_all([obs for *_, obs in series], "index", alpha)
    return [
        _with_newest(History(name, name, metric, u, d, "index", obs, det, _windows(obs, det)))
        for (name, d, u, obs), det in zip(series, dets, strict=True)
    ]


def _index_text(index: str | float) -> str:
    if isinstance(index, float):
        return str(int(index)) if index.is_integer() else repr(index)
    return str(index).strip()


def _same(index: str, key: tuple[float, str] | None) -> str:
    """The group of a row: equal numbers are one result however written (1000, 1000.0)."""
    return repr(key[0]) if key is not None else index


def results(h: History) -> SeriesResults:
    """A history as results in order: one per group, the median of its finite values."""
    groups: dict[str, list[Observation]] = {}
    for o in h.observations:
        groups.setdefault(o.group, []).append(o)
    at, vals, reps = [], [], []
    for g, os_ in groups.items():
        v = [o.value for o in os_ if math.isfinite(o.value)]
        at.append(
            os_[0].at or (f"run {os_[0].run_id}" if h.by == "time" and os_[0].run_id is not None else g)
        )
        vals.append(float(np.median(v)) if v else math.nan)
        reps.append(tuple(v))
    pos = {g: i for i, g in enumerate(groups)}
    changes = tuple(pos[w.first_bad.group] for w in h.windows)
    return SeriesResults(h.name, h.metric, h.unit, h.direction, tuple(at), tuple(vals), tuple(reps), changes)


def _with_newest(h: History) -> History:
    return History(
        h.key,
        h.name,
        h.metric,
        h.unit,
        h.direction,
        h.by,
        h.observations,
        h.detection,
        h.windows,
        newest_of(results(h)),
    )


def _detect(obs: Sequence[Observation], by: str, alpha: float | None) -> Detection:
    groups = None if by == "time" else [o.group for o in obs]
    return analyse([o.value for o in obs], groups, alpha=ALPHA if alpha is None else alpha)


def worse(h: History, w: Window) -> bool:
    """Whether a change made the metric worse (by its direction)."""
    up = w.change.median_after > w.change.median_before
    return up != (h.direction == "higher")


def summary(histories: Sequence[History]) -> Mapping[str, int]:
    """Counts for the report's head: series, runs, change points, of them worse."""
    return {
        "series": len(histories),
        "observations": sum(len(h.observations) for h in histories),
        "changes": sum(len(h.windows) for h in histories),
        "worse": sum(worse(h, w) for h in histories for w in h.windows),
    }
