"""Pure: base vs new run sets, point by point and metric by metric, with the comparability
check a reviewer needs first (what differs besides the compared field).

Points pair by fingerprint (recipe, parameters, bed shape, host shape; never the kernel;
``pairing`` keys them). Knob parameters (``sysctl:…``, ``sysfs:…``, ``xfs:…``) that are
constant within a side are the treatment, not the point: they leave the pairing key and show
as differences. Each pair is judged by ``stats.compare_samples`` (Hodges–Lehmann ratio,
calibrated 95% interval, significance only beyond the floor), or by invocation where its runs
came in invocations of several runs (``invocations.by_invocation``); ``stats.geomean`` summarises
each metric. NaN and infinite values are treated as missing: left out, counted in the row and
named in a note.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...model import MEASURED_STATUSES, Run
from ...vocab.knob import looks_like_knob
from .cgroup_env import limits_text
from .env_numbers import numeric_differences
from .invocations import by_invocation, clustered, invocation_notes
from .pairing import by_pair_key, constant_knobs, fact_text, point_text, why_unpaired
from .stats import Comparison, compare_samples, geomean

SCHEMA_VERSION = 1
#: the method's words for the rows judged by invocation (``invocations.by_invocation``)
BY_INVOCATION = (
    "; rows whose runs came in invocations of several runs: by invocation, Welch's t on the "
    "means of log values (each side's variance from its invocations' spread, or its runs')"
)

#: Metrics compared unless ``metrics=`` says otherwise: what a workload delivers, not the
#: probes' diagnostics (those are one ``--metric`` away).
HEADLINE = ("*_bw_bytes_per_s", "*_iops", "*_clat_p99_s", "*files_per_s", "*_wall_s", "memcopy_bytes_per_s")
#: Probe metrics that a headline pattern would otherwise catch.
NOT_HEADLINE = ("disk_*",)

#: Environment and bed facts listed when they differ between sides (dotted paths).
ENV_FIELDS = ("kernel", "host.hostname", "fio_version", "thp", "cmdline")
BED_FIELDS = (
    "kind",
    "fs",
    "mkfs_opts",
    "mount_opts",
    "backing",
    "block_size",
    "image_bytes",
    "capacity_bytes",
    "queue.scheduler",
    "queue.rotational",
    "queue.nr_requests",
    "queue.max_sectors_kb",
    "queue.read_ahead_kb",
)


@dataclass(frozen=True)
class Side:
    """One run set: its name (label, selection or bundle) and its runs."""

    name: str
    runs: Sequence[Run]


@dataclass(frozen=True)
class Difference:
    """A fact that is not the same on every side: one text per side (base first), and how
    many distinct values each side held (empty for a numeric fact, whose text is a range)."""

    field: str
    values: tuple[str, ...]
    held: tuple[int, ...] = ()


@dataclass(frozen=True)
class Row:
    """One point and metric of one new side against the base."""

    label: str
    point: Mapping[str, Any]
    point_text: str
    metric: str
    unit: str
    direction: str
    cmp: Comparison
    base_samples: tuple[float, ...]
    new_samples: tuple[float, ...]
    base_runs: tuple[int, ...] = ()
    new_runs: tuple[int, ...] = ()
    dropped: int = 0
    #: The batch (invocation) of each sample, in sample order; empty when not known.
    base_batches: tuple[str, ...] = ()
    new_batches: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unpaired:
    """A point measured on one side only, and why it found no partner."""

    side: str
    point_text: str
    reason: str


@dataclass(frozen=True)
class CompareResult:
    """Everything a compare report shows."""

    base: str
    news: tuple[str, ...]
    compared: str
    differences: tuple[Difference, ...]
    common: Mapping[str, Any]
    rows: tuple[Row, ...]
    geomean: Mapping[str, Mapping[str, float]]
    unpaired: tuple[Unpaired, ...] = ()
    floor: float = 0.02
    confidence: float = 0.95
    method: str = (
        "Hodges-Lehmann ratio new/base with a calibrated per-side (Welch) interval; "
        "significant when the interval excludes 1 and |change| > floor"
    )
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: sides holding a run measured in an emulated guest (no KVM: timings are meaningless)
    emulated: tuple[str, ...] = ()


# ------------------------------------------------------------------------------- helpers


def selectable(patterns: Sequence[str] | None) -> Callable[[str], bool] | None:
    """Which metric names ``select_metrics(names, patterns)`` could choose, as a test on one
    name (None: every name), for loading only those: pure."""
    if patterns is not None and list(patterns) == ["all"]:
        return None
    pats, skip = (list(HEADLINE), NOT_HEADLINE) if patterns is None else (list(patterns), ())
    return lambda n: (
        any(fnmatch.fnmatchcase(n, p) for p in pats) and not any(fnmatch.fnmatchcase(n, s) for s in skip)
    )


def select_metrics(names: Iterable[str], patterns: Sequence[str] | None) -> list[str]:
    """Metric names matching the patterns (shell globs), in pattern order; ``None`` means
    the headline metrics, ``["all"]`` every metric."""
    names = sorted(set(names))
    skip: tuple[str, ...] = ()
    if patterns is None:
        pats, skip = list(HEADLINE), NOT_HEADLINE
    elif list(patterns) == ["all"]:
        return names
    else:
        pats = list(patterns)
    out: list[str] = []
    for p in pats:
        for n in names:
            if (
                n not in out
                and fnmatch.fnmatchcase(n, p)
                and not any(fnmatch.fnmatchcase(n, s) for s in skip)
            ):
                out.append(n)
    return out


def describe_points(points: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Short texts for points (only parameters that vary among them) and the common rest."""
    keys: list[str] = []
    for p in points:
        for k in p:
            if k not in keys:
                keys.append(k)
    varying = [k for k in keys if len({repr(p.get(k)) for p in points}) > 1]
    common = {k: points[0].get(k) for k in keys if k not in varying} if points else {}
    texts = [" ".join(f"{k}={p.get(k)}" for k in varying if k in p) or "-" for p in points]
    return texts, common


