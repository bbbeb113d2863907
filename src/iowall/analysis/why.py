"""Pure: the "Why" section of a report — the explain rules applied to the median run of each
point of a batch, with the ceilings and context found among the batch's other runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..model import MEASURED_STATUSES, PROFILE_ARTIFACT, Run, primary_metric
from .attribution import classes, lock_callers, top_functions, top_paths
from .context import explain_context, not_applicable, representative, skipped_probes
from .explain import explain, near_misses, sentences
from .paths import Attribution, attribute, decode_folded, path_metrics


def _artifact_json(run: Run, name: str) -> Any:
    for a in run.artifacts:
        if a.name == name:
            try:
                return json.loads(a.body)
            except json.JSONDecodeError:
                return None
    return None


def lock_rows(run: Run) -> list[Any]:
    """The locks probe's table, when the run carries it (``lock_contention.json``)."""
    doc = _artifact_json(run, "lock_contention.json")
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    return list(rows) if isinstance(rows, list) else []


def tasks_top(run: Run) -> list[Any]:
    """The tasks probe's busiest threads, when the run carries them (``tasks_top.json``)."""
    doc = _artifact_json(run, "tasks_top.json")
    return list(doc) if isinstance(doc, list) else []


def profile(run: Run) -> Attribution | None:
    """The kernel-path attribution of the run's CPU profile, when it carries one."""
    for a in run.artifacts:
        if a.name == PROFILE_ARTIFACT:
            try:
                stacks = decode_folded(a.body)
            except (ValueError, OSError, EOFError):
                return None
            return attribute(stacks) if stacks else None
    return None


def why_run(run: Run, batch: Sequence[Run]) -> dict[str, Any]:
    """The verdicts on one run, as reports keep them: the rules that fired, the nearest miss
    of each rule that did not, and where the CPU time went (the ``tasks`` probe)."""
    base = {"run": run.id, "point": run.point.describe(), "skipped_probes": skipped_probes(run)}
    na = not_applicable(run)
    if na is not None:
        return {**base, "sentences": [na], "fired": False, "applicable": False,
                "verdicts": [], "near_misses": [], "attribution": [], "paths": []}
    metrics = {m.name: m.value for m in run.metrics}
    ctx = explain_context(run, batch)
    att = profile(run)
    if att is not None and not any(k.startswith("profile_") and k.endswith("_share")
                                   for k in metrics):
        metrics.update({m.name: m.value for m in path_metrics(att)})  # older runs
    verdicts = explain(metrics, ctx, lock_rows=lock_rows(run), tasks_top=tasks_top(run),
                       lock_callers=lock_callers(att) if att is not None else None,
                       top_functions=top_functions(att) if att is not None else None)
    return {**base, "sentences": sentences(verdicts), "fired": bool(verdicts),
            "applicable": True,
            "verdicts": [{"rule": v.rule, "sentence": v.sentence, "evidence": v.evidence}
                         for v in verdicts],
            "near_misses": near_misses(metrics, ctx, [v.rule for v in verdicts]),
            "attribution": classes(metrics),
            "paths": top_paths(att) if att is not None else []}


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
