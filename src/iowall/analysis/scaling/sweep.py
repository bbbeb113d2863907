"""Scaling curves from stored runs: one curve per line of a thread sweep (label × the point's
other parameters × metric), with medians over repeats, efficiency against linear, the knee
and a Universal Scalability Law fit (the maths is in ``analysis.scaling.usl``).

Pure: takes ``model.Run`` objects, returns frozen dataclasses; never touches the store.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...model import MEASURED_STATUSES, Run
from .usl import UslFit, efficiency, knee, usl_fit, weak_to_rate

#: Point parameters that count threads, in the order they are looked for.
AXES = ("threads", "jobs", "numjobs", "nthreads")
#: A parameter that fixes the work per thread: its runs are weak scaling (time per phase).
WORK_PER_THREAD = "files_per_thread"
#: fio's bandwidth per direction (workloads.fio); the default metric of fio points.
FIO_BW = ("read_bw_bytes_per_s", "write_bw_bytes_per_s", "trim_bw_bytes_per_s")
#: The name of read + write (+ trim) bandwidth when a point moves data in several directions.
TOTAL_BW = "total_bw_bytes_per_s"
#: Default rate metrics of engine points, in order of preference.
RATES = ("memcopy_bytes_per_s", "files_per_s", "ops_per_s")
#: Parameters shown first when naming a curve.
NAME_ORDER = ("kind", "rw", "direct", "variant", "fs", "rwmixwrite", "bs", "ioengine")
#: Bed facts that split runs of the same point into different curves.
BED_KEYS = ("kind", "fs")
#: A USL fit needs at least this many distinct thread counts.
MIN_FIT_N = 4


@dataclass(frozen=True)
class Curve:
    """One line of a thread sweep.

    ``n`` are the distinct thread counts; ``median``, ``low``, ``high`` the median, minimum and
    maximum of the metric over the repeats at each (``runs_per_n`` of them). ``efficiency`` is
    median X(N) against linear from the smallest N; ``knee`` the first N under
    ``knee_threshold`` (None when none is). ``fit`` is the USL fit over every repeat, or None
    with the reason in ``fit_note``. ``derivation`` says how the rate was computed when it is
    not a stored metric (weak scaling, summed directions); ``key`` lines curves up across labels.
    """

    label: str
    recipe: str
    group: str
    params: Mapping[str, Any]
    bed: Mapping[str, Any]
    axis: str
    metric: str
    unit: str
    derivation: str
    n: tuple[int, ...]
    median: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    runs_per_n: tuple[int, ...]
    run_ids: tuple[int, ...]
    efficiency: tuple[float, ...]
    knee: int | None
    knee_threshold: float
    fit: UslFit | None
    fit_note: str
    key: str

    @property
    def per_thread(self) -> tuple[float, ...]:
        """Median throughput per thread at each N."""
        return tuple(x / n for n, x in zip(self.n, self.median, strict=True))


@dataclass(frozen=True)
class SideEntry:
    """One label's summary of a curve: knee and USL parameters (None when not fitted)."""

    label: str
    knee: int | None
    max_n: int
    sigma: float | None
    kappa: float | None
    n_star: float | None
    x_peak: float | None
    fit_note: str


@dataclass(frozen=True)
class SideBySide:
    """The same line (recipe, group, metric) under each label, in label order; ``differs``
    names the parameters and bed facts that are not the same under every label."""

    key: str
    recipe: str
    group: str
    metric: str
    unit: str
    entries: tuple[SideEntry, ...]
    differs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scaling:
    """Every curve of every side, and the side-by-side of curves across labels."""

    labels: tuple[str, ...]
    knee_threshold: float
    curves: tuple[Curve, ...]
    side_by_side: tuple[SideBySide, ...]


# ------------------------------------------------------------------------------ helpers


def axis_of(params: Mapping[str, Any]) -> str | None:
    """The thread-count parameter of a point (``threads``, ``jobs`` …), or None."""
    for a in AXES:
        v = params.get(a)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            return a
    return None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def derived_keys(runs: Sequence[Run], axis: str) -> set[str]:
    """Parameters that follow the thread count rather than name a line of the sweep, such as
    inode-cache's ``files`` (threads × files_per_thread): numeric, whole multiples of N at every
    run, and with fewer distinct values per thread than distinct values."""
    keys = {k for r in runs for k in r.point.params if k != axis}
    out = set()
    for k in keys:
        vals, per = set(), set()
        ok = True
        for r in runs:
            if k not in r.point.params:
                continue
            v, n = r.point.params[k], int(r.point.params[axis])
            if not _num(v) or v % n != 0:
                ok = False
                break
            vals.add(v)
            per.add(v / n)
        if ok and len(vals) > 1 and len(per) < len(vals):
            out.add(k)
    return out


