"""Fuzz ``iowall import-fio FILE`` (1,000 files in `make test`, 10,000 in `make fuzz`: fio's
JSON, json+ and fio --client output made by the test with the real fio, mutated in shape and
in text, with text around it, raw bytes): never a traceback; a rejected file is one error
line and adds nothing; an accepted one adds the runs it says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from tests.fio_outputs import fio_servers, job_file, run_clients, run_fio

from .harness import fuzz_import
from .mutate import EDGE_FLOATS, EDGE_INTS, EDGE_TEXT, mutated, text_edits

pytestmark = pytest.mark.fuzz

KEYS = [
    "jobs",
    "client_stats",
    "global options",
    "job options",
    "jobname",
    "groupid",
    "error",
    "read",
    "write",
    "trim",
    "io_bytes",
    "io_kbytes",
    "bw_bytes",
    "bw",
    "iops",
    "runtime",
    "total_ios",
    "clat_ns",
    "clat",
    "lat_ns",
    "slat_ns",
    "percentile",
    "bins",
    "usr_cpu",
    "sys_cpu",
    "hostname",
    "port",
    "fio version",
    "timestamp",
    "timestamp_ms",
    "disk_util",
    "50.000000",
    "99.000000",
]
plausible = st.one_of(
    st.sampled_from(EDGE_INTS),
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(EDGE_TEXT),
    st.sampled_from([0, 1, 2, 4096, "All clients", "127.0.0.1", "fio-3.33", "4k", True, None]),
    st.dictionaries(
        st.sampled_from(["100", "4256", "1e3", "-1", "x"]),
        st.sampled_from([0, 1, -1, 1.5, 2**64]),
        max_size=3,
    ),
)
RAW = [
    b"",
    b"{}",
    b"[]",
    b"null",
    b"{" * 50_000,
    b'{"jobs": ' + b"[" * 50_000,
    b'{"jobs": [{"read": {"io_bytes": 1e999}}]}',
    b"\xff\xfe{",
    b'{"jobs": NaN}',
]


def seeds(tmp: Path) -> list[Any]:
    """Real fio output: two job files as json, one as json+, and fio --client output."""
    out = [json.loads(run_fio(job_file(tmp, n))) for n in ("grouped", "perjob")]
    out.append(json.loads(run_fio(job_file(tmp, "perjob", "p"), "json+")))
    with fio_servers(["127.0.0.1"]) as ends:
        data = run_clients(ends, [job_file(tmp, "grouped", "c")])
    out.append(json.loads(data[data.index(b"\n{") + 1 :]))
    return out


@st.composite
def fio_files(draw: st.DrawFn, docs: list[Any]) -> tuple[str, bytes]:
    how = draw(
        st.sampled_from(["seed", "mutated", "mutated", "mutated", "mutated+text", "text", "around", "raw"])
    )
    if how == "raw":
        return how, draw(st.one_of(st.sampled_from(RAW), st.binary(max_size=100)))
    doc = draw(st.sampled_from(docs))
    if how.startswith("mutated"):
        doc = draw(mutated(doc, KEYS, plausible))
    # one value per line as fio writes it, for the line edits; no indent: with one, json
    # encodes in Python (6 s of every 38 s of this fuzzer), without, in C
    text = json.dumps(doc, separators=(",\n", ": "), allow_nan=True, default=str)
    if how == "around":
        return how, (draw(st.text(max_size=40)) + "\n" + text + "\n" + draw(st.text(max_size=40))).encode(
            errors="surrogatepass"
        )
    if how in ("text", "mutated+text"):
        return how, draw(text_edits(text))
    return how, text.encode()


def test_fio_json_importer_fuzz(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    docs = seeds(tmp_path)
    fuzz_import("import-fio", fio_files(docs), tmp_path, tmp_path_factory.getbasetemp(), "fio-json")
