"""Pure: the "Why" section of a report — the explain rules applied to the median run of each
point of a batch, with the ceilings and context found among the batch's other runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..model import MEASURED_STATUSES, Run, primary_metric
from .context import explain_context, representative, skipped_probes
from .explain import explain, sentences


def lock_rows(run: Run) -> list[Any]:
    """The locks probe's table, when the run carries it (``lock_contention.json``)."""
    for a in run.artifacts:
        if a.name == "lock_contention.json":
            try:
                doc = json.loads(a.body)
            except json.JSONDecodeError:
                return []
            rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
            return list(rows) if isinstance(rows, list) else []
    return []


def why_run(run: Run, batch: Sequence[Run]) -> dict[str, Any]:
    """The verdicts on one run, as reports keep them."""
    verdicts = explain({m.name: m.value for m in run.metrics}, explain_context(run, batch),
                       lock_rows=lock_rows(run))
    return {"run": run.id, "point": run.point.describe(), "sentences": sentences(verdicts),
            "fired": bool(verdicts),
            "verdicts": [{"rule": v.rule, "sentence": v.sentence, "evidence": v.evidence}
                         for v in verdicts],
            "skipped_probes": skipped_probes(run)}


def why_points(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One entry per point of ``runs`` (in first-run order), explaining its median run by
    its primary metric; points whose runs carry no probe data are left out."""
    good = [r for r in runs if r.status in MEASURED_STATUSES]
    groups: dict[str, list[Run]] = {}
    for r in good:
        groups.setdefault(r.point.key(), []).append(r)
    out = []
    for group in groups.values():
        if not any(r.series for r in group) and not skipped_probes(group[0]):
            continue  # not probed (e.g. a memory-copy ceiling)
        metric = primary_metric(group[0])
        run = representative(group, metric.name) if metric else group[len(group) // 2]
        if run is not None:
            out.append(why_run(run, good))
    return out
