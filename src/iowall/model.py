"""Frozen dataclasses that carry iowall's data between layers: points, runs, metrics, env.

Workloads and probes produce them, the store persists them, analysis reads them.
Nothing here touches the database or the terminal.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .vocab.errors import UserError

#: The commit or build id runs are recorded with (``--commit`` sets it): history and the
#: bisect window then speak in commits, not only kernel release strings. Here, not in
#: ``sysinfo`` (which reads it): every command's options name it, and sysinfo imports
#: platform, socket and the cgroup readers that listing runs does not need.
COMMIT_ENV = "IOWALL_COMMIT"

Direction = Literal["higher", "lower"]
Status = Literal["ok", "failed", "interrupted", "filled"]

#: Statuses whose metrics describe a completed measurement.
MEASURED_STATUSES: tuple[Status, ...] = ("ok", "filled")


@dataclass(frozen=True, slots=True)
class Metric:
    """One measured number with its unit and which way is better."""

    name: str
    value: float
    unit: str
    direction: Direction = "higher"


@dataclass(frozen=True)
class Point:
    """One set of parameters a workload runs with; ``params`` is JSON-able and sorted."""

    recipe: str
    params: Mapping[str, Any]

    def key(self) -> str:
        """A stable text key for the point (recipe + sorted params)."""
        return self.recipe + ":" + json.dumps(dict(self.params), sort_keys=True)

    def describe(self) -> str:
        """Short human form, e.g. ``write buffered jobs=4``."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))


#: The artifact holding a run's CPU profile: folded stacks, gzip, base64 (``profile`` probe).
PROFILE_ARTIFACT = "profile.folded.gz"
#: The content type of an artifact whose body is text compressed with gzip, then base64
#: (bodies are text in the store and in bundles).
GZIP_BASE64 = "application/gzip+base64"


def gunzip_text(body: str) -> str:
    """A ``GZIP_BASE64`` body's text (undecodable bytes replaced)."""
    return gzip.decompress(base64.b64decode(body)).decode(errors="replace")


@dataclass(frozen=True)
class Artifact:
    """Raw output kept with a run (fio's JSON, engine JSON, probe data)."""

    name: str
    content_type: str
    body: str

    def text(self) -> str:
        """The body as text: a compressed one (``GZIP_BASE64``) unpacked, others as stored."""
        return gunzip_text(self.body) if self.content_type == GZIP_BASE64 else self.body


@dataclass(frozen=True)
class Series:
    """A time series sampled during a run: ``(t_seconds, value)`` pairs."""

    probe: str
    name: str
    unit: str
    samples: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Run:
    """One execution of one point, as stored: metrics, raw data, environment and status."""

    point: Point
    label: str
    status: Status
    started_at: float
    finished_at: float
    metrics: tuple[Metric, ...] = ()
    env: Mapping[str, Any] = field(default_factory=dict)
    bed: Mapping[str, Any] = field(default_factory=dict)
    artifacts: tuple[Artifact, ...] = ()
    series: tuple[Series, ...] = ()
    batch: str = ""
    repeat_index: int = 0
    error: str = ""
    notes: tuple[str, ...] = ()
    id: int | None = None
    #: Stable identity across stores and machines (bundles); the store assigns one if empty.
    uuid: str = ""

    def metric(self, name: str) -> float | None:
        """The value of metric ``name`` or None."""
        for m in self.metrics:
            if m.name == name:
                return m.value
        return None

    def fingerprint(self) -> str:
        """What makes two runs comparable: recipe, point params, bed facts, host (not kernel)."""
        return fingerprint(self.point, self.bed, self.env)


#: Bed facts that identify the bed's shape; sizes of images and free space do not.
FINGERPRINT_BED_KEYS = ("kind", "fs", "mkfs_opts", "mount_opts", "block_size", "backing")
#: Host facts that make runs comparable; the kernel is deliberately absent.
FINGERPRINT_HOST_KEYS = ("cpu_model", "cpu_count", "mem_total_bytes")