def _key(doc: Mapping[str, Any]) -> str:
    return json.dumps(dict(doc), sort_keys=True, default=str)


@dataclass(frozen=True)
class Rate:
    """How to read one throughput from a run: a stored metric, or one computed from them
    (``derivation`` says how)."""

    name: str
    unit: str
    derivation: str
    value: Callable[[Run], float | None]


def _units(runs: Sequence[Run]) -> dict[str, tuple[str, str]]:
    """Metric name → (unit, direction), in the order the metrics first appear."""
    out: dict[str, tuple[str, str]] = {}
    for r in runs:
        for m in r.metrics:
            out.setdefault(m.name, (m.unit, m.direction))
    return out


def _weak(name: str, axis: str) -> Rate:
    def value(r: Run) -> float | None:
        t = r.metric(name)
        if t is None or t <= 0 or not math.isfinite(t):
            return None
        p = r.point.params
        return weak_to_rate([p[axis]], float(p[WORK_PER_THREAD]), [t])[0]

    return Rate(name, "files/s", f"{axis} × {WORK_PER_THREAD} / {name}", value)


def _stored(name: str, unit: str) -> Rate:
    return Rate(name, unit, "", lambda r: r.metric(name))


def _fio_total(names: Sequence[str]) -> Rate:
    def value(r: Run) -> float | None:
        vals = [r.metric(n) for n in names]
        return sum(v for v in vals if v is not None) if any(v is not None for v in vals) else None

    return Rate(TOTAL_BW, "B/s", " + ".join(names), value)


def _is_time(unit: str, direction: str) -> bool:
    return unit == "s" or direction == "lower"


def pick_metrics(runs: Sequence[Run], axis: str, metric: str | None) -> tuple[list[Rate], str]:
    """The throughput(s) of a group of runs, or an empty list and why.

    Default: weak-scaling points (``files_per_thread``) give one rate per ``*_wall_s`` phase
    (``weak_to_rate``); fio points their bandwidth (summed over directions when they move data
    in several); engine points their stored rate. ``metric`` names one metric instead; a time
    is turned into a rate only when the work per thread is fixed.
    """
    units = _units(runs)
    weak = all(_num(r.point.params.get(WORK_PER_THREAD)) for r in runs)
    if metric is not None:
        if metric == TOTAL_BW and metric not in units:
            present = [n for n in FIO_BW if n in units]
            return ([_fio_total(present)], "") if present else ([], f"no fio bandwidth for {metric}")
        if metric not in units:
            return [], f"no metric {metric}"
        unit, direction = units[metric]
        if _is_time(unit, direction):
            if weak and unit == "s":
                return [_weak(metric, axis)], ""
            return [], (
                f"{metric} is {'a time' if unit == 's' else 'lower-is-better'}, not a "
                "throughput, and the work per thread is not fixed: pick a rate"
            )
        return [_stored(metric, unit)], ""
    if weak:
        phases = [n for n, (u, _) in units.items() if n.endswith("_wall_s") and u == "s"]
        if phases:
            return [_weak(n, axis) for n in phases], ""
    bw = [n for n in FIO_BW if n in units]
    if len(bw) == 1:
        return [_stored(bw[0], units[bw[0]][0])], ""
    if bw:
        return [_fio_total(bw)], ""
    for n in RATES:
        if n in units:
            return [_stored(n, units[n][0])], ""
    for n, (u, d) in units.items():
        if u.endswith("/s") and d == "higher":
            return [_stored(n, u)], ""
    return [], "no throughput metric (pass --metric)"


def _fit(ns: Sequence[int], xs: Sequence[float]) -> tuple[UslFit | None, str]:
    distinct = len(set(ns))
    if distinct < MIN_FIT_N:
        return None, f"USL fit needs at least {MIN_FIT_N} thread counts, have {distinct}"
    if any(x <= 0 for x in xs):
        return None, "USL fit needs every throughput > 0"
    return usl_fit(ns, xs), ""


