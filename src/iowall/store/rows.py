"""From rows to Runs: the WHERE a RunFilter stands for (SQL text, ``store.reader``), and the
loading of a page of run rows with their metrics, series and artifacts, one query per table
per chunk of runs (never one per run), so that loading N runs costs N, whatever the size of
the store."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..machine.dirs import redact_url
from ..model import Artifact, Metric, Point, Run, Series
from ..vocab.errors import UserError
from . import codec
from .gcpause import gc_paused
from .reader import Reader, connect_pg, connect_sqlite, in_list, sqlite_file

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


def kernel_matches(release: str, selector: str) -> bool:
    """Whether ``release`` (``uname -r``) is ``selector`` or starts with it followed by a
    separator (KERNEL_SEPARATORS)."""
    return release == selector or any(release.startswith(selector + sep) for sep in KERNEL_SEPARATORS)


def code_point_column(col: str, dialect: str) -> str:
    """``col`` compared by code point on both backends: SQLite compares text that way; on
    PostgreSQL a database's collation (ICU en-US in most) would not, so ``COLLATE "C"``
    (what the index on ``kernel COLLATE "C"`` of migration 0005 serves)."""
    return f'{col} COLLATE "C"' if dialect == "postgresql" else col


def where(flt: RunFilter, dialect: str, params: dict[str, Any]) -> str:
    """`` WHERE …`` restricting ``runs`` to what ``flt`` selects in SQL (all but ``commit``
    and ``limit``; ``''`` when nothing is), its values added to ``params``. A kernel
    selector is one range of the kernel's index, never a scan: ``6.6`` reads the kernels
    from ``'6.6'`` up to ``'6.6\x7f'`` (every separator is ASCII), then keeps ``6.6`` itself
    and those whose next character is a separator; compared by code point, so
    case-sensitively, on both backends."""
    terms = []
    if flt.ids:
        terms.append("id IN " + in_list("id", flt.ids, params))
    for col in ("label", "recipe", "batch", "status", "host"):
        v = getattr(flt, col)
        if v is not None:
            params[col] = v
            terms.append(f"{col} = :{col}")
    if flt.statuses:
        terms.append("status IN " + in_list("st", flt.statuses, params))
    if flt.fingerprints:
        terms.append("fingerprint IN " + in_list("fp", sorted(set(flt.fingerprints)), params))
    if flt.kernel is not None:
        k = code_point_column("kernel", dialect)
        params.update(k=flt.kernel, k_hi=flt.kernel + "\x7f", k_at=len(flt.kernel) + 1)
        seps = in_list("sep", KERNEL_SEPARATORS, params)
        terms.append(f"{k} >= :k AND {k} < :k_hi AND (kernel = :k OR substr(kernel, :k_at, 1) IN {seps})")
    return " WHERE " + " AND ".join(terms) if terms else ""


def and_where(where_sql: str, term: str) -> str:
    """``where_sql`` (from ``where``) with one more term."""
    return f"{where_sql} AND {term}" if where_sql else f" WHERE {term}"


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


def kept_docs(db: Reader, rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, bytes]]:
    """The run_docs rows (ref -> (encoding, data)) of the documents ``rows`` name, and of the
    documents those kept as deltas are compressed against (codec: one level), one query per
    CHUNK refs. Each ref is asked for once: a base the store lacks is not asked again."""
    refs = sorted({r[k] for r in rows for k in ("env_ref", "bed_ref") if r[k]})
    kept: dict[str, tuple[str, bytes]] = {}
    asked: set[str] = set()
    while refs:
        asked.update(refs)
        for i in range(0, len(refs), CHUNK):
            p: dict[str, Any] = {}
            q = "SELECT ref, encoding, data FROM run_docs WHERE " + db.where_in(
                "ref", "r", refs[i : i + CHUNK], p
            )
            kept.update({ref: (enc, bytes(data)) for ref, enc, data in db.all(q, p)})
        refs = sorted({b for e, d in kept.values() if (b := codec.delta_base(e, d)) and b not in asked})
    return kept


def doc_texts(kept: Mapping[str, tuple[str, bytes]]) -> dict[str, str]:
    """The text of each document of ``kept`` (``kept_docs``), each base decoded once."""
    texts = {ref: codec.unpack_doc(e, d) for ref, (e, d) in kept.items() if codec.delta_base(e, d) is None}
    for ref, (e, d) in kept.items():
        if ref not in texts:
            texts[ref] = codec.unpack_doc(e, d, texts[codec.delta_base(e, d) or ""])
    return texts


def with_docs(db: Reader, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` of the runs table as dicts whose env_json and bed_json hold the documents,
    read from run_docs where the row names them by ref."""
    docs = doc_texts(kept_docs(db, rows))
    out = []
    for r in rows:
        d = dict(r)
        for ref, col in (("env_ref", "env_json"), ("bed_ref", "bed_json")):
            if d[ref]:
                d[col] = docs[d[ref]]
        out.append(d)
    return out


def uuids_in(db: Reader, uuids: Sequence[str]) -> set[str]:
    """Which of ``uuids`` the store holds, CHUNK a query."""
    found: set[str] = set()
    for i in range(0, len(uuids), CHUNK):
        p: dict[str, Any] = {}
        of = db.where_in("uuid", "u", uuids[i : i + CHUNK], p)
        found.update(u for (u,) in db.all("SELECT uuid FROM runs WHERE " + of, p))
    return found


