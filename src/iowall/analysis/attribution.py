"""Pure: where a point's CPU time went, read from its ``tasks`` metrics (CPU time per class of
thread) and ``profile`` metrics (share of samples per kernel path), turned into the ranked
lists and phrases that ``explain`` puts into its sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..cpuclasses import CLASSES, TITLES, UNATTRIBUTED

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
        row = {"class": c, "title": TITLES.get(c, c),
               "cpu_s": _share(metrics, f"tasks_{c}_cpu_s") or 0.0, "share": share}
        if c == UNATTRIBUTED:
            rest.append(row)
        else:
            named.append((share, row))
    return [row for _, row in sorted(named, key=lambda x: -x[0])] + rest


def attributed_share(metrics: Mapping[str, Any]) -> float | None:
    """The share of the busy CPU time that named classes account for."""
    un = _share(metrics, f"tasks_{UNATTRIBUTED}_share")
    return None if un is None else max(0.0, 1.0 - un)


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
    """Kernel paths by share of the profile's samples, largest first (``profile`` probe)."""
    out = []
    for k in metrics:
        if k.startswith("profile_path_") and k.endswith("_share"):
            share = _share(metrics, k)
            if share is not None:
                out.append({"path": k.removeprefix("profile_path_").removesuffix("_share"),
                            "share": share})
    return sorted(out, key=lambda x: -x["share"])