def _curve(
    label: str,
    recipe: str,
    params: Mapping[str, Any],
    bed: Mapping[str, Any],
    axis: str,
    m: Rate,
    runs: Sequence[Run],
    knee_at: float,
) -> Curve | None:
    obs: list[tuple[int, float, int]] = []
    for r in runs:
        v = m.value(r)
        if v is not None and math.isfinite(v) and v >= 0:
            obs.append((int(r.point.params[axis]), float(v), r.id if r.id is not None else -1))
    ns = sorted({o[0] for o in obs})
    if len(ns) < 2:
        return None
    by_n = {n: [o[1] for o in obs if o[0] == n] for n in ns}
    med = tuple(statistics.median(by_n[n]) for n in ns)
    eff: tuple[float, ...] = ()
    kn: int | None = None
    note = ""
    if med[0] > 0:
        eff = tuple(efficiency(ns, med))
        kn = knee(ns, med, knee_at)
    else:
        note = f"throughput at N={ns[0]} is 0: no efficiency"
    fit, fit_note = _fit([o[0] for o in obs], [o[1] for o in obs])
    return Curve(
        label=label,
        recipe=recipe,
        group="",
        params=dict(params),
        bed=dict(bed),
        axis=axis,
        metric=m.name,
        unit=m.unit,
        derivation=m.derivation,
        n=tuple(ns),
        median=med,
        low=tuple(min(by_n[n]) for n in ns),
        high=tuple(max(by_n[n]) for n in ns),
        runs_per_n=tuple(len(by_n[n]) for n in ns),
        run_ids=tuple(sorted(o[2] for o in obs if o[2] >= 0)),
        efficiency=eff,
        knee=kn,
        knee_threshold=knee_at,
        fit=fit,
        fit_note="; ".join(x for x in (note, fit_note) if x),
        key="",
    )


