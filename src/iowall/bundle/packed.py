"""A bundle's runs read into the store's rows: a packed bundle's (schema_version 3) as they
came, checked, and a plain one's packed, both in one order.

A packed run carries v2's fields, but its environment and bed as compressed documents named
by ref (an environment as a delta against an earlier one of its host), its metrics as one
row of kind ids and float64 values, its series and artifacts compressed: the rows
``store.ingest`` writes, so that an import checks them and writes them as they are instead
of validating every number of a plain bundle and compressing it all again (1.8x the rate
of a call of 2,000 runs, docs/benchmarks.md "Import rate"). A run carries only the
documents and metric kinds that no run before it in the bundle carried (bundle/writer.py
writes them). Everything read is checked as a plain bundle is: each document's ref is that
of its text, every blob reads back, names fit the store's columns.

A file is opened first (``files.opened``: validated, and what a packed one's runs carry read
in order, ``read_refs``); then any slice of its runs is made rows by itself (``rows_of``), so
one large file is shared among processes (bundle/pool.py). Every run goes down the same way
whatever its kind (``_run_rows``): its parts taken from the bundle, its blobs read back or
compressed (store/codec), its row made (store/packing), its parts checked last
(store/row_checks).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import operator
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_core import from_json

from ..model import Artifact, Metric, Point, Run, Series
from ..store import codec
from ..store.packing import KeptMetrics, Kind, Packed, run_row
from ..store.row_checks import check_parts
from ..vocab.errors import UserError
from .models import BundleV2, BundleV3, RunBase, RunV2, RunV3

#: Three names of a part a run's rows are checked by: an artifact's name, content type and
#: body; a series' probe, name and unit.
_Triples = Iterable[tuple[str, str, str]]
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
# Reading


@dataclass(frozen=True)
class Present:
    """A run of a plain bundle that the store had when its file was opened (``Opened.have``):
    not packed (the store skips it by its uuid; runs are never removed from a store)."""

    uuid: str


@dataclass
class _Reading:
    """What the runs read so far carried: documents (encoding, data, text) and parsed, metric
    kinds by id, names checked, uuids; and the first run whose refs could not be read, with
    why (``read_refs``)."""

    docs: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)
    parsed: dict[str, dict[str, Any]] = field(default_factory=dict)
    kinds: dict[int, Kind] = field(default_factory=dict)
    doc_from: dict[str, int] = field(default_factory=dict)  # the run each document came with
    kind_from: dict[int, int] = field(default_factory=dict)  # the run each kind came with
    checked: set[tuple[str, ...]] = field(default_factory=set)
    uuids: dict[str, int] = field(default_factory=dict)
    failed: tuple[int, UserError] | None = None


@dataclass(frozen=True)
class Opened:
    """A bundle file opened for import (``files.opened``): its runs validated, its name for
    messages, and what the rows of any of its runs need besides: what a packed bundle's runs
    carry (``read_refs``), which of a plain one's runs the store has (``have``). Any slice of
    its runs is then made rows by itself (``rows_of``): a large file is shared by processes."""

    model: BundleV2 | BundleV3
    name: str
    carried: _Reading | None = None
    have: frozenset[str] = frozenset()

    @property
    def runs(self) -> int:
        """How many of its runs are read: all, or up to the first whose refs could not be
        read (which fails when it is reached: ``rows_of``)."""
        failed = self.carried.failed if self.carried is not None else None
        return len(self.model.runs) if failed is None else failed[0] + 1


def carried_runs(model: BundleV3, name: str) -> list[Carried]:
    """The runs of a validated packed bundle, each checked (UserError naming ``name``, the
    run and what is wrong): what they carry for later runs first (``read_refs``), then each
    whole (``rows_of``)."""
    st = read_refs(model, name)
    rows = rows_of(Opened(model, name, st))
    return [
        Carried(r, p, st.parsed[r.env], st.parsed[r.bed])
        for r, p in zip(model.runs, rows, strict=True)
        if isinstance(p, Packed)  # always: a packed bundle's runs are never Present
    ]


def read_refs(model: BundleV3, name: str) -> _Reading:
    """What the runs of a packed bundle carry for later ones (documents, metric kinds, the
    uuids), checked in order and kept with the run each came with, up to the first run whose
    refs cannot be read: kept as ``failed``, raised when that run is reached (``rows_of``),
    so that a run before it that fails is named first, as reading one run at a time names
    it. After it, any run can be checked by itself."""
    st = _Reading()
    for i, r in enumerate(model.runs):
        try:
            with _naming(name, i):
                _carry_refs(r, st, i)
        except UserError as e:
            st.failed = (i, e)
            break
    return st


def rows_of(f: Opened, lo: int = 0, hi: int | None = None) -> list[Packed | Present]:
    """Runs ``lo``..``hi``-1 of an opened bundle (to its last read: ``hi`` None) as the
    store's rows, in order, each in one pass down (``_run_rows``); a plain run the store has
    is ``Present``. A packed run's error names the bundle and the run (``runs[i].``), a
    plain one's the run (``run <uuid>``), as they always did."""
    st = f.carried if f.carried is not None else _Reading()
    out: list[Packed | Present] = []
    for i in range(lo, f.runs if hi is None else hi):
        if st.failed is not None and st.failed[0] == i:
            raise st.failed[1]
        r = f.model.runs[i]
        if r.uuid in f.have:
            out.append(Present(r.uuid))
            continue
        with _naming(f.name, i) if isinstance(r, RunV3) else nullcontext():
            out.append(_run_rows(r, st, i))
    return out


