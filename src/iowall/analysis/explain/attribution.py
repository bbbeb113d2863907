"""Pure: where a point's CPU time went, read from its ``tasks`` metrics (CPU time per class of
thread) and ``profile`` metrics (share of samples per kernel path), turned into the ranked
lists and phrases that ``explain`` puts into its sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...vocab.cpuclasses import CLASSES, TITLES, UNATTRIBUTED
from .kernel_paths import LABELS, PATHS, Attribution

#: Classes below this share of the busy CPU time are left out of sentences.
MIN_SHARE = 0.03


@dataclass(frozen=True)
class ClassShare:
    """A class of thread (``vocab.cpuclasses``) with its CPU-seconds and share of the busy
    CPU time (the ``tasks`` probe)."""

    cls: str
    title: str
    cpu_s: float
    share: float


@dataclass(frozen=True)
class FunctionShare:
    """A kernel function and its share of its path's samples."""

    function: str
    share: float


@dataclass(frozen=True)
class PathShare:
    """A kernel path of the CPU profile (``kernel_paths``): its samples, share of all
    sampled CPU time and heaviest functions."""

    path: str
    label: str
    samples: int
    share: float
    top_functions: tuple[FunctionShare, ...] = ()


def _share(metrics: Mapping[str, Any], key: str) -> float | None:
    v = metrics.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def classes(metrics: Mapping[str, Any]) -> list[ClassShare]:
    """Every class with its CPU-seconds and share of the busy CPU time, largest first, then
    ``unattributed`` (always last, never hidden); empty without the ``tasks`` probe."""
    named: list[ClassShare] = []
    rest: list[ClassShare] = []
    for c in (*CLASSES, UNATTRIBUTED):
        share = _share(metrics, f"tasks_{c}_share")
        if share is None:
            continue
        row = ClassShare(c, TITLES.get(c, c), _share(metrics, f"tasks_{c}_cpu_s") or 0.0, share)
        (rest if c == UNATTRIBUTED else named).append(row)
    return sorted(named, key=lambda x: -x.share) + rest


def consumers_text(metrics: Mapping[str, Any], top: int = 4) -> str | None:
    """``52% workload threads (fio, engine), 21% loop workers of the bed; 3% unattributed``
    (shares of the busy CPU time), or None without the ``tasks`` probe."""
    cs = classes(metrics)
    if not cs:
        return None
    named = [c for c in cs if c.cls != UNATTRIBUTED and c.share >= MIN_SHARE][:top]
    parts = [f"{100 * c.share:.0f}% {c.title}" for c in named]
    un = _share(metrics, f"tasks_{UNATTRIBUTED}_share") or 0.0
    return ", ".join(parts or ["no class above 3%"]) + f"; {100 * un:.0f}% unattributed"


def paths(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Kernel paths by share of all sampled CPU time, largest first, idle left out
    (``profile_<path>_share``, from the ``profile`` probe)."""
    out = []
    for p in PATHS:
        share = _share(metrics, f"profile_{p}_share")
        if share is not None and p != "idle":
            out.append({"path": p, "label": LABELS[p], "share": share})
    return sorted(out, key=lambda x: -x["share"])


def paths_text(metrics: Mapping[str, Any], top: int = 4) -> str | None:
    """``38% copy to/from user, 21% filesystem …, 17% loop worker (the bed's own cost)``
    (shares of all CPU time sampled), or None without the ``profile`` probe."""
    ps = [p for p in paths(metrics) if p["share"] >= MIN_SHARE][:top]
    if not ps:
        return None
    return ", ".join(f"{100 * p['share']:.0f}% {p['label']}" for p in ps)


def top_paths(att: Attribution, top: int = 6) -> list[PathShare]:
    """The heaviest kernel paths of a profile with their heaviest functions."""
    return [
        PathShare(
            p.path,
            p.label,
            p.samples,
            p.share,
            tuple(FunctionShare(f.name, f.share) for f in p.top_functions),
        )
        for p in att.ranked()[:top]
    ]


def lock_callers(att: Attribution, top: int = 3) -> str | None:
    """``path_openat -> rwsem_down_write_slowpath 12%, …`` from the profile's lock path."""
    lock = next((p for p in att.paths if p.path == "lock"), None)
    if lock is None or not lock.samples:
        return None
    return ", ".join(f"{f.name} {100 * f.share:.0f}%" for f in lock.top_functions[:top])


def top_functions(att: Attribution, top: int = 2) -> str | None:
    """``copy_folio_from_iter_atomic 41%, _copy_to_iter 9%``: the heaviest functions of the
    heaviest path (idle left out)."""
    ranked = att.ranked()
    if not ranked:
        return None
    fs = [f for f in ranked[0].top_functions[:top] if f.share >= 0.01]
    return ", ".join(f"{f.name} {100 * f.share:.0f}%" for f in fs) or None
