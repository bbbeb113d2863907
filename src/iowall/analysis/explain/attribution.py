"""Pure: where a point's CPU time went, read from its ``tasks`` metrics (CPU time per class of
thread) and ``profile`` metrics (share of samples per kernel path), turned into the ranked
lists and phrases that ``explain`` puts into its sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...vocab.cpuclasses import CLASSES, TITLES, UNATTRIBUTED
from .kernel_paths import LABELS, PATHS, Attribution

#: Classes below this share of the busy CPU time are left out of sentences.
MIN_SHARE = 0.03


def _share(metrics: Mapping[str, Any], key: str) -> float | None:
    v = metrics.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def classes(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every class with its CPU-seconds and share of the busy CPU time, largest first, then
    ``unattributed`` (always last, never hidden); empty without the ``tasks`` probe."""
    named: list[tuple[float, dict[str, Any]]] = []
    rest: list[dict[str, Any]] = []
    for c in (*CLASSES, UNATTRIBUTED):
        share = _share(metrics, f"tasks_{c}_share")
        if share is None:
            continue
        row = {
            "class": c,
            "title": TITLES.get(c, c),
            "cpu_s": _share(metrics, f"tasks_{c}_cpu_s") or 0.0,
            "share": share,
        }
        if c == UNATTRIBUTED:
            rest.append(row)
        else:
            named.append((share, row))
    return [row for _, row in sorted(named, key=lambda x: -x[0])] + rest


def consumers_text(metrics: Mapping[str, Any], top: int = 4) -> str | None:
    """``52% workload threads (fio, engine), 21% loop workers of the bed; 3% unattributed``
    (shares of the busy CPU time), or None without the ``tasks`` probe."""
    cs = classes(metrics)
    if not cs:
        return None
    named = [c for c in cs if c["class"] != UNATTRIBUTED and c["share"] >= MIN_SHARE][:top]
    parts = [f"{100 * c['share']:.0f}% {c['title']}" for c in named]
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


def top_paths(att: Attribution, top: int = 6) -> list[dict[str, Any]]:
    """The heaviest kernel paths of a profile with their heaviest functions, for JSON."""
    return [
        {
            "path": p.path,
            "label": p.label,
            "samples": p.samples,
            "share": p.share,
            "top_functions": [{"function": f.name, "share": f.share} for f in p.top_functions],
        }
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
