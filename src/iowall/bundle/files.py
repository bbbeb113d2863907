"""Bundles: versioned JSON files that carry runs, whole, between stores and machines.

A bundle holds every run's metrics (each run is one sample of its point), environment, bed
facts, notes, probe series and raw artifacts, so that a base and a patched result set can be
compared anywhere. The format is described in docs/bundle-format.md. Reading validates with
pydantic at the edge and upgrades older schema versions one step at a time (``MIGRATIONS``);
every problem ends as one UserError naming the file.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from ..machine.atomic import open_atomic
from ..machine.dirs import redact_url
from ..model import Artifact, Metric, Point, Run, Series, fingerprint, run_uuid
from ..store.gcpause import gc_paused
from ..store.packing import Packed
from ..store.rows import stored_uuids
from ..vocab.errors import UserError
from .models import BundleV1, BundleV2, BundleV3, RunV1, RunV2, StrictModel
from .packed import Carried, Opened, carried_runs, plain_rows, read_refs, run_of
from .writer import Writer, common_doc

#: The value of the top-level ``format`` key of every bundle.
FORMAT = "iowall-bundle"
#: The schema version of the plain bundles this iowall writes.
SCHEMA_VERSION = 2
#: The version of packed bundles (bundle/packed.py): v2's runs as the store keeps
#: them; the newest this iowall reads.
PACKED_VERSION = 3

Doc = dict[str, Any]


# ------------------------------------------------------------------------------------------
# Migrations: one step each, pure functions on documents already valid for their version


def _v1_to_v2(doc: Doc) -> Doc:
    """v1 → v2: metrics map + units map + lower_is_better list become a list of metric
    objects; ``id`` → ``source_id``; ``params`` → ``point``; empty ``series``; the
    fingerprint is filled in; a ``source`` block is added (unknown for v1, so empty)."""
    runs = []
    for r in doc["runs"]:
        lower = set(r["lower_is_better"])
        runs.append(
            {
                "uuid": r["uuid"],
                "source_id": r["id"],
                "label": r["label"],
                "recipe": r["recipe"],
                "point": r["params"],
                "status": r["status"],
                "started_at": r["started_at"],
                "finished_at": r["finished_at"],
                "batch": r["batch"],
                "repeat_index": r["repeat_index"],
                "error": r["error"],
                "notes": r["notes"],
                "fingerprint": fingerprint(Point(r["recipe"], r["params"]), r["bed"], r["env"]),
                "env": r["env"],
                "bed": r["bed"],
                "metrics": [
                    {
                        "name": n,
                        "value": v,
                        "unit": r["units"][n],
                        "direction": "lower" if n in lower else "higher",
                    }
                    for n, v in r["metrics"].items()
                ],
                "series": [],
                "artifacts": r["artifacts"],
            }
        )
    return {
        "format": FORMAT,
        "schema_version": 2,
        "created_at": doc["created_at"],
        "iowall_version": doc["iowall_version"],
        "source": {"host": "", "store": ""},
        "runs": runs,
    }


#: ``MIGRATIONS[n]`` turns a valid version-n document into a version-(n+1) one. Kept forever.
MIGRATIONS: dict[int, Callable[[Doc], Doc]] = {1: _v1_to_v2}
#: The shape of every version this iowall reads; each is validated before its step.
MODELS: dict[int, type[StrictModel]] = {1: BundleV1, 2: BundleV2, 3: BundleV3}


def _loc(loc: Sequence[str | int]) -> str:
    """``runs[0].metrics[1].value``; a key that is not a plain name is quoted, escapes
    included (``runs[0]["a\\nb"]``), so that the error stays one line."""
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif not re.fullmatch(r"[A-Za-z0-9_-]+", str(p)):
            out += f"[{json.dumps(str(p), ensure_ascii=False)}]"
        else:
            out += f".{p}" if out else str(p)
    return out


def _problem(e: ValidationError) -> str:
    """The first problem pydantic found, as ``where: what (got …)``."""
    first = e.errors()[0]
    where = _loc(first["loc"]) or "top level"
    kind = first["type"]
    if kind == "missing":
        return f"{where}: missing"
    if kind == "extra_forbidden":
        return f"{where}: unknown key"
    msg = first["msg"].removeprefix("Value error, ")
    msg = msg[:1].lower() + msg[1:]
    got = repr(first["input"])
    return f"{where}: {msg} (got {got[:60] + '…' if len(got) > 60 else got})"


def _duplicates(b: BundleV1 | BundleV2) -> str | None:
    """A key that must be unique but repeats (run uuid; metric, artifact, series names)."""
    seen: dict[str, int] = {}
    runs: Sequence[RunV1 | RunV2] = b.runs
    for i, r in enumerate(runs):
        if r.uuid in seen:
            return f"runs[{i}].uuid: {r.uuid} repeats runs[{seen[r.uuid]}]"
        seen[r.uuid] = i
        groups: list[tuple[str, list[str]]] = [("artifacts", [a.name for a in r.artifacts])]
        if isinstance(r, RunV2):
            groups += [
                ("metrics", [m.name for m in r.metrics]),
                ("series", [f"{s.probe}/{s.name}" for s in r.series]),
            ]
        else:
            missing = sorted(set(r.metrics) - set(r.units))
            if missing:
                return f"runs[{i}].units: no unit for metric {missing[0]!r}"
        for what, names in groups:
            first = {n: j for j, n in reversed(list(enumerate(names)))}  # not pairwise: 135 a run
            dup = next((n for j, n in enumerate(names) if first[n] < j), None)
            if dup is not None:
                return f"runs[{i}].{what}: {dup!r} appears twice"
    return None


def _validate(doc: Doc, version: int, name: str) -> BundleV1 | BundleV2 | BundleV3:
    tag = "" if version >= SCHEMA_VERSION else f" (schema_version {version})"
    try:
        model = MODELS[version].model_validate(doc)
    except ValidationError as e:
        raise UserError(f"{name}{tag}: {_problem(e)}") from None
    if isinstance(model, BundleV3):
        return model  # its runs are checked as they are read (carried_runs)
    assert isinstance(model, (BundleV1, BundleV2))
    dup = _duplicates(model)
    if dup:
        raise UserError(f"{name}{tag}: {dup}")
    return model


def _upgrade(doc: Any, name: str) -> BundleV2 | BundleV3:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise UserError(f'{name}: not an iowall bundle (expected a JSON object with "format": "{FORMAT}")')
    v = doc.get("schema_version")
    if type(v) is not int or v < 1:
        raise UserError(f"{name}: schema_version must be a whole number from 1 (got {v!r})")
    if v > PACKED_VERSION:
        raise UserError(
            f"{name} has schema_version {v}; this iowall reads up to {PACKED_VERSION}: upgrade iowall"
        )
    if v == PACKED_VERSION:
        packed = _validate(doc, v, name)
        assert isinstance(packed, BundleV3)
        return packed
    while v < SCHEMA_VERSION:
        _validate(doc, v, name)
        doc = MIGRATIONS[v](doc)
        v += 1
    model = _validate(doc, SCHEMA_VERSION, name)
    assert isinstance(model, BundleV2)
    return model


def migrate(doc: Any, *, name: str = "bundle") -> Doc:
    """Upgrade a parsed plain bundle of any known version to ``SCHEMA_VERSION``, one step at a
    time, validating each version's shape first (a packed one is validated as it is);
    UserError (prefixed by ``name``) when it cannot."""
    return _upgrade(doc, name).model_dump()


# ------------------------------------------------------------------------------------------
# Reading


def _read_text(path: str) -> str:
    name = f"bundle {path}"
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except FileNotFoundError:
        raise UserError(f"{name}: no such file") from None
    except OSError as e:
        raise UserError(f"{name}: cannot read: {e.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{name}: not JSON: not UTF-8 text (byte {e.start})") from None


def to_run(r: RunV2) -> Run:
    """A bundle's run model as a ``Run``."""
    return run_of(
        r,
        r.env,
        r.bed,
        tuple(Metric(m.name, float(m.value), m.unit, m.direction) for m in r.metrics),
        tuple(Artifact(a.name, a.content_type, a.body) for a in r.artifacts),
        tuple(
            Series(s.probe, s.name, s.unit, tuple((float(t), float(v)) for t, v in s.samples))
            for s in r.series
        ),
    )


