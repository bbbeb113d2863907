"""Reading fio's JSON as users have it: text around the object, duplicate keys, ``--client``
output, older fio's units; every malformed file is one UserError that says where."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..vocab.errors import UserError
from .fio_metrics import DIRECTIONS

#: fio's summary of every client in ``--client`` output: a sum, not a job of its own.
ALL_CLIENTS = "All clients"
#: Largest whole number fio writes (its counters are unsigned 64-bit).
_MAX_INT = 2**64
#: Latency blocks: fio 3 writes them in ns (``clat_ns``), fio 2 in usec (``clat``).
_LAT_BLOCKS = (("slat", "slat_ns"), ("clat", "clat_ns"), ("lat", "lat_ns"))
_START = re.compile(r"^[ \t]*\{", re.M)


@dataclass(frozen=True)
class FioDoc:
    """One fio JSON document, checked: its job entries in fio's order (units made fio 3's,
    ``All clients`` dropped), its global options, and what was tolerated on the way."""

    raw: Mapping[str, Any]
    jobs: tuple[Mapping[str, Any], ...]
    global_options: Mapping[str, str]
    version: str
    timestamp_s: float | None
    client: bool
    plus: bool
    notes: tuple[str, ...]


def read_fio_json(text: str, name: str) -> list[FioDoc]:
    """Every fio document in ``text`` (usually one), skipping text before, between and after
    them; a UserError naming ``name`` for anything that is not fio's JSON."""
    docs: list[FioDoc] = []
    truncated = False
    pos = 0
    for m in _START.finditer(text):
        if m.start() < pos:
            continue
        dups: list[str] = []
        dec = json.JSONDecoder(object_pairs_hook=_last_wins(dups), parse_constant=_no_constant)
        try:
            doc, end = dec.raw_decode(text, m.end() - 1)
        except json.JSONDecodeError as e:
            head = text[m.start() : m.start() + 300]
            if (e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated")) and any(
                k in head for k in ('"fio version"', '"jobs"', '"client_stats"')
            ):
                truncated = True
            continue
        except ValueError as e:  # a non-finite constant, a number of 4300+ digits
            raise UserError(f"{name}: not fio's JSON: {e}") from None
        except RecursionError:
            raise UserError(f"{name}: not fio's JSON: nested too deeply") from None
        if not isinstance(doc, dict) or not ({"jobs", "client_stats"} & doc.keys()):
            continue
        pos = end
        docs.append(_checked(doc, name, dups, len(docs)))
    if truncated:
        raise UserError(f"{name}: fio's JSON is truncated (it ends before its last '}}')")
    if not docs:
        raise UserError(
            f'{name}: no fio JSON found (an object with "jobs" or '
            '"client_stats", from fio --output-format=json)'
        )
    return docs


class _Constant(ValueError):
    pass


def _no_constant(word: str) -> Any:
    raise _Constant(f"{word} is not a number fio writes")


def _last_wins(dups: list[str]) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out and k not in dups:
                dups.append(k)
            out[k] = v
        return out

    return hook


def _checked(doc: dict[str, Any], name: str, dups: Sequence[str], index: int) -> FioDoc:
    """The document's fields iowall reads, type-checked, with older units converted."""
    where = name if index == 0 else f"{name} (document {index + 1})"
    notes = [f"duplicate key {k!r} in fio's JSON: the last value is kept" for k in dups]
    client = "client_stats" in doc and "jobs" not in doc
    key = "client_stats" if client else "jobs"
    entries = doc[key]
    if not isinstance(entries, list):
        raise UserError(f"{where}: {key}: expected a list of jobs, got {_kind(entries)}")
    jobs = []
    for i, j in enumerate(entries):
        path = f"{where}: {key}[{i}]"
        if not isinstance(j, dict):
            raise UserError(f"{path}: expected a job object, got {_kind(j)}")
        if client and j.get("jobname") == ALL_CLIENTS:
            continue
        jobs.append(_job(j, path, client, notes))
    if not jobs:
        raise UserError(f"{where}: {key} holds no jobs")
    if client and len(jobs) < len(entries):
        notes.append(f"fio's '{ALL_CLIENTS}' entry is a sum of the clients' jobs: not imported")
    version = doc.get("fio version", "")
    ts = doc.get("timestamp_ms", doc.get("timestamp"))
    ts_s = None
    if isinstance(ts, (int, float)) and _number(ts):
        ts_s = float(ts) / (1000.0 if "timestamp_ms" in doc else 1.0)
    return FioDoc(
        doc,
        tuple(jobs),
        _options(doc.get("global options", {}), f"{where}: global options"),
        version if isinstance(version, str) else str(version),
        ts_s,
        client,
        any(_has_bins(j) for j in jobs),
        tuple(dict.fromkeys(notes)),
    )


def _job(j: dict[str, Any], path: str, client: bool, notes: list[str]) -> dict[str, Any]:
    out = dict(j)
    out["jobname"] = _field(j, "jobname", path, str, default="")
    out["groupid"] = _whole(j, "groupid", path, default=0)
    out["error"] = _whole(j, "error", path, default=0)
    for k in ("usr_cpu", "sys_cpu"):
        v = j.get(k, 0.0)
        if not _number(v):
            raise UserError(f"{path}.{k}: expected a number, got {_kind(v)}")
    out["job options"] = _options(j.get("job options", {}), f"{path}.job options")
    if client:
        out["hostname"] = _field(j, "hostname", path, str)
        out["port"] = _whole(j, "port", path, default=0)
    for d in DIRECTIONS:
        if d in j:
            out[d] = _direction(j[d], f"{path}.{d}", notes)
    return out