def differences(sides: Sequence[Side], skip: Iterable[str] = ()) -> list[Difference]:
    """Facts whose values are not the same on every side: environment, sysctls, knobs, bed,
    the cgroup limits the runs were under; then the dirty threshold and the load average at
    start, beyond their margins (analysis/regress/env_numbers.py). A side with several values shows
    them all, joined by ``|``."""
    skip = set(skip)
    fields: list[tuple[str, str, str]] = [(f, "env", f) for f in ENV_FIELDS]
    sysctl_names = sorted({k for s in sides for r in s.runs for k in (r.env.get("sysctls") or {})})
    fields += [(f"sysctl {k}", "sysctl", k) for k in sysctl_names]
    params = {k for s in sides for r in s.runs for k in r.point.params}  # then each name once
    knob_names = sorted(
        {k for k in params if looks_like_knob(k)}
        | {k for s in sides for r in s.runs for k in (r.env.get("knobs") or {})}
    )
    fields += [(f"knob {k}", "knob", k) for k in knob_names]
    fields += [(f"bed {f}", "bed", f) for f in BED_FIELDS]
    fields += [("cgroup limits", "cgroup", ""), ("label", "label", "")]
    out = []
    for name, kind, key in fields:
        if name in skip:
            continue
        fact = _fact_of(kind, key)
        # each side's values in the order first seen (dict keys: ordered, unique)
        seen = [list(dict.fromkeys(fact_text(fact(r)) for r in s.runs)) for s in sides]
        per_side = [" | ".join(v) or "-" for v in seen]
        if len(set(per_side)) > 1:
            out.append(Difference(name, tuple(per_side), tuple(len(v) for v in seen)))
    out += [
        Difference(name, vals)
        for name, vals in numeric_differences([s.runs for s in sides])
        if name not in skip
    ]
    return out


def _fact_of(kind: str, key: str) -> Callable[[Run], Any]:
    """How to read one fact of a run (``differences``: a field of 1,000 runs, the path
    split once, not once a run)."""
    if kind in ("env", "bed"):
        first, *rest = key.split(".")

        def dig(r: Run) -> Any:
            cur: Any = (r.env if kind == "env" else r.bed).get(first)
            for part in rest:
                if not isinstance(cur, Mapping):
                    return None
                cur = cur.get(part)
            return cur

        return dig
    if kind == "sysctl":
        return lambda r: (r.env.get("sysctls") or {}).get(key)
    if kind == "knob":

        def knob(r: Run) -> Any:
            v = r.point.params.get(key)
            return v if v is not None else (r.env.get("knobs") or {}).get(key)

        return knob
    if kind == "cgroup":  # the limits only: the groups' paths change from session to session
        return lambda r: limits_text(r.env.get("cgroup"))
    return lambda r: r.label


def shared_run(sides: Sequence[Side]) -> tuple[str, int, int] | None:
    """The first run that two sides both hold, as ``(run, side i, side j)`` with i < j, or
    None when the sides are disjoint. A run is known by its uuid (the same in the store and in
    any bundle it travelled in), else by its store id."""
    seen: dict[str, int] = {}
    for j, side in enumerate(sides):
        mine: set[str] = set()
        for r in side.runs:
            key = r.uuid or (f"id {r.id}" if r.id is not None else "")
            if not key or key in mine:
                continue
            mine.add(key)
            if key in seen:
                name = str(r.id) if r.id is not None else r.uuid
                return name, seen[key], j
            seen[key] = j
    return None