@gc_paused()
def read_bundle(path: str) -> list[Run]:
    """The runs of a bundle file (``-`` reads stdin), migrated to the current schema; each run
    carries its uuid and ``id`` = its id in the store it was exported from (``source_id``)."""
    return [as_run(r) for r in read_models(path)]


#: A bundle's run as read: a plain bundle's model, or a packed bundle's run, checked.
Item = RunV2 | Carried
_VERSION = re.compile(r'"schema_version"\s*:\s*(\d+)')


@gc_paused()
def read_models(path: str) -> list[Item]:
    """The runs of a bundle file as the models it was validated into, packed straight into
    rows by ``pack_item`` (``iowall import`` reads a file by ``opened``, then its runs by
    ``packed.rows_of``). A packed one's runs are checked (``carried_runs``)."""
    return items_of(*read_model(path))


def items_of(model: BundleV2 | BundleV3, name: str) -> list[Item]:
    """The runs of a validated bundle (``read_model``) as ``read_models`` gives them."""
    if not isinstance(model, BundleV3):
        dup = _duplicates(model)
        if dup:
            raise UserError(f"{name}: {dup}")
        return list(model.runs)
    return list(carried_runs(model, name))


def read_model(path: str) -> tuple[BundleV2 | BundleV3, str]:
    """A bundle file validated, and its name for messages. A current bundle is parsed and
    validated in one pass (pydantic's ``model_validate_json``: half the time of parsing,
    then validating); an older one, or one that fails, takes the step-by-step way, which
    upgrades it or says what is wrong, as before."""
    text = _read_text(path)
    name = f"bundle {path}"
    peek = _VERSION.search(text[:4096])  # the writer puts it first: one validating pass, not two
    current: type[BundleV2] | type[BundleV3] = (
        BundleV3 if peek is not None and peek.group(1) == str(PACKED_VERSION) else BundleV2
    )
    try:
        return current.model_validate_json(text), name
    except ValidationError:
        return _upgrade(parse_json(text, path), name), name