def _direction(v: Any, path: str, notes: list[str]) -> dict[str, Any]:
    """One direction's figures, fio 3's names and units: ``io_bytes`` (B), ``bw_bytes``
    (B/s), ``*_ns`` latencies; fio 2 wrote ``io_kbytes``, ``bw`` in KiB/s and usec."""
    if not isinstance(v, dict):
        raise UserError(f"{path}: expected an object, got {_kind(v)}")
    d = dict(v)
    if "io_bytes" not in d and "io_kbytes" in d:
        d["io_bytes"] = _whole(d, "io_kbytes", path) * 1024
        notes.append("io_bytes computed from io_kbytes (KiB, fio before 3.0)")
    if "bw_bytes" not in d and "bw" in d:
        if not _number(d["bw"]) or d["bw"] < 0:
            raise UserError(f"{path}.bw: expected a number ≥ 0, got {_kind(d['bw'])}")
        d["bw_bytes"] = d["bw"] * 1024
        notes.append("bw_bytes computed from bw (KiB/s, fio before 3.0): to 1 KiB/s")
    for old, new in _LAT_BLOCKS:
        if new not in d and isinstance(d.get(old), dict):
            d[new] = _usec_to_ns(d[old], f"{path}.{old}")
            notes.append(f"{new} converted from {old} (usec, fio before 3.0)")
    d["io_bytes"] = _whole(d, "io_bytes", path)
    d["runtime"] = _whole(d, "runtime", path)
    d["total_ios"] = _whole(d, "total_ios", path, default=0)
    for k in ("bw_bytes", "iops"):
        if not _number(d.get(k)) or d[k] < 0:
            raise UserError(f"{path}.{k}: expected a number ≥ 0, got {_kind(d.get(k))}")
    for _, block in _LAT_BLOCKS:
        if block in d:
            _lat_block(d[block], f"{path}.{block}")
    return d


def _lat_block(v: Any, path: str) -> None:
    if not isinstance(v, dict):
        raise UserError(f"{path}: expected an object, got {_kind(v)}")
    for k in ("percentile", "bins"):
        if k not in v:
            continue
        table = v[k]
        if not isinstance(table, dict):
            raise UserError(f"{path}.{k}: expected an object, got {_kind(table)}")
        for key, n in table.items():
            try:
                ok = math.isfinite(float(key)) and float(key) >= 0
            except ValueError:
                ok = False
            good = _number(n) and n >= 0 and (k != "bins" or _is_int(n))
            if not ok or not good:
                raise UserError(
                    f"{path}.{k}: entry {key!r}: {n!r} is not a {'count' if k == 'bins' else 'latency'}"
                )


def _usec_to_ns(block: Any, path: str) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise UserError(f"{path}: expected an object, got {_kind(block)}")
    out = {
        k: v * 1000 if k in ("min", "max", "mean", "stddev") and _number(v) else v for k, v in block.items()
    }
    if isinstance(block.get("percentile"), dict):
        out["percentile"] = {k: v * 1000 if _number(v) else v for k, v in block["percentile"].items()}
    if isinstance(block.get("bins"), dict):
        out["bins"] = {_scaled_key(k): v for k, v in block["bins"].items()}
    return out


def _scaled_key(k: str) -> str:
    try:
        return str(int(float(k) * 1000))
    except (ValueError, OverflowError):
        return k


def _has_bins(j: Mapping[str, Any]) -> bool:
    return any(isinstance(j.get(d), dict) and "bins" in j[d].get("clat_ns", {}) for d in DIRECTIONS)


def _options(v: Any, path: str) -> dict[str, str]:
    """fio's options as it prints them: names to strings (a number is taken as its text)."""
    if not isinstance(v, dict):
        raise UserError(f"{path}: expected an object of options, got {_kind(v)}")
    out = {}
    for k, x in v.items():
        if (
            isinstance(x, bool)
            or not isinstance(x, (str, int, float))
            or (isinstance(x, float) and not math.isfinite(x))
        ):
            raise UserError(f"{path}.{k}: expected an option's text, got {_kind(x)}")
        out[k] = x if isinstance(x, str) else str(x)
    return out


def _field(j: Mapping[str, Any], k: str, path: str, typ: type, default: Any = None) -> Any:
    v = j.get(k, default)
    if not isinstance(v, typ):
        raise UserError(f"{path}.{k}: expected {typ.__name__}, got {_kind(v)}")
    return v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _MAX_INT


def _whole(j: Mapping[str, Any], k: str, path: str, default: int | None = None) -> int:
    v = j.get(k, default)
    if not _is_int(v):
        raise UserError(f"{path}.{k}: expected a whole number ≥ 0, got {_kind(v)}")
    return int(v)


def _number(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool) and abs(v) < _MAX_INT) or (
        isinstance(v, float) and math.isfinite(v)
    )


def _kind(v: Any) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, (dict, list)):
        return type(v).__name__
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