def _distinguishing(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fewest parameters (in NAME_ORDER, then alphabetical, greedily) that tell these
    groups apart."""
    keys = sorted(
        {k for g in groups for k in g},
        key=lambda k: (NAME_ORDER.index(k) if k in NAME_ORDER else len(NAME_ORDER), k),
    )
    chosen: list[str] = []
    classes = 1
    for k in keys:
        if classes == len(groups):
            break
        n = len({_key({c: g.get(c) for c in chosen + [k]}) for g in groups})
        if n > classes:
            chosen.append(k)
            classes = n
    return chosen


def _line_keys(curves: Sequence[Curve]) -> dict[str, list[str]]:
    """Per recipe, the parameters that name a line of its sweep: the union over labels of
    what tells that label's curves apart. Other parameters (sizes picked for the machine,
    say) may differ between labels without splitting a line; ``SideBySide.differs`` says so."""
    out: dict[str, list[str]] = {}
    for recipe in dict.fromkeys(c.recipe for c in curves):
        keys: list[str] = []
        for label in dict.fromkeys(c.label for c in curves if c.recipe == recipe):
            groups = list(
                {_key(c.params): c.params for c in curves if c.recipe == recipe and c.label == label}.values()
            )
            keys += [k for k in _distinguishing(groups) if k not in keys]
        out[recipe] = sorted(
            keys, key=lambda k: (NAME_ORDER.index(k) if k in NAME_ORDER else len(NAME_ORDER), k)
        )
    return out


def _named(c: Curve, keys: Sequence[str]) -> Curve:
    line = {k: c.params.get(k) for k in keys}
    words = [f"{k}={c.params[k]}" for k in keys if k in c.params]
    return replace(
        c,
        group=" ".join([c.recipe] + words),
        key=_key({"recipe": c.recipe, "line": line, "metric": c.metric}),
    )


# ------------------------------------------------------------------------------ public


def build_curves(
    sides: Sequence[tuple[str, Sequence[Run]]], *, metric: str | None = None, knee_at: float = 0.8
) -> list[Curve]:
    """The curves of several sides, each a (label, runs) pair, in side order.

    Within a side, runs are grouped by recipe and by their point parameters other than the
    thread axis (and parameters derived from it); runs of one group on differently shaped beds
    (kind, filesystem) become separate curves, their label suffixed ``[kind fs]``. Only
    completed runs (ok, filled) count; a group with a single thread count is not a sweep.
    """
    if not 0.0 < knee_at <= 1.0:
        raise ValueError("the knee threshold must be in (0, 1]")
    curves: list[Curve] = []
    for label, side_runs in sides:
        runs = [r for r in side_runs if r.status in MEASURED_STATUSES and axis_of(r.point.params)]
        buckets: dict[tuple[str, str], list[Run]] = {}
        for r in runs:
            buckets.setdefault((r.point.recipe, axis_of(r.point.params) or ""), []).append(r)
        for (recipe, axis), brs in buckets.items():
            drop = derived_keys(brs, axis) | {axis}
            groups: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any], list[Run]]] = {}
            for r in brs:
                params = {k: v for k, v in r.point.params.items() if k not in drop}
                bed = {k: r.bed.get(k) for k in BED_KEYS}
                gk = (_key(params), _key(bed))
                groups.setdefault(gk, (params, bed, []))[2].append(r)
            beds_per_params: dict[str, int] = {}
            for pk, _ in groups:
                beds_per_params[pk] = beds_per_params.get(pk, 0) + 1
            for (pk, _), (params, bed, grs) in groups.items():
                shown = label
                if beds_per_params[pk] > 1:
                    shown = f"{label} [{' '.join(str(bed[k]) for k in BED_KEYS)}]"
                metrics, _why = pick_metrics(grs, axis, metric)
                for m in metrics:
                    c = _curve(shown, recipe, params, bed, axis, m, grs, knee_at)
                    if c is not None:
                        curves.append(c)
    keys = _line_keys(curves)
    return [_named(c, keys[c.recipe]) for c in curves]


def why_no_curves(runs: Sequence[Run], *, metric: str | None = None) -> str:
    """Why ``build_curves`` finds no curve in these runs, in one clause."""
    runs = [r for r in runs if r.status in MEASURED_STATUSES]
    swept = [r for r in runs if axis_of(r.point.params)]
    if not swept:
        return f"no run has a thread count ({', '.join(AXES)})"
    counts: dict[tuple[str, str], set[int]] = {}
    for r in swept:
        a = axis_of(r.point.params) or ""
        counts.setdefault((r.point.recipe, a), set()).add(int(r.point.params[a]))
    if all(len(v) < 2 for v in counts.values()):
        one = ", ".join(f"{rec} {a}={next(iter(v))}" for (rec, a), v in sorted(counts.items()))
        return f"every group of runs has a single thread count ({one})"
    if metric is not None:
        units = _units(swept)
        if metric not in units and metric != TOTAL_BW:
            have = ", ".join(list(units)[:8])
            return f"no run of the sweep has metric {metric} (they have: {have})"
        # the reason of the groups that have the metric (a time on a strong-scaling sweep,
        # say), not that of others in the selection which never measured it (memcopy points)
        whys = []
        for rec, a in counts:
            rs = [
                r
                for r in swept
                if r.point.recipe == rec
                and axis_of(r.point.params) == a
                and (metric == TOTAL_BW or r.metric(metric) is not None)
            ]
            _, why = pick_metrics(rs, a, metric) if rs else ([], "")
            if why:
                whys.append(why)
        if whys:
            return whys[0]
    return "no group of runs has the metric at two or more thread counts"


def side_by_side(curves: Sequence[Curve]) -> list[SideBySide]:
    """Per curve key, the knee and USL parameters of every label that has it (label order)."""
    rows: dict[str, list[Curve]] = {}
    for c in curves:
        rows.setdefault(c.key, []).append(c)
    out = []
    for key, cs in rows.items():
        entries = tuple(
            SideEntry(
                label=c.label,
                knee=c.knee,
                max_n=max(c.n),
                sigma=c.fit.sigma if c.fit else None,
                kappa=c.fit.kappa if c.fit else None,
                n_star=c.fit.n_star if c.fit else None,
                x_peak=c.fit.x_peak if c.fit else None,
                fit_note=c.fit_note,
            )
            for c in cs
        )
        c0 = cs[0]
        out.append(SideBySide(key, c0.recipe, c0.group, c0.metric, c0.unit, entries, _differs(cs)))
    return out


def _differs(cs: Sequence[Curve]) -> tuple[str, ...]:
    """Point parameters and bed facts that differ between the labels of one line."""
    out = []
    for what, maps in (("", [c.params for c in cs]), ("bed ", [c.bed for c in cs])):
        for k in sorted({k for m in maps for k in m}):
            vals = [m.get(k) for m in maps]
            if len({_key({"v": v}) for v in vals}) > 1:
                out.append(
                    f"{what}{k}: "
                    + ", ".join(
                        f"{v if v is not None else '-'} ({c.label})" for c, v in zip(cs, vals, strict=True)
                    )
                )
    return tuple(out)


def analyse(
    sides: Sequence[tuple[str, Sequence[Run]]], *, metric: str | None = None, knee_at: float = 0.8
) -> Scaling:
    """Curves and side-by-side for several (label, runs) sides."""
    curves = build_curves(sides, metric=metric, knee_at=knee_at)
    labels = tuple(dict.fromkeys(c.label for c in curves))
    return Scaling(labels, knee_at, tuple(curves), tuple(side_by_side(curves)))
