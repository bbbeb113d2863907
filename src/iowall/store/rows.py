"""From rows to Runs: the SELECT a RunFilter stands for, and the loading of a page of run
rows with their metrics, series and artifacts, one query per table per chunk of runs (never
one per run), so that loading N runs costs N, whatever the size of the store."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, func, or_, select

from ..errors import UserError
from ..model import Artifact, Metric, Point, Run, Series
from . import codec
from . import schema as t

#: What may follow a kernel selector in a release it matches: ``6.18`` matches ``6.18.44``,
#: ``6.18-rc1`` and ``6.18+``, never ``6.180``.
KERNEL_SEPARATORS = (".", "-", "+", "_", "~")

#: Run ids per IN (…) list: well under every backend's limit on bound parameters.
CHUNK = 500


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list: every field set must match; ``ids`` overrides the rest. ``kernel``
    matches by release prefix (``kernel_matches``); ``limit`` keeps the last N (0: none);
    ``statuses`` and ``fingerprints``, when given, are sets a run's value must be in."""

    ids: Sequence[int] = ()
    label: str | None = None
    recipe: str | None = None
    batch: str | None = None
    status: str | None = None
    host: str | None = None
    kernel: str | None = None
    #: the commit or build id the runs were made with (``--commit`` / ``IOWALL_COMMIT``)
    commit: str | None = None
    limit: int | None = None
    statuses: Sequence[str] = ()
    fingerprints: Sequence[str] = ()


#: The filter that selects every stored run.
EVERY_RUN = RunFilter()


def has_prefix(col: Any, prefix: str) -> Any:
    """``col`` starts with ``prefix``, case-sensitively on every backend (SQLite's LIKE
    ignores ASCII case, PostgreSQL's does not; a substring compared for equality is exact
    on both)."""
    return func.substr(col, 1, len(prefix)) == prefix


def where(q: Select[Any], flt: RunFilter) -> Select[Any]:
    """``q`` restricted to the runs ``flt`` selects in SQL (all but ``commit`` and ``limit``)."""
    if flt.ids:
        q = q.where(t.runs.c.id.in_(list(flt.ids)))
    for col in ("label", "recipe", "batch", "status", "host"):
        v = getattr(flt, col)
        if v is not None:
            q = q.where(getattr(t.runs.c, col) == v)
    if flt.statuses:
        q = q.where(t.runs.c.status.in_(list(flt.statuses)))
    if flt.fingerprints:
        q = q.where(t.runs.c.fingerprint.in_(sorted(set(flt.fingerprints))))
    if flt.kernel is not None:
        k = t.runs.c.kernel
        q = q.where(or_(k == flt.kernel, *(has_prefix(k, flt.kernel + sep) for sep in KERNEL_SEPARATORS)))
    return q


def check_limit(flt: RunFilter) -> None:
    if flt.limit is not None and flt.limit < 0:
        raise UserError(f"keep the last {flt.limit} runs? give 0 or more")


def env_commit(row: Any) -> str | None:
    """The commit recorded in a run row's environment, if any."""
    try:
        env = json.loads(row["env_json"]) if row.get("env_json") else {}
    except (TypeError, ValueError):
        return None
    c = env.get("commit") if isinstance(env, dict) else None
    return str(c) if c is not None else None


def with_docs(conn: Connection, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """``rows`` of the runs table as dicts whose env_json and bed_json hold the documents,
    read from run_docs (one query per CHUNK refs) where the row names them by ref."""
    refs = sorted({r[k] for r in rows for k in ("env_ref", "bed_ref") if r[k]})
    docs: dict[str, str] = {}
    deltas: dict[str, tuple[str, bytes]] = {}
    for _ in range(2):  # the documents, then the bases of those kept as deltas (codec)
        for i in range(0, len(refs), CHUNK):
            for doc in conn.execute(select(t.run_docs).where(t.run_docs.c.ref.in_(refs[i : i + CHUNK]))):
                if codec.delta_base(doc.encoding, doc.data) is None:
                    docs[doc.ref] = codec.unpack_doc(doc.encoding, doc.data)
                else:
                    deltas[doc.ref] = (doc.encoding, doc.data)
        refs = sorted(
            {b for e, d in deltas.values() if (b := codec.delta_base(e, d)) is not None and b not in docs}
        )
    for ref, (enc, data) in deltas.items():
        docs[ref] = codec.unpack_doc(enc, data, docs[codec.delta_base(enc, data) or ""])
    out = []
    for r in rows:
        d = dict(r)
        for ref, col in (("env_ref", "env_json"), ("bed_ref", "bed_json")):
            if d[ref]:
                d[col] = docs[d[ref]]
        out.append(d)
    return out


def chunks(xs: list[int], n: int = CHUNK) -> Iterable[list[int]]:
    for i in range(0, len(xs), n):
        yield xs[i : i + n]


def load(
    conn: Connection, rows: Sequence[Any], *, with_series: bool = False, with_artifacts: bool = False
) -> list[Run]:
    """The Runs of ``rows`` (mappings of the runs table), in their order, with metrics and,
    on demand, series and artifacts: one query per table per CHUNK runs."""
    ids = [r["id"] for r in rows]
    mets: dict[int, list[Metric]] = {i: [] for i in ids}
    sers: dict[int, list[Series]] = {i: [] for i in ids}
    arts: dict[int, list[Artifact]] = {i: [] for i in ids}
    kinds = {i: (n, u, d) for i, n, u, d in conn.execute(select(t.metric_kinds)).all()} if ids else {}
    m = t.run_metrics.c
    for chunk in chunks(ids):
        for rid, enc, data in conn.execute(
            select(m.run_id, m.encoding, m.data).where(m.run_id.in_(chunk))
        ).all():
            mets[rid] = [
                Metric(kinds[k][0], v, kinds[k][1], kinds[k][2]) for k, v in codec.unpack_metrics(enc, data)
            ]
        if with_series:
            for s in conn.execute(select(t.series).where(t.series.c.run_id.in_(chunk))):
                sers[s.run_id].extend(codec.unpack_series(s.encoding, s.data))
        if with_artifacts:
            for a in conn.execute(select(t.artifacts).where(t.artifacts.c.run_id.in_(chunk))):
                arts[a.run_id].append(artifact(a))
    for ms in mets.values():  # by code point, as SQLite does; not by PG's collation
        ms.sort(key=lambda m: m.name)
    for ss in sers.values():
        ss.sort(key=lambda s: (s.probe, s.name))
    for aa in arts.values():
        aa.sort(key=lambda a: a.name)
    return [_run(r, mets[r["id"]], sers[r["id"]], arts[r["id"]]) for r in rows]


def artifact(a: Any) -> Artifact:
    """An Artifact from a row of the artifacts table, decompressed."""
    return Artifact(a.name, a.content_type, codec.unpack_body(a.encoding, a.body, a.data))


def _run(r: Any, mets: list[Metric], sers: list[Series], arts: list[Artifact]) -> Run:
    return Run(
        id=r["id"],
        point=Point(r["recipe"], json.loads(r["point_json"])),
        label=r["label"],
        status=r["status"],
        started_at=r["started_at"],
        finished_at=r["finished_at"],
        metrics=tuple(mets),
        env=json.loads(r["env_json"]),
        bed=json.loads(r["bed_json"]),
        series=tuple(sers),
        artifacts=tuple(arts),
        batch=r["batch"],
        repeat_index=r["repeat_index"],
        error=r["error"],
        notes=tuple(json.loads(r["notes_json"])),
        uuid=r["uuid"],
    )