def stored_uuids(url: str, uuids: Sequence[str], *, strict: bool = False) -> set[str]:
    """Which of ``uuids`` the store at ``url`` holds, read on a connection of this process's
    own (an import's worker asks before it packs a plain bundle's runs); none when there is
    no store there yet (this creates nothing). A store that cannot be read gives none too (a
    worker's shortcut: the import that follows says why), or with ``strict`` a UserError
    saying why."""
    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        return set()
    con: Any = None
    try:
        con = connect_sqlite(path) if path is not None else connect_pg(url)
        return uuids_in(Reader(con, "sqlite" if path is not None else "postgresql"), uuids)
    except Exception as e:  # noqa: BLE001 - the driver's errors, whichever the driver
        new = getattr(e, "sqlstate", None) == "42P01" or "no such table" in str(e)  # no tables yet
        if strict and not new:
            raise UserError(f"cannot read {redact_url(url)}: {str(e).strip().splitlines()[0]}") from None
        return set()
    finally:
        if con is not None:
            con.close()


def chunks(xs: list[int], n: int = CHUNK) -> Iterable[list[int]]:
    for i in range(0, len(xs), n):
        yield xs[i : i + n]


#: Which metrics to load, by name (None: all of them).
MetricNames = Callable[[str], bool] | None


def load(
    db: Reader,
    rows: Sequence[Mapping[str, Any]],
    *,
    with_series: bool = False,
    with_artifacts: bool = False,
    metrics: MetricNames = None,
) -> list[Run]:
    """The Runs of ``rows`` (mappings of the runs table), in their order, with metrics (only
    those ``metrics`` keeps, when given: a page that compares two of a run's 136 need not
    build the rest) and, on demand, series and artifacts: one query per table per CHUNK runs."""
    with gc_paused():  # 136 metrics a run: no cycles among them (store.gcpause)
        return _load(db, rows, with_series, with_artifacts, metrics)


def _load(
    db: Reader,
    rows: Sequence[Mapping[str, Any]],
    with_series: bool,
    with_artifacts: bool,
    metrics: MetricNames,
) -> list[Run]:
    ids = [r["id"] for r in rows]
    mets: dict[int, list[Metric]] = {i: [] for i in ids}
    sers: dict[int, list[Series]] = {i: [] for i in ids}
    arts: dict[int, list[Artifact]] = {i: [] for i in ids}
    kinds = {i: (n, u, d) for i, n, u, d in db.all(KINDS) if metrics is None or metrics(n)} if ids else {}
    for chunk in chunks(ids):
        p: dict[str, Any] = {}
        of_chunk = " WHERE " + db.where_in("run_id", "id", chunk, p)
        for rid, enc, data in db.all("SELECT run_id, encoding, data FROM run_metrics" + of_chunk, p):
            # one lookup of each kind, unpacked (a third less time than three lookups and
            # three indexings: 136 metrics a run, most of loading a page of runs)
            held, values = codec.metrics_columns(enc, bytes(data))
            mets[rid] = [
                Metric(kind[0], v, kind[1], kind[2])
                for k, v in zip(held, values, strict=True)
                if (kind := kinds.get(k)) is not None
            ]
        if with_series:
            for rid, enc, data in db.all("SELECT run_id, encoding, data FROM run_series" + of_chunk, p):
                sers[rid].extend(codec.unpack_series(enc, bytes(data)))
        if with_artifacts:
            for a in db.maps(ARTIFACTS + of_chunk, p):
                arts[a["run_id"]].append(artifact(a))
    for ms in mets.values():  # by code point, as SQLite does; not by PG's collation
        ms.sort(key=_NAME)
    for ss in sers.values():
        ss.sort(key=lambda s: (s.probe, s.name))
    for aa in arts.values():
        aa.sort(key=lambda a: a.name)
    memo: dict[str, Any] = {}
    return [_run(r, mets[r["id"]], sers[r["id"]], arts[r["id"]], memo) for r in rows]


_NAME = attrgetter("name")

#: Every metric kind: id, name, unit, direction.
KINDS = "SELECT id, name, unit, direction FROM metric_kinds"
#: The artifacts table's columns, as ``artifact`` reads them.
ARTIFACTS = "SELECT run_id, name, content_type, body, encoding, data FROM artifacts"


def artifact(a: Mapping[str, Any]) -> Artifact:
    """An Artifact from a row of the artifacts table (ARTIFACTS), decompressed."""
    data = a["data"]
    return Artifact(
        a["name"],
        a["content_type"],
        codec.unpack_body(a["encoding"], a["body"], None if data is None else bytes(data)),
    )


def _run(r: Any, mets: list[Metric], sers: list[Series], arts: list[Artifact], memo: dict[str, Any]) -> Run:
    return Run(
        id=r["id"],
        point=Point(r["recipe"], _shared(r["point_json"], memo)),
        label=r["label"],
        status=r["status"],
        started_at=r["started_at"],
        finished_at=r["finished_at"],
        metrics=tuple(mets),
        env=json.loads(r["env_json"]),
        bed=_shared(r["bed_json"], memo),
        series=tuple(sers),
        artifacts=tuple(arts),
        batch=r["batch"],
        repeat_index=r["repeat_index"],
        error=r["error"],
        notes=tuple(_shared(r["notes_json"], memo)),
        uuid=r["uuid"],
    )


def _shared(text: str, memo: dict[str, Any]) -> Any:
    """``text`` decoded, once for the runs of a load that hold the same (their bed, their
    point, their notes: a side of 500 runs holds a few): the runs share the one object, which
    nothing changes (a Run's documents are read, never written)."""
    got = memo.get(text)
    if got is None:
        got = memo[text] = json.loads(text)
    return got
