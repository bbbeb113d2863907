"""A run as the rows the store keeps, checked and compressed without a database: what a
single insert (``Store.add_runs``) and a batched one (``store.ingest``) share. The parts that
depend on what is stored already (the environment's delta base, metric kind ids) are left to
the caller, inside its transaction."""

from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..model import Run
from . import codec
from . import schema as t
from .row_checks import METRICS, check_row, check_series

#: A metric kind: (name, unit, direction).
Kind = tuple[str, str, str]


@dataclass
class Packed:
    """One run's rows: ``row`` for ``runs`` (its env_json and bed_json still the text),
    metrics as (kind, value), artifacts and series packed (their run_id set on insert).

    A run copied from another store carries what it kept there (``store.copy``): ``docs``,
    its environment and bed documents as stored (by ref, a delta's base included; the row
    names them by env_ref and bed_ref), and ``kept_metrics``, its metrics row's kind ids
    there and (encoding, data), used as they are when the kinds have the same ids here."""

    row: dict[str, Any]
    metrics: list[tuple[Kind, float]]
    artifacts: list[dict[str, Any]]
    series: list[dict[str, Any]]
    docs: dict[str, tuple[str, bytes]] | None = None
    kept_metrics: tuple[tuple[int, ...], str, bytes] | None = None


def pack_run(run: Run, checked: set[tuple[str, ...]] | None = None) -> Packed:
    """``run`` as rows, every value checked against what every backend holds (UserError
    naming the run otherwise). ``checked``: metric kinds and series names known to fit,
    skipped and added to (a batch of runs shares a few hundred: each checked once)."""
    host = run.env.get("host", {})
    row: dict[str, Any] = dict(
        uuid=run.uuid or str(uuidlib.uuid4()),
        batch=run.batch,
        recipe=run.point.recipe,
        label=run.label,
        status=run.status,
        point_key=run.point.key(),
        point_json=json.dumps(dict(run.point.params), sort_keys=True),
        fingerprint=run.fingerprint(),
        repeat_index=run.repeat_index,
        started_at=run.started_at,
        finished_at=run.finished_at,
        host=str(host.get("hostname", "")) if isinstance(host, dict) else "",
        kernel=str(run.env.get("kernel", "")),
        env_json=json.dumps(run.env, sort_keys=True, default=str),
        bed_json=json.dumps(run.bed, sort_keys=True, default=str),
        error=run.error,
        notes_json=json.dumps(list(run.notes)),
    )
    what = f"run {row['uuid']}"
    check_row(t.runs, row, what)
    names = [m.name for m in run.metrics]
    if len(set(names)) != len(names):
        dup = next(n for i, n in enumerate(names) if n in names[:i])
        raise UserError(f"{what}: metric {dup!r} appears twice")
    seen = checked if checked is not None else set()
    # + 0.0: -0.0 becomes 0.0, as 0003's rows kept it (SQLite's REAL dropped the sign)
    mets: list[tuple[Kind, float]] = [
        ((m.name, m.unit, m.direction), float(m.value) + 0.0) for m in run.metrics
    ]
    for kind, _ in mets:
        if ("metric", *kind) not in seen:
            check_row(METRICS, dict(zip(("name", "unit", "direction"), kind, strict=True)), what)
            seen.add(("metric", *kind))
    arts = [
        {"run_id": 0, "name": a.name, "content_type": a.content_type, "body": a.body} for a in run.artifacts
    ]
    for a in arts:
        check_row(t.artifacts, a, what)
    for s in run.series:
        if ("series", s.probe, s.name, s.unit) not in seen:
            check_series(s, what)
            seen.add(("series", s.probe, s.name, s.unit))
    for a, art in zip(arts, run.artifacts, strict=True):  # kept compressed (codec)
        a["encoding"], a["body"], a["data"] = codec.pack_body(art.body)
    sers = []
    if run.series:
        enc, data = codec.pack_series(run.series)
        sers.append({"run_id": 0, "encoding": enc, "data": data})
    return Packed(row, mets, arts, sers)


def metrics_row(run_id: int, p: Packed, kinds: dict[Kind, int]) -> dict[str, Any]:
    """The run_metrics row of a run's metrics, by the kinds' ids (the row it kept in another
    store when the ids are those it had there: the same bytes, not compressed again)."""
    ids = [kinds[k] for k, _ in p.metrics]
    if p.kept_metrics is not None and tuple(ids) == p.kept_metrics[0]:
        return {"run_id": run_id, "encoding": p.kept_metrics[1], "data": p.kept_metrics[2]}
    enc, data = codec.pack_metrics(ids, [v for _, v in p.metrics])
    return {"run_id": run_id, "encoding": enc, "data": data}
