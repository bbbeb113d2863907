"""The edge models of bundles (pydantic): the shape of each schema version a bundle can have,
strict, unknown keys refused; bundle/files.py reads, migrates and writes with them."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _uuid_text(v: str) -> str:
    try:
        ok = len(v) == 36 and str(uuidlib.UUID(v)) == v.lower()
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("expected a UUID such as 0b7c3f1e-5d2a-4c8e-9f10-2a3b4c5d6e7f")
    return v


def _iso8601(v: str) -> str:
    try:
        dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("expected an ISO 8601 time such as 2025-01-31T12:00:00+00:00") from None
    return v


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


Uuid = Annotated[str, AfterValidator(_uuid_text)]
When = Annotated[str, AfterValidator(_iso8601)]
Status = Literal["ok", "failed", "interrupted", "filled"]
Pair = Annotated[list[float], Field(min_length=2, max_length=2)]
# Text limited to what the store's columns hold (see store/schema.py).
Name64 = Annotated[str, Field(min_length=1, max_length=64)]
Name128 = Annotated[str, Field(min_length=1, max_length=128)]
Label = Annotated[str, Field(max_length=128)]
Unit = Annotated[str, Field(max_length=32)]
Batch = Annotated[str, Field(max_length=36)]


class ArtifactModel(StrictModel):
    """A raw artifact (v1 and v2): fio's JSON, engine output, probe data, as text."""

    name: Name128
    content_type: Name64
    body: str


class MetricV2(StrictModel):
    name: Name128
    value: float
    unit: Unit
    direction: Literal["higher", "lower"]


class SeriesV2(StrictModel):
    probe: Name64
    name: Name128
    unit: Unit
    samples: list[Pair]


class RunBase(StrictModel):
    """What a run of v2 and v3 holds alike: its identity, point, status and times."""

    uuid: Uuid
    source_id: int | None
    label: Label
    recipe: Name64
    point: dict[str, Any]
    status: Status
    started_at: float
    finished_at: float
    batch: Batch
    repeat_index: Annotated[int, Field(ge=0)]
    error: str
    notes: list[str]
    fingerprint: str


class RunV2(RunBase):
    env: dict[str, Any]
    bed: dict[str, Any]
    metrics: list[MetricV2]
    series: list[SeriesV2]
    artifacts: list[ArtifactModel]


class SourceV2(StrictModel):
    host: str
    store: str


class BundleV2(StrictModel):
    format: Literal["iowall-bundle"]
    schema_version: Literal[2]
    created_at: When
    iowall_version: str
    source: SourceV2
    runs: list[RunV2]


class RunV1(StrictModel):
    uuid: Uuid
    id: int | None
    label: Label
    recipe: Name64
    params: dict[str, Any]
    status: Status
    started_at: float
    finished_at: float
    batch: Batch
    repeat_index: Annotated[int, Field(ge=0)]
    error: str
    notes: list[str]
    env: dict[str, Any]
    bed: dict[str, Any]
    metrics: dict[str, float]
    units: dict[str, Unit]
    lower_is_better: list[str]
    artifacts: list[ArtifactModel]


class BundleV1(StrictModel):
    format: Literal["iowall-bundle"]
    schema_version: Literal[1]
    created_at: When
    iowall_version: str
    runs: list[RunV1]


#: A blob as the store keeps it: (encoding, base64 of its bytes).
Blob = tuple[str, str]


class RunV3(RunBase):
    """A run of a packed bundle: v2's fields, with its environment and bed named by ref, its
    documents, metric kinds, metrics, series and artifacts as the store keeps them."""

    env: str
    bed: str
    docs: dict[str, Blob]
    kinds: dict[str, tuple[Name128, Unit, Literal["higher", "lower"]]]
    metrics: Blob | None
    series: list[Blob]
    artifacts: list[tuple[Name128, Name64, str, str, str | None]]


class BundleV3(StrictModel):
    format: Literal["iowall-bundle"]
    schema_version: Literal[3]
    created_at: When
    iowall_version: str
    source: SourceV2
    runs: list[RunV3]
