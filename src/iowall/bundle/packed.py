"""Packed bundles (schema_version 3): the runs of a bundle as the store keeps them.

A packed run carries v2's fields, but its environment and bed as compressed documents named
by ref (an environment as a delta against an earlier one of its host), its metrics as one
row of kind ids and float64 values, its series and artifacts compressed: the rows
``store.ingest`` writes, so that an import checks them and writes them as they are instead
of validating every number of a plain bundle and compressing it all again (1.8x the rate
of a call of 2,000 runs, docs/benchmarks.md "Import rate"). A run carries only the
documents and metric kinds that no run before it in the bundle carried. Everything read is
checked as a plain bundle is: each document's ref is that of its text, every blob reads
back, names fit the store's columns.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import itertools
import json
import math
import operator
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_core import from_json

from ..model import Artifact, Metric, Point, Run, Series, run_uuid
from ..store import codec
from ..store.packing import KeptMetrics, Kind, Packed, pack_run, run_row
from ..store.row_checks import ARTIFACTS, METRICS, check_row, check_series
from ..vocab.errors import UserError
from .models import BundleV3, RunBase, RunV3

Doc = dict[str, Any]
#: The most one blob of a packed run may inflate to: a plain bundle's memory is bounded by
#: its size, a packed one's by this (a few kilobytes is what runs hold; fio's JSON of a
#: long run with many jobs a few megabytes).
INFLATE_MAX = 256 << 20


@dataclass
class Carried:
    """A packed bundle's run, checked: its rows (``packed``, what an import writes) and what
    reading it as a ``Run`` needs besides (``run``)."""

    model: RunV3
    packed: Packed
    env: dict[str, Any]
    bed: dict[str, Any]

    @property
    def uuid(self) -> str:
        return self.model.uuid

    def run(self) -> Run:
        """The run, decoded (what ``read_bundle`` gives for a plain bundle's run)."""
        r, p = self.model, self.packed
        return run_of(
            r,
            self.env,
            self.bed,
            tuple(Metric(n, v, u, "lower" if d == "lower" else "higher") for (n, u, d), v in p.metrics),
            tuple(
                Artifact(a["name"], a["content_type"], codec.unpack_body(a["encoding"], a["body"], a["data"]))
                for a in p.artifacts
            ),
            tuple(s for row in p.series for s in codec.unpack_series(row["encoding"], row["data"])),
        )


def run_of(
    r: RunBase,
    env: dict[str, Any],
    bed: dict[str, Any],
    metrics: tuple[Metric, ...],
    artifacts: tuple[Artifact, ...],
    series: tuple[Series, ...],
) -> Run:
    """A bundle's run (plain or packed) as a ``Run``, from its fields and its parts decoded."""
    return Run(
        point=Point(r.recipe, dict(r.point)),
        label=r.label,
        status=r.status,
        started_at=float(r.started_at),
        finished_at=float(r.finished_at),
        metrics=metrics,
        env=env,
        bed=bed,
        artifacts=artifacts,
        series=series,
        batch=r.batch,
        repeat_index=r.repeat_index,
        error=r.error,
        notes=tuple(r.notes),
        id=r.source_id,
        uuid=r.uuid,
    )


# ------------------------------------------------------------------------------------------
# Writing


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def common_doc(run: Run, uuid: str, fingerprint: str) -> Doc:
    """The fields a run has in plain and packed bundles alike (``RunBase``)."""
    return {
        "uuid": uuid,
        "source_id": run.id,
        "label": run.label,
        "recipe": run.point.recipe,
        "point": dict(run.point.params),
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "batch": run.batch,
        "repeat_index": run.repeat_index,
        "error": run.error,
        "notes": list(run.notes),
        "fingerprint": fingerprint,
    }


class Writer:
    """Runs as a packed bundle's runs, one at a time (a bundle is written as a stream), each
    carrying the documents and metric kinds no run before it carried."""

    def __init__(self) -> None:
        self._docs: set[str] = set()
        self._bases: dict[str, tuple[str, str]] = {}  # host → (ref, text) of a whole document
        self._ids: dict[Kind, int] = {}

    def run_doc(self, run: Run) -> Doc:
        """``run`` as a packed bundle's run (its uuid ``run_uuid``'s, as a plain bundle's)."""
        uuid = run_uuid(run)
        p = pack_run(run if run.uuid == uuid else dataclasses.replace(run, uuid=uuid))
        row = p.row
        docs: dict[str, list[str]] = {}
        env = self._doc(row["env_json"], row["host"], docs)
        bed = self._doc(row["bed_json"], None, docs)
        kinds: dict[str, list[str]] = {}
        ids = []
        for kind, _ in p.metrics:
            i = self._ids.get(kind)
            if i is None:
                i = self._ids[kind] = len(self._ids) + 1
                kinds[str(i)] = list(kind)
            ids.append(i)
        metrics = None
        if p.metrics:
            enc, data = codec.pack_metrics(ids, [v for _, v in p.metrics])
            metrics = [enc, _b64(data)]
        return {
            **common_doc(run, uuid, row["fingerprint"]),
            "env": env,
            "bed": bed,
            "docs": docs,
            "kinds": kinds,
            "metrics": metrics,
            "series": [[s["encoding"], _b64(s["data"])] for s in p.series],
            "artifacts": [
                [
                    a["name"],
                    a["content_type"],
                    a["encoding"],
                    a["body"],
                    None if a["data"] is None else _b64(a["data"]),
                ]
                for a in p.artifacts
            ],
        }

    def _doc(self, text: str, host: str | None, docs: dict[str, list[str]]) -> str:
        """The ref of a document, packed into ``docs`` unless an earlier run carried it; an
        environment as a delta against its host's last whole one when that is smaller."""
        ref = codec.doc_ref(text)
        if ref in self._docs:
            return ref
        base = self._bases.get(host) if host is not None else None
        delta = codec.pack_delta(text, *base) if base is not None else None
        _, enc, data = delta or codec.pack_doc(text)
        if delta is None and host is not None:
            self._bases[host] = (ref, text)
        docs[ref] = [enc, _b64(data)]
        self._docs.add(ref)
        return ref


# ------------------------------------------------------------------------------------------
# Reading


@dataclass
class _Reading:
    """What the runs read so far carried: documents (encoding, data, text) and parsed, metric
    kinds by id, names checked, uuids."""

    docs: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)
    parsed: dict[str, dict[str, Any]] = field(default_factory=dict)
    kinds: dict[int, Kind] = field(default_factory=dict)
    doc_from: dict[str, int] = field(default_factory=dict)  # the run each document came with
    kind_from: dict[int, int] = field(default_factory=dict)  # the run each kind came with
    checked: set[tuple[str, ...]] = field(default_factory=set)
    series: set[tuple[str, str, str]] = field(default_factory=set)
    uuids: dict[str, int] = field(default_factory=dict)