def _finite(runs: Iterable[Run], metric: str) -> tuple[list[float], list[str], int]:
    """The finite values of a metric over runs, the batch of each, and how many were NaN or
    inf (missing values, None, are not counted: the run did not report the metric)."""
    vals: list[float] = []
    batches: list[str] = []
    bad = 0
    for r in runs:
        v = r.metric(metric)
        if v is None:
            continue
        if not math.isfinite(v):
            bad += 1
            continue
        vals.append(v)
        batches.append(r.batch)
    return vals, batches, bad


# ---------------------------------------------------------------------------- compare


#: The smallest relative change `compare` calls better or worse (``--floor``).
FLOOR = 0.02


def compare(
    base: Side,
    news: Sequence[Side],
    *,
    metrics: Sequence[str] | None = None,
    floor: float = FLOOR,
    confidence: float = 0.95,
    compared: str = "label",
    by_invocation: bool = True,
) -> CompareResult:
    """Pair the points of each new side with the base's and compare every chosen metric.

    Only completed measurements count (status ok or filled). ``compared`` names the field
    the sides were chosen by; it is left out of the differences. ``by_invocation`` False: every
    row by its runs (the gate, which tests invocations by its own rule, ``gate.invocation_p``,
    and keeps the runs' interval as a row's first condition)."""
    sides = [Side(base.name, [r for r in base.runs if r.status in MEASURED_STATUSES])]
    sides += [Side(s.name, [r for r in s.runs if r.status in MEASURED_STATUSES]) for s in news]
    drop = _treatment_knobs(sides)
    groups = [by_pair_key(s.runs, drop) for s in sides]
    base_g = groups[0]
    point_of, text_of, common = _base_points(base_g, drop)

    rows: list[Row] = []
    unpaired: list[Unpaired] = []
    gm: dict[str, dict[str, float]] = {}
    nonfinite: list[str] = []
    for s, g in zip(sides[1:], groups[1:], strict=True):
        unpaired += _unpaired(base.name, base_g, s.name, g, text_of, drop)
        side_rows, side_nonfinite = _side_rows(
            s.name, base_g, g, point_of, text_of, metrics, floor, confidence, by_invocation
        )
        rows += side_rows
        nonfinite += side_nonfinite
        gm[s.name] = _geomean_ratios(side_rows)
    emulated = tuple(s.name for s in sides if any(r.env.get("emulated") for r in s.runs))
    if emulated:  # timings of an emulated guest say nothing: no verdict on them, ever
        rows = [replace(r, cmp=replace(r.cmp, significant=False, better=None)) for r in rows]
    return CompareResult(
        base=base.name,
        news=tuple(s.name for s in news),
        compared=compared,
        differences=tuple(differences(sides, skip=compared.split(","))),
        common=common,
        rows=tuple(rows),
        geomean=gm,
        unpaired=tuple(unpaired),
        floor=floor,
        confidence=confidence,
        notes=tuple(_notes(rows, bool(emulated), nonfinite, drop)),
        emulated=emulated,
        **({"method": CompareResult.method + BY_INVOCATION} if any(r.cmp.invocations for r in rows) else {}),
    )


def _treatment_knobs(sides: Sequence[Side]) -> set[str]:
    """The knobs left out of the pairing: those constant within every side that sets them
    (the side's treatment, not its point); a knob swept within a side stays in the point."""
    consts = [constant_knobs(s.runs) for s in sides]
    drop = {
        k
        for s, c in zip(sides, consts, strict=True)
        for r in s.runs
        for k in r.point.params
        if looks_like_knob(k)
    }
    return {
        k
        for k in drop
        if all(
            k in c or not any(k in r.point.params for r in s.runs) for s, c in zip(sides, consts, strict=True)
        )
    }


def _base_points(
    base_g: Mapping[str, list[Run]], drop: Iterable[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, Any]]:
    """Per base point: its parameters and recipe without the treatment knobs, and its short
    text (``describe_points``); and the parameters every base point shares."""
    order = list(base_g)
    pts = [dict(base_g[k][0].point.params) for k in order]
    for k, p in zip(order, pts, strict=True):
        p["recipe"] = base_g[k][0].point.recipe
    for k in drop:
        for p in pts:
            p.pop(k, None)
    texts, common = describe_points(pts)
    return dict(zip(order, pts, strict=True)), dict(zip(order, texts, strict=True)), common


