"""A run as the rows the store keeps, compressed and checked without a database: what a
single insert (``Store.add_runs``) and a batched one (``store.ingest``) share. The parts that
depend on what is stored already (the environment's delta base, metric kind ids) are left to
the caller, inside its transaction."""

from __future__ import annotations

import json
import operator
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Point, Run, fingerprint
from . import codec
from .row_checks import RUNS, check_parts, check_row

#: A metric kind: (name, unit, direction).
Kind = tuple[str, str, str]


class KeptMetrics(Sequence[tuple[Kind, float]]):
    """A run's metrics as a packed bundle carries them: its metrics row (kind ids, encoding,
    data) and the bundle's kinds by id, one mapping its runs share. The (kind, value) pairs
    are made only when asked: writing uses the row as it came when the store numbers the
    kinds alike, and a worker sends the row and the shared kinds, not 137 pairs a run
    (three fifths of what sending a run cost)."""

    def __init__(self, kinds: Mapping[int, Kind], kept: tuple[tuple[int, ...], str, bytes]) -> None:
        self.by_id = kinds
        self.kept = kept
        self._pairs: list[tuple[Kind, float]] | None = None

    def kinds(self) -> list[Kind]:
        """The kinds, in the row's order."""
        return list(map(self.by_id.__getitem__, self.kept[0]))

    def _all(self) -> list[tuple[Kind, float]]:
        if self._pairs is None:
            _, values = codec.metrics_columns(self.kept[1], self.kept[2])
            self._pairs = list(zip(self.kinds(), values, strict=True))
        return self._pairs

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[tuple[Kind, float]]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self.kept[0])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __reduce__(self) -> tuple[Any, ...]:  # the pairs, if made, are not sent
        return (KeptMetrics, (self.by_id, self.kept))


def metric_kinds(metrics: Sequence[tuple[Kind, float]]) -> Iterable[Kind]:
    """The kinds of a run's metrics, without making a carried row's pairs."""
    return metrics.kinds() if isinstance(metrics, KeptMetrics) else map(_first, metrics)


@dataclass
class Packed:
    """One run's rows: ``row`` for ``runs`` (its env_json and bed_json still the text),
    metrics as (kind, value), artifacts and series packed (their run_id set on insert).

    A run copied from another store carries what it kept there (``store.copy``): ``docs``,
    its environment and bed documents as stored (by ref, a delta's base included; the row
    names them by env_ref and bed_ref), and ``kept_metrics``, its metrics row's kind ids
    there and (encoding, data), used as they are when the kinds have the same ids here."""

    row: dict[str, Any]
    metrics: Sequence[tuple[Kind, float]]
    artifacts: list[dict[str, Any]]
    series: list[dict[str, Any]]
    docs: dict[str, tuple[str, bytes]] | None = None
    kept_metrics: tuple[tuple[int, ...], str, bytes] | None = None

    @property
    def uuid(self) -> str:
        """The run's uuid (what ``store.ingest`` skips a run by)."""
        return str(self.row["uuid"])


def pack_run(run: Run, checked: set[tuple[str, ...]] | None = None) -> Packed:
    """``run`` as rows, in the order every run is packed in (a bundle's run too, in
    bundle/packed.py): its blobs compressed (store/codec), its ``runs`` row made and checked
    (``run_row``), then its parts checked against what every backend holds (``check_parts``);
    UserError naming the run. ``checked``: metric kinds, artifact and series names known to
    fit, skipped and added to (a batch of runs shares a few hundred: each checked once)."""
    artifacts, series = codec.pack_blobs(run.artifacts, run.series)
    row = run_row(
        run.uuid or str(uuidlib.uuid4()),
        run.point,
        (run.label, run.status, run.batch, run.error),
        run.repeat_index,
        (run.started_at, run.finished_at),
        run.env,
        run.bed,
        run.notes,
        (json.dumps(run.env, sort_keys=True, default=str), json.dumps(run.bed, sort_keys=True, default=str)),
    )
    # + 0.0: -0.0 becomes 0.0, as 0003's rows kept it (SQLite's REAL dropped the sign)
    metrics = [((m.name, m.unit, m.direction), float(m.value) + 0.0) for m in run.metrics]
    check_parts(
        f"run {row['uuid']}",
        [m.name for m in run.metrics],
        [kind for kind, _ in metrics],
        [(a.name, a.content_type, a.body) for a in run.artifacts],
        [(s.probe, s.name, s.unit) for s in run.series],
        checked if checked is not None else set(),
    )
    return Packed(row, metrics, artifacts, series)


def run_row(
    uuid: str,
    point: Point,
    texts: tuple[str, str, str, str],
    repeat_index: int,
    times: tuple[float, float],
    env: Mapping[str, Any],
    bed: Mapping[str, Any],
    notes: Sequence[str],
    docs: tuple[str, str],
) -> dict[str, Any]:
    """The ``runs`` row of a run, checked (``check_row``): ``texts`` its label, status, batch
    and error, ``docs`` the env_json and bed_json columns (empty when the documents are
    kept by ref: a packed bundle's run)."""
    host = env.get("host", {})
    label, status, batch, error = texts
    row: dict[str, Any] = dict(
        uuid=uuid,
        batch=batch,
        recipe=point.recipe,
        label=label,
        status=status,
        point_key=point.key(),
        point_json=json.dumps(dict(point.params), sort_keys=True),
        fingerprint=fingerprint(point, bed, env),
        repeat_index=repeat_index,
        started_at=times[0],
        finished_at=times[1],
        host=str(host.get("hostname", "")) if isinstance(host, dict) else "",
        kernel=str(env.get("kernel", "")),
        env_json=docs[0],
        bed_json=docs[1],
        error=error,
        notes_json=json.dumps(list(notes)),
    )
    check_row(RUNS, row, f"run {uuid}")
    return row


_first = operator.itemgetter(0)


def metrics_row(run_id: int, p: Packed, kinds: dict[Kind, int]) -> dict[str, Any]:
    """The run_metrics row of a run's metrics, by the kinds' ids (the row it kept in another
    store when the ids are those it had there: the same bytes, not compressed again)."""
    ids = tuple(map(kinds.__getitem__, metric_kinds(p.metrics)))
    if p.kept_metrics is not None and ids == p.kept_metrics[0]:
        return {"run_id": run_id, "encoding": p.kept_metrics[1], "data": p.kept_metrics[2]}
    enc, data = codec.pack_metrics(ids, [v for _, v in p.metrics])
    return {"run_id": run_id, "encoding": enc, "data": data}