def carried_runs(model: BundleV3, name: str) -> list[Carried]:
    """The runs of a validated packed bundle, each checked (UserError naming ``name``, the
    run and what is wrong): what each carries for later runs first, then the rest of it."""
    st = _Reading()
    out = []
    for i, r in enumerate(model.runs):
        with _naming(name, i):
            _carry_refs(r, st, i)
            out.append(_carry(r, st, i))
    return out


def read_refs(model: BundleV3, name: str) -> _Reading:
    """What the runs of a packed bundle carry for later ones (documents, metric kinds, the
    uuids), checked in order and kept with the run each came with: after it, any run can be
    checked by itself (``carried_slice``), so a large file is shared among processes."""
    st = _Reading()
    for i, r in enumerate(model.runs):
        with _naming(name, i):
            _carry_refs(r, st, i)
    return st


def carried_slice(model: BundleV3, name: str, st: _Reading, lo: int, hi: int) -> list[Carried]:
    """Runs ``lo``..``hi``-1 of a packed bundle checked, ``read_refs`` having read what
    all of them carry: each run sees only what it or a run before it carried."""
    out = []
    for i in range(lo, hi):
        with _naming(name, i):
            out.append(_carry(model.runs[i], st, i))
    return out


@contextmanager
def _naming(name: str, i: int) -> Iterator[None]:
    """A run's ValueError or UserError as one UserError naming the bundle and the run."""
    try:
        yield
    except ValueError as e:
        raise UserError(f"{name}: runs[{i}].{e}") from None
    except UserError as e:
        raise UserError(f"{name}: {e}") from None


def _bytes(b64: str, where: str) -> bytes:
    try:
        return base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: not base64") from None


def _carry_refs(r: RunV3, st: _Reading, i: int) -> None:
    """What run ``i`` carries for itself and later runs: its uuid, metric kinds and documents
    (the documents read back last, in store/codec: a later run's delta may need their text;
    the kinds' names are checked with the rest of the run, ``_carry``)."""
    if r.uuid in st.uuids:
        raise ValueError(f"uuid: {r.uuid} repeats runs[{st.uuids[r.uuid]}]")
    st.uuids[r.uuid] = i
    for k, kind in r.kinds.items():
        if not (k.isascii() and k.isdigit()):
            raise ValueError(f"kinds[{k!r}]: not a kind id")
        n = int(k)
        if st.kinds.get(n, kind) != kind:
            raise ValueError(f"kinds[{k!r}]: an earlier run's kind {n} is {list(st.kinds[n])}")
        st.kinds[n] = kind
        st.kind_from.setdefault(n, i)
    carried = [(ref, enc, _bytes(b64, f"docs[{ref!r}]")) for ref, (enc, b64) in r.docs.items()]
    for ref, enc, data in carried:
        _read_doc(ref, enc, data, st)
        st.doc_from[ref] = i


