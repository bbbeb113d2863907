"""Fuzz ``iowall import FILE`` (1,000 files in `make test`, 10,000 in `make fuzz`: a bundle
exported from a real store, plain and packed, a version 1 bundle, all mutated in shape and
in text, raw text and bytes): never a traceback; a rejected file is one error line and adds nothing (all or
nothing); an accepted one adds what it says."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from iowall.bundle.files import MODELS

from ..unit.test_bundle import V1_DOC
from . import stored_runs
from .harness import fuzz_import
from .mutate import EDGE_FLOATS, EDGE_INTS, EDGE_TEXT, mutated, text_edits

pytestmark = pytest.mark.fuzz


KEYS = sorted(
    {k for m in MODELS.values() for k in m.model_fields}
    | {
        k
        for m in MODELS.values()
        for f in m.model_fields.values()
        for k in getattr(getattr(f.annotation, "__args__", [None])[0], "model_fields", {})
    }
    | {
        "format",
        "schema_version",
        "runs",
        "name",
        "value",
        "unit",
        "direction",
        "probe",
        "samples",
        "content_type",
        "body",
        "host",
        "store",
        "extra",
    }
)
plausible = st.one_of(
    st.sampled_from(EDGE_INTS),
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(EDGE_TEXT),
    st.sampled_from(
        [
            "iowall-bundle",
            "ok",
            "failed",
            "interrupted",
            "filled",
            "higher",
            "lower",
            "2025-01-31T12:00:00Z",
            "2025-13-01",
            "B/s",
            "x" * 129,
        ]
    ),
    st.sampled_from([0, 1, 2, 3, "2", 2.0, True, None]),
    st.builds(lambda: str(uuid.uuid4())),
    st.just(str(uuid.UUID(int=0)).upper()),
    st.lists(st.sampled_from([0.0, 1.0, float("nan"), float("inf"), 10**400, "1"]), max_size=3),
    st.builds(lambda n: [[float(i), 1.0] for i in range(n)], st.sampled_from([0, 1, 500])),
)


def _text(doc: Any) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=True, default=str)


RAW = [
    b"",
    b"null",
    b"[]",
    b"{}",
    b'"iowall-bundle"',
    b"[" * 100_000,
    b'{"a":' * 50_000,
    b"NaN",
    b"\xff\xfe{",
    b'{"format": "iowall-bundle", "schema_version": 1e999}',
]


@st.composite
def bundle_files(draw: st.DrawFn, seeds: list[Any]) -> tuple[str, bytes]:
    how = draw(st.sampled_from(["seed", "mutated", "mutated", "mutated", "mutated+text", "text", "raw"]))
    if how == "raw":
        return how, draw(
            st.one_of(st.sampled_from(RAW), st.binary(max_size=100), st.text(max_size=100).map(str.encode))
        )
    doc = draw(st.sampled_from(seeds))
    if how in ("mutated", "mutated+text"):
        doc = draw(mutated(doc, KEYS, plausible))
    text = _text(doc)
    if how in ("text", "mutated+text"):
        return how, draw(text_edits(text))
    return how, text.encode()


def test_bundle_reader_fuzz(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    url = stored_runs.build(tmp_path / "src.db")
    seed = stored_runs.export(url, tmp_path / "seed.json")
    packed = stored_runs.export(url, tmp_path / "packed.json", packed=True)
    one_run = {**copy.deepcopy(seed), "runs": seed["runs"][:1]}
    seeds = [seed, one_run, packed, copy.deepcopy(V1_DOC)]
    fuzz_import("import", bundle_files(seeds), tmp_path, tmp_path_factory.getbasetemp(), "bundle")
