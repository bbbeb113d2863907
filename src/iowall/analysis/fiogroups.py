"""Pure: the reporting groups of a fio run with several (stonewall, new_group), each with its own
figures (``g{groupid}.`` metrics) and its name (its first job's name in fio's JSON), so that
every place that shows such a run shows one row per group."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..model import Run

_GROUP_METRIC = re.compile(r"^g(\d+)\.(.+)$")


@dataclass(frozen=True)
class FioGroup:
    """One group: its id, its name and its metrics by un-prefixed name (``read_bw_bytes_per_s``)."""

    groupid: int
    name: str
    values: Mapping[str, float]

    @property
    def title(self) -> str:
        return f"g{self.groupid} {self.name}".strip()


def group_values(metrics: Mapping[str, float]) -> dict[int, dict[str, float]]:
    """``g{N}.name`` metrics by group id, then by un-prefixed name."""
    out: dict[int, dict[str, float]] = {}
    for name, v in metrics.items():
        m = _GROUP_METRIC.match(name)
        if m:
            out.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return out


def group_names(run: Run) -> dict[int, str]:
    """Each group's name, its first job's ``jobname`` in the run's fio.json ({} without one)."""
    art = next((a for a in run.artifacts if a.name == "fio.json"), None)
    if art is None:
        return {}
    try:
        doc = json.loads(art.body)
    except ValueError:
        return {}
    out: dict[int, str] = {}
    for j in doc.get("jobs", []) if isinstance(doc, dict) else []:
        out.setdefault(int(j.get("groupid", 0)), str(j.get("jobname", "")))
    return out


def fio_groups(run: Run, metrics: Mapping[str, float] | None = None) -> list[FioGroup]:
    """The run's groups in id order (empty for a one-group run); ``metrics`` overrides the
    run's own values (e.g. medians over repeats)."""
    vals = group_values(metrics if metrics is not None else {m.name: m.value for m in run.metrics})
    names = group_names(run)
    return [FioGroup(g, names.get(g, ""), v) for g, v in sorted(vals.items())]