def _carry(r: RunV3, st: _Reading, i: int) -> Carried:
    """Run ``i`` decoded whole, in one pass down: its documents parsed and its blobs' bytes
    taken (here), every blob read back at once (``_decoded``: store/codec), then its rows
    made and checked (store/packing, store/row_checks), nothing called back."""
    env, bed = _parsed(r.env, "env", st, i), _parsed(r.bed, "bed", st, i)
    blobs = _blobs(r)
    d = _decoded(r, st, i, blobs)
    metrics = d.metrics if d.kept is None else KeptMetrics(st.kinds, d.kept)
    row = run_row(
        r.uuid,
        Point(r.recipe, r.point),
        (r.label, r.status, r.batch, r.error),
        r.repeat_index,
        (float(r.started_at), float(r.finished_at)),
        env,
        bed,
        r.notes,
        ("", ""),
    )
    row["env_ref"], row["bed_ref"] = r.env, r.bed
    what = f"run {r.uuid}"
    for kind in r.kinds.values():
        if ("metric", *kind) not in st.checked:
            check_row(METRICS, dict(zip(("name", "unit", "direction"), kind, strict=True)), what)
            st.checked.add(("metric", *kind))
    for a in d.artifacts:
        if ("artifact", a["name"], a["content_type"]) not in st.checked:  # names once a bundle
            check_row(ARTIFACTS, {"name": a["name"], "content_type": a["content_type"]}, what)
            st.checked.add(("artifact", a["name"], a["content_type"]))
        if a["body"]:  # the body each time
            check_row(ARTIFACTS, {"body": a["body"]}, what)
    for probe, name, unit in d.names - st.series:
        check_series(probe, name, unit, what)
        st.series.add((probe, name, unit))
    packed = Packed(row, metrics, d.artifacts, d.series, {ref: st.docs[ref][:2] for ref in d.refs}, d.kept)
    return Carried(r, packed, env, bed)


@dataclass(frozen=True)
class _Blobs:
    """A run's blobs as bytes, their encodings known (base64 decoded, nothing inflated yet)."""

    metrics: tuple[str, bytes] | None
    series: list[bytes]
    artifacts: list[dict[str, Any]]


def _blobs(r: RunV3) -> _Blobs:
    """Run ``r``'s blobs as bytes, refused where that needs nothing inflated (an artifact
    named twice, base64 that is not, an encoding this iowall does not know)."""
    metrics = None if r.metrics is None else (r.metrics[0], _bytes(r.metrics[1], "metrics"))
    arts: list[dict[str, Any]] = []
    names: set[str] = set()
    for j, (name, ctype, enc, body, b64) in enumerate(r.artifacts):
        where = f"artifacts[{j}]"
        if name in names:
            raise ValueError(f"{where}: {name!r} appears twice")
        names.add(name)
        data = None if b64 is None else _bytes(b64, where)
        if not (enc in (codec.ZLIB, codec.BASE64) and data is not None and not body) and not (
            enc == codec.IDENTITY and data is None
        ):
            raise ValueError(f"{where}: encoding {enc!r} with {'no ' if data is None else ''}data is unknown")
        arts.append(
            {"run_id": 0, "name": name, "content_type": ctype, "encoding": enc, "body": body, "data": data}
        )
    series = []
    for j, (enc, b64) in enumerate(r.series):
        series.append(_bytes(b64, f"series[{j}]"))
        if enc != codec.JSON_ZLIB:
            raise ValueError(f"series[{j}]: encoding {enc!r} unknown")
    return _Blobs(metrics, series, arts)


@dataclass(frozen=True)
class _Decoded:
    """A run's blobs read back: the documents it needs (its environment's delta base too),
    its metrics (``kept``: the row as it came), series rows and names, artifact rows."""

    refs: tuple[str, ...]
    metrics: list[tuple[Kind, float]]
    kept: tuple[tuple[int, ...], str, bytes] | None
    series: list[dict[str, Any]]
    names: set[tuple[str, str, str]]
    artifacts: list[dict[str, Any]]