#: The longest label and recipe name every store keeps (its runs.label and runs.recipe).
LABEL_MAX, RECIPE_MAX = 128, 64


def check_label(label: str, what: str = "--label") -> str:
    """``label`` if every store can keep it (at most LABEL_MAX characters, no control
    characters), else a UserError, so a long measurement never fails at its store write."""
    if len(label) > LABEL_MAX:
        raise UserError(f"{what} is {len(label)} characters long: at most {LABEL_MAX}")
    if any(ord(c) < 32 or ord(c) == 127 for c in label):
        raise UserError(f"{what} {label!r} holds a control character")
    return label


def fingerprint(point: Point, bed: Mapping[str, Any], env: Mapping[str, Any]) -> str:
    """SHA-1 over recipe, params, bed shape and host shape (its name when its shape is
    unknown); the kernel is what gets compared."""
    host = env.get("host", {}) if isinstance(env.get("host"), Mapping) else {}
    shape: dict[str, Any] = {k: host.get(k) for k in FINGERPRINT_HOST_KEYS}
    if not any(shape.values()) and host.get("hostname"):
        # a host whose shape is unknown (runs imported from fio's JSON) is known by its name
        shape = {"hostname": host["hostname"]}
    doc = {
        "recipe": point.recipe,
        "params": dict(point.params),
        "bed": {k: bed.get(k) for k in FINGERPRINT_BED_KEYS},
        "host": shape,
    }
    raw = json.dumps(doc, sort_keys=True, default=str).encode()
    return hashlib.sha1(raw).hexdigest()[:16]


#: Rules for the deciding metric, tried in order; within a rule the exact names listed come
#: first, then any other matching name, alphabetically (the store returns metrics sorted by
#: name, so the choice must not depend on their order).
_PRIMARY: tuple[tuple[tuple[str, ...], Callable[[str], bool]], ...] = (
    (("read_bw_bytes_per_s", "write_bw_bytes_per_s", "trim_bw_bytes_per_s"), lambda n: False),
    ((), lambda n: n.endswith("_bw_bytes_per_s")),  # e.g. inst1_write_bw_bytes_per_s
    (("memcopy_bytes_per_s",), lambda n: False),
    (("files_per_s", "create_files_per_s"), lambda n: n.endswith("_files_per_s")),
)


def could_be_primary(name: str) -> bool:
    """Whether ``primary_metric`` could choose a metric of this name (a run loaded with only
    such metrics has the primary metric it has whole)."""
    return any(name in names or match(name) for names, match in _PRIMARY)


def primary_metric(run: Run) -> Metric | None:
    """The one definition of a run's primary metric (``--repeat auto`` decides on it, ``runs``
    shows it, explain and the Why section judge by it): the point's main throughput, fio's
    read, write or trim bandwidth (in fio's order), else a per-instance ``*_bw_bytes_per_s``,
    else the memory-copy rate, else the engine's files/s (the create phase's for a multi-phase
    run). Probe metrics never decide."""
    by_name = {m.name: m for m in run.metrics}
    for names, match in _PRIMARY:
        for n in names:
            if n in by_name:
                return by_name[n]
        rest = sorted(n for n in by_name if match(n))
        if rest:
            return by_name[rest[0]]
    return None


def run_uuid(run: Run) -> str:
    """The run's uuid, or for a run never stored a UUID-5 of its content, so that writing the
    same run twice gives it the same identity."""
    if run.uuid:
        return run.uuid
    doc = {
        "point": run.point.key(),
        "label": run.label,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "batch": run.batch,
        "repeat_index": run.repeat_index,
        "env": dict(run.env),
        "bed": dict(run.bed),
        "metrics": [[m.name, m.value, m.unit] for m in run.metrics],
    }
    digest = hashlib.sha1(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, "iowall-run:" + digest))