def plain_rows(r: RunV2, checked: set[tuple[str, ...]] | None = None) -> Packed:
    """A plain bundle's run as the store's rows: the rows ``pack_run(to_run(r))`` gives,
    without building the ``Run`` (tests/unit/test_bundle.py checks they are the same).
    ``checked``: as ``pack_run``'s."""
    return _run_rows(r, _Reading(checked=set() if checked is None else checked), 0)


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
    the kinds' names are checked with the rest of the run, ``_run_rows``)."""
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


def _run_rows(r: RunV2 | RunV3, st: _Reading, i: int) -> Packed:
    """Run ``i`` as the store's rows, in one pass down and in one order whatever its kind,
    nothing called back: its parts taken from the bundle (a packed run's documents parsed and
    its blobs' bytes taken, here), its blobs read back (``_decoded``) or compressed, in one
    stay in store/codec; its row made (store/packing); its parts checked last
    (store/row_checks), once the blobs tell them all (a packed run's series names)."""
    names: Sequence[str] = ()  # a packed run's metrics' names: looked at as they were read back
    kinds: Iterable[Kind]
    named: _Triples  # the series' probe, name and unit
    kept: tuple[tuple[int, ...], str, bytes] | None = None
    docs: dict[str, tuple[str, bytes]] | None = None
    if isinstance(r, RunV3):
        env, bed = _parsed(r.env, "env", st, i), _parsed(r.bed, "bed", st, i)
        blobs = _blobs(r)
        d = _decoded(r, st, i, blobs)
        artifacts, series, pairs, kept = d.artifacts, d.series, d.metrics, d.kept
        texts = ("", "")  # the documents kept by ref
        docs = {ref: st.docs[ref][:2] for ref in d.refs}
        kinds, named = r.kinds.values(), d.names  # the kinds it carries: checked by the run that brings them
        bodies = [(a["name"], a["content_type"], a["body"]) for a in d.artifacts]
    else:
        env, bed = r.env, r.bed
        artifacts, series = codec.pack_blobs(r.artifacts, r.series)
        # + 0.0: -0.0 becomes 0.0, as a Run's rows keep it (store.packing.pack_run)
        pairs = [((m.name, m.unit, m.direction), float(m.value) + 0.0) for m in r.metrics]
        texts = (json.dumps(env, sort_keys=True, default=str), json.dumps(bed, sort_keys=True, default=str))
        names, kinds = [m.name for m in r.metrics], [k for k, _ in pairs]
        named = [(s.probe, s.name, s.unit) for s in r.series]
        bodies = [(a.name, a.content_type, a.body) for a in r.artifacts]
    metrics = pairs if kept is None else KeptMetrics(st.kinds, kept)
    row = run_row(
        r.uuid,
        Point(r.recipe, r.point),
        (r.label, r.status, r.batch, r.error),
        r.repeat_index,
        (float(r.started_at), float(r.finished_at)),
        env,
        bed,
        r.notes,
        texts,
    )
    check_parts(f"run {r.uuid}", names, kinds, bodies, named, st.checked)
    if docs is not None:
        row["env_ref"], row["bed_ref"] = r.env, r.bed
    return Packed(row, metrics, artifacts, series, docs, kept)


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