def _decoded(r: RunV3, st: _Reading, i: int, b: _Blobs) -> _Decoded:
    """Every blob of run ``i`` inflated and read back in one stay in store/codec (capped at
    INFLATE_MAX), with what only its contents tell checked: the metrics' kinds carried by
    this run or one before it, named once; the series the store's shape, named once."""
    base = codec.delta_base(*st.docs[r.env][:2])
    metrics: list[tuple[Kind, float]] = []
    kept = None
    if b.metrics is not None:
        try:
            ids, values = codec.metrics_columns(*b.metrics, INFLATE_MAX)
        except (ValueError, zlib.error, struct.error) as e:
            raise ValueError(f"metrics: unreadable ({e})") from None
        if ids and max(map(st.kind_from.get, ids, itertools.repeat(i + 1))) > i:
            late = next(k for k in ids if st.kind_from.get(k, i + 1) > i)
            raise ValueError(f"metrics: kind {late} is not carried by this run or one before it")
        kinds = list(map(st.kinds.__getitem__, ids))
        if len(set(map(_first, kinds))) != len(kinds):
            first = [k[0] for k in kinds]
            raise ValueError(
                f"metrics: {next(n for j, n in enumerate(first) if n in first[:j])!r} appears twice"
            )
        # kept as it came unless a value is -0.0 (stored as 0.0, as a plain bundle's would be);
        # the zeros' signs looked at by map and filter: no Python loop over 137 values
        if -1.0 in map(math.copysign, itertools.repeat(1.0), filter(operator.not_, values)):
            metrics = [(k, v + 0.0) for k, v in zip(kinds, values, strict=True)]
        else:
            kept = (ids, *b.metrics)
    for j, a in enumerate(b.artifacts):
        if a["encoding"] == codec.ZLIB:
            try:
                codec.inflate(a["data"], INFLATE_MAX).decode("utf-8", "surrogatepass")
            except (zlib.error, UnicodeDecodeError, ValueError) as e:
                raise ValueError(f"artifacts[{j}]: unreadable ({e})") from None
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    names: set[tuple[str, str, str]] = set()
    for j, data in enumerate(b.series):
        try:
            doc = _SERIES.validate_json(codec.inflate(data, INFLATE_MAX))
        except ValidationError as e:
            msg = e.errors()[0]["msg"]
            raise ValueError(f"series[{j}]: not series as the store keeps them ({msg})") from None
        except (zlib.error, ValueError) as e:
            raise ValueError(f"series[{j}]: unreadable ({e})") from None
        keys = set(map(_key, doc))
        if len(keys) != len(doc) or not seen.isdisjoint(keys):
            known = set(seen)
            for probe, name in map(_key, doc):
                if (probe, name) in known:
                    raise ValueError(f"series[{j}]: {probe}/{name} appears twice")
                known.add((probe, name))
        seen |= keys
        names |= set(map(_names, doc))
        rows.append({"run_id": 0, "encoding": codec.JSON_ZLIB, "data": data})
    return _Decoded((r.env, r.bed, *([base] if base else [])), metrics, kept, rows, names, b.artifacts)


def _read_doc(ref: str, enc: str, data: bytes, st: _Reading) -> None:
    where = f"docs[{ref!r}]"
    if ref in st.docs:
        raise ValueError(f"{where}: carried by an earlier run already")
    base = None
    if enc == codec.DOC_DELTA:
        try:
            bref = codec.delta_base(enc, data) or ""
        except UnicodeDecodeError:
            bref = ""
        b = st.docs.get(bref)
        if b is None or b[0] != codec.DOC_ZLIB:
            raise ValueError(
                f"{where}: a delta whose base {bref!r} is not a whole document carried before it"
            )
        base = b[2]
    elif enc != codec.DOC_ZLIB:
        raise ValueError(f"{where}: encoding {enc!r} unknown")
    try:
        text = codec.unpack_doc(enc, data, base, INFLATE_MAX)
    except (zlib.error, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{where}: unreadable ({e})") from None
    if codec.doc_ref(text) != ref:
        raise ValueError(f"{where}: not the ref of its text ({codec.doc_ref(text)})")
    st.docs[ref] = (enc, data, text)


def _parsed(ref: str, what: str, st: _Reading, i: int) -> dict[str, Any]:
    if st.doc_from.get(ref, i + 1) > i:
        raise ValueError(f"{what}: document {ref!r} is not carried by this run or one before it")
    got = st.parsed.get(ref)
    if got is None:
        try:
            got = from_json(st.docs[ref][2], allow_inf_nan=True)  # twice json's speed
        except ValueError:
            try:
                got = json.loads(st.docs[ref][2])  # what pydantic-core refuses: numbers past a float
            except ValueError:
                got = None
        if not isinstance(got, dict):
            raise ValueError(f"{what}: document {ref!r} is not a JSON object")
        st.parsed[ref] = got
    return got


_first = operator.itemgetter(0)
_names = operator.itemgetter(0, 1, 2)
_key = operator.itemgetter(0, 1)


#: A series row's JSON as ``codec.unpack_series`` reads it, checked in one pass (pydantic-core:
#: a third of the time of json.loads and a loop over the samples; NaN and ±inf allowed).
_SERIES = TypeAdapter(list[tuple[str, str, str, list[tuple[float, float]]]], config=ConfigDict(strict=True))