def _unpaired(
    base_name: str,
    base_g: Mapping[str, list[Run]],
    name: str,
    g: Mapping[str, list[Run]],
    text_of: Mapping[str, str],
    drop: Iterable[str],
) -> list[Unpaired]:
    """The points of the base that side ``name`` lacks, then those of that side the base
    lacks, each with why it found no partner."""
    out = [
        Unpaired(base_name, text_of[k], why_unpaired(base_g[k][0], g, drop, name))
        for k in base_g
        if k not in g
    ]
    for k in g:
        if k not in base_g:
            r = g[k][0]
            out.append(Unpaired(name, point_text(r, drop), why_unpaired(r, base_g, drop, base_name)))
    return out


def _side_rows(
    name: str,
    base_g: Mapping[str, list[Run]],
    g: Mapping[str, list[Run]],
    point_of: Mapping[str, Mapping[str, Any]],
    text_of: Mapping[str, str],
    metrics: Sequence[str] | None,
    floor: float,
    confidence: float,
    by_inv: bool = True,
) -> tuple[list[Row], list[str]]:
    """A row per chosen metric of every point both the base and side ``name`` measured, each
    judged by ``compare_samples`` (Hodges–Lehmann ratio, calibrated interval), or by invocation
    where ``by_inv`` and its runs came in invocations (``invocations.clustered``); and where
    non-finite values were left out."""
    rows: list[Row] = []
    nonfinite: list[str] = []
    paired = [k for k in base_g if k in g]
    for k in paired:
        b_runs, n_runs = base_g[k], g[k]
        names = {m.name for r in b_runs for m in r.metrics} & {m.name for r in n_runs for m in r.metrics}
        for m in select_metrics(names, metrics):
            bv, bb, b_bad = _finite(b_runs, m)
            nv, nb, n_bad = _finite(n_runs, m)
            if b_bad or n_bad:
                nonfinite.append(f"{text_of[k]} {m} ({name}): {b_bad + n_bad}")
            if not bv or not nv or min(bv + nv) < 0:
                continue
            proto = next(x for r in b_runs for x in r.metrics if x.name == m)
            c = (
                by_invocation(bv, nv, bb, nb, direction=proto.direction, floor=floor, confidence=confidence)
                if by_inv and clustered(bv, nv, bb, nb)
                else compare_samples(bv, nv, direction=proto.direction, floor=floor, confidence=confidence)
            )
            rows.append(
                Row(
                    name,
                    point_of[k],
                    text_of[k],
                    m,
                    proto.unit,
                    proto.direction,
                    c,
                    tuple(bv),
                    tuple(nv),
                    tuple(r.id for r in b_runs if r.id is not None),
                    tuple(r.id for r in n_runs if r.id is not None),
                    dropped=b_bad + n_bad,
                    base_batches=tuple(bb),
                    new_batches=tuple(nb),
                )
            )
    return rows, nonfinite


def _geomean_ratios(rows: Iterable[Row]) -> dict[str, float]:
    """Per metric, the geometric mean (``stats.geomean``) of the rows' ratios new/base, over
    the positive finite ones: one side's summary line."""
    ratios: dict[str, list[float]] = {}
    for r in rows:
        if r.cmp.ratio > 0 and r.cmp.ratio != float("inf"):
            ratios.setdefault(r.metric, []).append(r.cmp.ratio)
    return {m: geomean(v) for m, v in ratios.items()}


def _notes(rows: Sequence[Row], emulated: bool, nonfinite: Sequence[str], drop: Iterable[str]) -> list[str]:
    """What a reader must know to read the rows: no verdicts on an emulated guest, none on a
    single run, the rows judged by invocation and a marked row of one invocation a side
    (``invocations.invocation_notes``), the non-finite values left out, the knobs taken as the
    treatment."""
    notes = []
    if emulated:
        notes.append(
            "nothing is marked better or worse: a side ran in an emulated guest, "
            "whose timings say nothing about the kernels (the intervals are shown, "
            "not judged)"
        )
    if any(min(r.cmp.n_base, r.cmp.n_new) < 2 for r in rows):
        notes.append(
            "a point with one run on a side is never marked: repeat it (--repeat 3 or "
            "--repeat auto) to get an interval"
        )
    notes += invocation_notes([(r.cmp, r.base_batches, r.new_batches) for r in rows])
    if nonfinite:
        notes.append("non-finite values (NaN, inf) treated as missing, not compared: " + "; ".join(nonfinite))
    if drop:
        notes.append(
            "knobs constant within each side are the treatment, not the point: " + ", ".join(sorted(drop))
        )
    return notes
