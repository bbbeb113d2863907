"""Pure: how `compare` pairs the points of two run sets, and why a point found no partner.

A point is known by its fingerprint (recipe, parameters, bed shape, host shape; never the
kernel) less the knobs that are a side's treatment; two points of the same recipe and
parameters that do not pair differ in the shape of their bed or host."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...model import FINGERPRINT_BED_KEYS, FINGERPRINT_HOST_KEYS, Point, Run
from ...model import fingerprint as _fingerprint
from ...vocab.knob import looks_like_knob


def fact_text(v: Any) -> str:
    """A fact as a report shows it: ``-`` when it is missing or empty."""
    if v is None or v == "":
        return "-"
    return str(v)


def constant_knobs(runs: Sequence[Run]) -> dict[str, Any]:
    """Knob parameters with one value across all ``runs`` (the side's treatment)."""
    seen: dict[str, set[str]] = {}
    first: dict[str, Any] = {}
    knobs = [k for k in {k for r in runs for k in r.point.params} if looks_like_knob(k)]
    for r in runs:
        for k in knobs:
            if k in r.point.params:
                v = r.point.params[k]
                seen.setdefault(k, set()).add(repr(v))
                first.setdefault(k, v)
    out = {}
    for k, vals in seen.items():
        present = all(k in r.point.params for r in runs)
        if len(vals) == 1 and present:
            out[k] = first[k]
    return out


def pair_key(run: Run, drop: Iterable[str]) -> str:
    """The run's fingerprint with the side's constant knobs left out of its parameters."""
    d = set(drop)
    params = {k: v for k, v in run.point.params.items() if k not in d}
    return _fingerprint(Point(run.point.recipe, params), run.bed, run.env)


def by_pair_key(runs: Sequence[Run], drop: Iterable[str]) -> dict[str, list[Run]]:
    """A side's runs grouped by point (``pair_key`` without the treatment knobs ``drop``), in
    the order first seen."""
    g: dict[str, list[Run]] = {}
    for r in runs:
        g.setdefault(pair_key(r, drop), []).append(r)
    return g


def _shape_key(run: Run, drop: Iterable[str]) -> str:
    d = set(drop)
    params = {k: v for k, v in sorted(run.point.params.items()) if k not in d}
    return run.point.recipe + repr(params)


def _shape_diff(a: Run, b: Run) -> list[str]:
    """Which fingerprint facts keep two runs of the same point apart."""
    out = []
    for k in FINGERPRINT_BED_KEYS:
        if a.bed.get(k) != b.bed.get(k):
            out.append(f"bed {k} {fact_text(a.bed.get(k))} vs {fact_text(b.bed.get(k))}")
    ha, hb = a.env.get("host") or {}, b.env.get("host") or {}
    for k in FINGERPRINT_HOST_KEYS:
        if ha.get(k) != hb.get(k):
            out.append(f"host {k} {fact_text(ha.get(k))} vs {fact_text(hb.get(k))}")
    return out


def point_text(run: Run, drop: Iterable[str]) -> str:
    """The run's recipe and parameters, without the treatment knobs ``drop``."""
    d = set(drop)
    return run.point.recipe + " " + " ".join(f"{k}={v}" for k, v in run.point.params.items() if k not in d)


def why_unpaired(run: Run, other: Mapping[str, list[Run]], drop: Iterable[str], other_name: str) -> str:
    """Why a point found no partner: the other side never ran it, or ran it on a bed or
    host of another shape (fingerprints differ)."""
    shape = _shape_key(run, drop)
    for runs in other.values():
        if _shape_key(runs[0], drop) == shape:
            return f"fingerprints differ from {other_name}'s: " + "; ".join(_shape_diff(run, runs[0]))
    return f"not measured in {other_name}"
