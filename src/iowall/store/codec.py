"""How raw artifacts and probe series are kept on disk: compressed, with a column naming the
encoding, so rows written before compression (``identity``) still read, and nothing is lost
(bodies come back byte for byte, samples bit for bit)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import struct
import zlib
from collections.abc import Sequence
from typing import Any, Protocol

from ..model import Series

#: Artifact encodings: the text in ``body`` as it is, zlib of its UTF-8 in ``data``, or (0004)
#: the bytes a base64 body stands for in ``data`` (a gzipped profile: already compressed;
#: used only when encoding them again gives the body back exactly).
IDENTITY, ZLIB, BASE64 = "identity", "zlib", "base64"
#: Series encoding: all of a run's series in one row, zlib of the JSON list
#: ``[[probe, name, unit, [[t, v], …]], …]`` (JSON keeps every float exactly, NaN, ±inf and
#: -0.0 included; one blob per run lets zlib share the timestamps and names of its series).
JSON_ZLIB = "json-zlib"

#: Environment and bed documents: zlib of the JSON text, kept once per content (runs name
#: them by ``ref``, the first 32 hex digits of its SHA-256); or (0004) zlib with another
#: document as its preset dictionary: ``data`` is that document's ref (32 ASCII bytes) and
#: the compressed text. Two environments of one host differ in a few numbers, so such a
#: delta is a tenth of the document. The base is always a DOC_ZLIB document: one level.
DOC_ZLIB, DOC_DELTA = "zlib", "zlib-delta"
#: A delta is kept only when smaller than this share of the document compressed alone.
DELTA_GAIN = 0.5
REF_LEN = 32

#: A run's metrics (0004): one row per run, zlib of little-endian uint32 count, the
#: metric_kinds ids, then the float64 values (bit for bit, NaN included).
METRICS_F64 = "kinds-f64-zlib"

#: Bodies shorter than this stay as text: zlib's header and checksum outweigh the gain.
MIN_COMPRESS = 64


def inflate(data: bytes, limit: int | None = None, zdict: bytes | None = None) -> bytes:
    """zlib.decompress of ``data`` (``zdict``: the preset dictionary), as it reads (bytes
    after the stream's end ignored, a truncated stream an error); with ``limit``, ValueError
    when the bytes would be more than that (a blob that inflates without bound: a packed
    bundle's, from anyone)."""
    if limit is None and zdict is None:
        return zlib.decompress(data)
    z = zlib.decompressobj(zdict=zdict) if zdict is not None else zlib.decompressobj()
    out = z.decompress(data, limit or 0)
    if limit is None:
        out += z.flush()
    if z.unconsumed_tail:
        raise ValueError(f"inflates past {limit} bytes")
    if not z.eof:
        raise zlib.error("Error -5 while decompressing data: incomplete or truncated stream")
    return out


def pack_body(body: str) -> tuple[str, str, bytes | None]:
    """(encoding, body column, data column) for an artifact body; zlib unless that is larger
    (a gzipped profile in base64 gains little: about as much as decoding the base64 would)."""
    if len(body) >= MIN_COMPRESS:
        packed = _unbase64(body)
        if packed is not None:
            return BASE64, "", packed
        raw = body.encode("utf-8", "surrogatepass")
        z = zlib.compress(raw, 6)
        if len(z) < len(raw):
            return ZLIB, "", z
    return IDENTITY, body, None


def unpack_body(encoding: str, body: str, data: bytes | None) -> str:
    """The artifact body as it was stored."""
    if encoding == IDENTITY:
        return body
    if encoding == ZLIB and data is not None:
        return zlib.decompress(bytes(data)).decode("utf-8", "surrogatepass")
    if encoding == BASE64 and data is not None:
        return base64.b64encode(bytes(data)).decode("ascii")
    raise ValueError(f"artifact encoding {encoding!r} unknown to this iowall: upgrade iowall")


def _unbase64(body: str) -> bytes | None:
    """The bytes ``body`` encodes when it is canonical base64 of already compressed data
    (zlib gains nothing on them), else None."""
    if not body.isascii() or len(body) % 4:
        return None
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != body:
        return None
    return raw if len(zlib.compress(raw, 6)) >= len(raw) * 0.9 else None


def pack_metrics(kinds: Sequence[int], values: Sequence[float]) -> tuple[str, bytes]:
    """(encoding, data) of a run's metrics: metric_kinds ids and their values."""
    n = len(kinds)
    return METRICS_F64, zlib.compress(struct.pack(f"<I{n}I{n}d", n, *kinds, *values), 9)


def unpack_metrics(encoding: str, data: bytes) -> list[tuple[int, float]]:
    """(kind id, value) of each metric of a run, as stored."""
    ids, values = metrics_columns(encoding, data)
    return list(zip(ids, values, strict=True))


def metrics_columns(
    encoding: str, data: bytes, limit: int | None = None
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The kind ids and the values of a run's metrics row, as stored (``limit``: ``inflate``'s)."""
    if encoding != METRICS_F64:
        raise ValueError(f"metrics encoding {encoding!r} unknown to this iowall: upgrade iowall")
    raw = inflate(bytes(data), limit)
    (n,) = struct.unpack_from("<I", raw)
    got = struct.unpack_from(f"<{n}I{n}d", raw, 4)
    return got[:n], got[n:]


class ArtifactLike(Protocol):
    """An artifact as ``Artifact`` holds it, or as a bundle's model does."""

    @property
    def name(self) -> str: ...
    @property
    def content_type(self) -> str: ...
    @property
    def body(self) -> str: ...


class SeriesLike(Protocol):
    """A series as ``Series`` holds it, or as a bundle's model does (samples as lists)."""

    @property
    def probe(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def samples(self) -> Sequence[Sequence[float]]: ...


def pack_series(series: Sequence[SeriesLike]) -> tuple[str, bytes]:
    """(encoding, data) holding every series of a run."""
    doc = [[s.probe, s.name, s.unit, [list(p) for p in s.samples]] for s in series]
    return JSON_ZLIB, zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 9)


def pack_blobs(
    artifacts: Sequence[ArtifactLike], series: Sequence[SeriesLike]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A run's artifacts and series as the rows that keep them (their run_id set on insert):
    each body compressed unless that gains nothing (``pack_body``), every series in one row
    (``pack_series``)."""
    arts = []
    for a in artifacts:
        enc, body, data = pack_body(a.body)
        arts.append(
            {
                "run_id": 0,
                "name": a.name,
                "content_type": a.content_type,
                "body": body,
                "encoding": enc,
                "data": data,
            }
        )
    rows = []
    if series:
        enc, data = pack_series(series)
        rows.append({"run_id": 0, "encoding": enc, "data": data})
    return arts, rows


def unpack_series(encoding: str, data: bytes) -> tuple[Series, ...]:
    """The series of a run as they were stored."""
    if encoding != JSON_ZLIB:
        raise ValueError(f"series encoding {encoding!r} unknown to this iowall: upgrade iowall")
    return tuple(
        Series(probe, name, unit, pairs(samples))
        for probe, name, unit, samples in json.loads(zlib.decompress(bytes(data)))
    )


def pairs(samples: Sequence[Sequence[float]]) -> tuple[tuple[float, float], ...]:
    """Samples read from JSON as (t, v) float pairs (``samples_json`` before 0003, too)."""
    return tuple((float(a), float(b)) for a, b in samples)


def doc_ref(text: str) -> str:
    """The ref a document is kept under, whatever its encoding."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:REF_LEN]


def pack_doc(text: str) -> tuple[str, str, bytes]:
    """(ref, encoding, data) for a run's environment or bed JSON."""
    return doc_ref(text), DOC_ZLIB, zlib.compress(text.encode("utf-8", "surrogatepass"), 9)


def pack_delta(text: str, base_ref: str, base: str) -> tuple[str, str, bytes] | None:
    """(ref, encoding, data) of ``text`` compressed against the document ``base`` (a DOC_ZLIB
    one, named ``base_ref``); None when that gains too little over ``pack_doc``."""
    raw = text.encode("utf-8", "surrogatepass")
    z = zlib.compressobj(9, zdict=base.encode("utf-8", "surrogatepass"))
    data = base_ref.encode("ascii") + z.compress(raw) + z.flush()
    ref, _, alone = pack_doc(text)
    return (ref, DOC_DELTA, data) if len(data) < len(alone) * DELTA_GAIN else None


def delta_base(encoding: str, data: bytes) -> str | None:
    """The ref of the document a stored one is compressed against, if any."""
    return bytes(data[:REF_LEN]).decode("ascii") if encoding == DOC_DELTA else None


def unpack_doc(encoding: str, data: bytes, base: str | None = None, limit: int | None = None) -> str:
    """The JSON text of a document as it was stored (``base``: the text of its delta_base;
    ``limit``: ``inflate``'s)."""
    if encoding == DOC_ZLIB:
        return inflate(bytes(data), limit).decode("utf-8", "surrogatepass")
    if encoding == DOC_DELTA and base is not None:
        raw = inflate(bytes(data[REF_LEN:]), limit, base.encode("utf-8", "surrogatepass"))
        return raw.decode("utf-8", "surrogatepass")
    raise ValueError(f"document encoding {encoding!r} unknown to this iowall: upgrade iowall")