def as_run(item: Item) -> Run:
    """A bundle's run as a ``Run``."""
    return item.run() if isinstance(item, Carried) else to_run(item)


def pack_item(item: Item, checked: set[tuple[str, ...]] | None = None) -> Packed:
    """A bundle's run as the store's rows: a packed one's as it carried them (checked when
    read), a plain one's packed (``pack_model``)."""
    return item.packed if isinstance(item, Carried) else pack_model(item, checked)


def pack_model(r: RunV2, checked: set[tuple[str, ...]] | None = None) -> Packed:
    """A plain bundle's run as the store's rows, the rows ``pack_run(to_run(r))`` gives
    without building the ``Run`` (``packed.plain_rows``)."""
    return plain_rows(r, checked)


def opened(path: str, url: str | None = None) -> Opened:
    """Bundle file ``path`` opened for import (``Opened``): read and validated, checked as a
    whole (a plain one's uuids and names unique; what a packed one's runs carry for later
    ones, ``read_refs``), and which of a plain one's runs the store at ``url`` has (not
    packed again: importing again costs the reading only). Then any slice of its runs can
    be made rows by itself (``packed.rows_of``)."""
    model, name = read_model(path)
    if not isinstance(model, BundleV3):
        dup = _duplicates(model)
        if dup:
            raise UserError(f"{name}: {dup}")
        uuids = [r.uuid for r in model.runs]
        return Opened(model, name, have=frozenset(stored_uuids(url, uuids) if url and uuids else ()))
    return Opened(model, name, read_refs(model, name))


def parse_json(text: str, path: str) -> Any:
    """A bundle's JSON: pydantic-core's parser (twice json's speed on 15 MB); what it refuses
    goes to json, which reads numbers past a float's range as Python does, or says where
    the text stops being JSON (the two agree: tests/fuzz/test_bundle_json_fuzz.py)."""
    try:
        return from_json(text, allow_inf_nan=True)
    except ValueError:
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"bundle {path}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise UserError(f"bundle {path}: not JSON this iowall can read: nested too deep") from None


# ------------------------------------------------------------------------------------------
# Writing


def _run_doc(run: Run) -> Doc:
    return {
        **common_doc(run, run_uuid(run), run.fingerprint()),
        "env": dict(run.env),
        "bed": dict(run.bed),
        "metrics": [
            {"name": m.name, "value": m.value, "unit": m.unit, "direction": m.direction} for m in run.metrics
        ],
        "series": [
            {"probe": s.probe, "name": s.name, "unit": s.unit, "samples": [list(p) for p in s.samples]}
            for s in run.series
        ],
        "artifacts": [
            {"name": a.name, "content_type": a.content_type, "body": a.body} for a in run.artifacts
        ],
    }


def _iowall_version() -> str:
    try:
        return version("iowall")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def bundle_doc(
    runs: Iterable[Run],
    *,
    source: Mapping[str, Any] | None = None,
    created_at: str | None = None,
    packed: bool = False,
) -> Doc:
    """The bundle document for ``runs`` (what ``write_bundle`` writes): plain, or ``packed``
    (bundle/packed.py)."""
    src = dict(source or {})
    unknown = set(src) - {"host", "store"}
    if unknown:
        raise ValueError(f"bundle source takes host and store, not {sorted(unknown)}")
    return {
        "format": FORMAT,
        "schema_version": PACKED_VERSION if packed else SCHEMA_VERSION,
        "created_at": created_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "iowall_version": _iowall_version(),
        "source": {
            "host": str(src.get("host") or socket.gethostname()),
            "store": redact_url(str(src.get("store") or "")),
        },
        "runs": list(_run_docs(runs, packed)),
    }


def _run_docs(runs: Iterable[Run], packed: bool) -> Iterator[Doc]:
    """Each run's document, plain or packed (one writer for the bundle: a packed run carries
    only the documents and kinds no run before it carried)."""
    writer = Writer() if packed else None
    for r in runs:
        yield _run_doc(r) if writer is None else writer.run_doc(r)


def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str)


def write_bundle(
    runs: Iterable[Run],
    path: str,
    *,
    source: Mapping[str, Any] | None = None,
    created_at: str | None = None,
    packed: bool = False,
) -> int:
    """Write ``runs`` as a bundle to ``path`` (``-`` is stdout) atomically (a temporary file in
    the same directory, fsynced, then renamed over ``path``), one run at a time: memory is
    bounded by one run whatever ``runs`` yields, the bytes are those of ``bundle_doc``.
    Returns how many runs it wrote."""
    head = _dumps(bundle_doc((), source=source, created_at=created_at, packed=packed))
    assert head.endswith(',"runs":[]}')  # runs is the last key: the stream goes there
    n = 0
    with open_atomic(path, what="bundle") as f:
        f.write(head[:-2])
        for doc in _run_docs(runs, packed):
            f.write(("," if n else "") + _dumps(doc))
            n += 1
        f.write("]}\n")
    return n
