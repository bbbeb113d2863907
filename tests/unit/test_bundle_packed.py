"""Packed bundles (schema_version 3): every run comes back whole and lands in a store as a
plain bundle's would; what a run carries is checked as it is read (a damaged blob, a
document whose ref is not its text, a kind never carried: one UserError naming the run),
and the workers that read several files give what one process gives."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from iowall.actions.selection import collect_runs
from iowall.bundle import files as b
from iowall.bundle import pool as bundle_pool
from iowall.model import Metric, Run
from iowall.store import Store, codec, ingest
from iowall.vocab.errors import UserError

from .test_bundle import fill, make_run


def _packed(tmp_path: Path, runs: list[Run], name: str = "p.json") -> tuple[str, dict[str, Any]]:
    path = str(tmp_path / name)
    b.write_bundle(runs, path, packed=True)
    return path, json.loads(Path(path).read_text())


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "bad.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_packed_round_trip_and_shape(tmp_path: Path, store_url: str) -> None:
    runs = collect_runs(fill(store_url), [])
    path, doc = _packed(tmp_path, runs)
    assert doc["schema_version"] == b.PACKED_VERSION == 3 and doc["format"] == "iowall-bundle"
    assert b.read_bundle(path) == runs  # every field, id = source_id, uuid kept
    first, second = doc["runs"][0], doc["runs"][1]
    assert set(first["docs"]) == {first["env"], first["bed"]}  # carried once, by the first
    assert second["bed"] == first["bed"] and first["bed"] not in second["docs"]
    assert len(first["kinds"]) == 2 and second["kinds"] == {}
    # a later environment of the same host is a delta against the first one kept whole
    later = [r for r in doc["runs"] if r["docs"] and r["env"] != first["env"]]
    assert later and later[0]["docs"][later[0]["env"]][0] == codec.DOC_DELTA
    # smaller than the plain bundle of the same runs
    plain = tmp_path / "plain.json"
    b.write_bundle(runs, str(plain))
    assert Path(path).stat().st_size < plain.stat().st_size


def test_packed_import_stores_as_plain(tmp_path: Path, store_url: str, store_url2: str) -> None:
    runs = collect_runs(fill(store_url), [])
    packed, _ = _packed(tmp_path, runs)
    plain = str(tmp_path / "plain.json")
    b.write_bundle(runs, plain)
    dst = Store(store_url2)
    got = ingest.import_runs(dst, b.read_models(packed), pack=b.pack_item)
    assert got == (4, 0)
    assert ingest.import_runs(dst, b.read_models(packed), pack=b.pack_item) == (0, 4)
    assert ingest.import_runs(dst, b.read_models(plain), pack=b.pack_item) == (0, 4)
    for r in runs:
        (row,) = [x for x in dst.runs() if x.uuid == r.uuid]
        back = dst.get_run(row.id or 0)
        assert dataclasses.replace(back, id=None) == dataclasses.replace(r, id=None)
        assert back.fingerprint() == r.fingerprint()


def test_metrics_rows_kept_as_they_came_into_an_empty_store(tmp_path: Path) -> None:
    runs = [make_run("base", "6.18.0", j, 1e9 + j) for j in (1, 2, 3)]
    path, doc = _packed(tmp_path, runs)
    dst = Store(str(tmp_path / "d.db"))
    ingest.import_runs(dst, b.read_models(path), pack=b.pack_item)
    with dst.engine.connect() as c:
        kept = [bytes(d) for (d,) in c.exec_driver_sql("SELECT data FROM run_metrics ORDER BY run_id")]
    assert kept == [base64.b64decode(r["metrics"][1]) for r in doc["runs"]]
    # a store that numbers the kinds otherwise: each row written again from the carried values
    other = Store(str(tmp_path / "o.db"))
    other.add_run(dataclasses.replace(make_run("x", "6.1", 9, 5.0), metrics=(Metric("first", 1.0, "B/s"),)))
    assert ingest.import_runs(other, b.read_models(path), pack=b.pack_item) == (3, 0)
    # (in the order of this store's kind ids, as every row written here)
    assert [set(other.get_run(i).metrics) for i in (2, 3, 4)] == [set(r.metrics) for r in runs]
    with other.engine.connect() as c:
        again = [bytes(d) for (d,) in c.exec_driver_sql("SELECT data FROM run_metrics WHERE run_id > 1")]
    assert again and not set(again) & set(kept)


def test_negative_zero_stored_as_zero(tmp_path: Path) -> None:
    run = dataclasses.replace(make_run("base", "6.18.0", 1, 1e9), metrics=(Metric("m", 1.0, "B/s"),))
    path, doc = _packed(tmp_path, [run])
    doc["runs"][0]["metrics"][1] = _b64(codec.pack_metrics([1], [-0.0])[1])
    (item,) = b.read_models(_write(tmp_path, doc))
    p = b.pack_item(item)
    assert p.kept_metrics is None and str(p.metrics[0][1]) == "0.0"


def _damaged(doc: dict[str, Any], how: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    r0, r1 = doc["runs"][0], doc["runs"][1]
    env = r0["docs"][r0["env"]]
    if how == "not base64":
        r0["series"][0][1] = "***"
    elif how == "ref":
        text = codec.unpack_doc(env[0], base64.b64decode(env[1])).replace("box", "b0x")
        env[1] = _b64(codec.pack_doc(text)[2])
    elif how == "doc unreadable":
        env[1] = _b64(b"not zlib")
    elif how == "doc not an object":
        ref, enc, data = codec.pack_doc("[1, 2]")
        r0["docs"] = {ref: [enc, _b64(data)], r0["bed"]: r0["docs"][r0["bed"]]}
        r0["env"] = ref
    elif how == "env not carried":
        r0["env"] = "0" * 32
    elif how == "doc carried twice":
        r1["docs"][r0["env"]] = env
    elif how == "delta base missing":
        r0["docs"][r0["env"]] = [codec.DOC_DELTA, _b64(b"f" * 32 + b"xx")]
    elif how == "kind missing":
        r0["kinds"] = {}
    elif how == "kind changed":
        r1["kinds"] = {"1": ["other", "s", "lower"]}
    elif how == "kind id":
        r0["kinds"] = {"x" + k: v for k, v in r0["kinds"].items()}
    elif how == "metric twice":
        r0["kinds"]["2"] = [r0["kinds"]["1"][0], "MB", "higher"]
    elif how == "metrics unreadable":
        r0["metrics"][1] = _b64(zlib.compress(b"\x05\x00\x00\x00"))
    elif how == "series samples":
        r0["series"][0][1] = _b64(zlib.compress(b'[["cpu","sys","share",[[0,"1"]]]]'))
    elif how == "series twice":
        r0["series"][0][1] = _b64(zlib.compress(b'[["cpu","sys","share",[]],["cpu","sys","x",[]]]'))
    elif how == "series name":
        r0["series"][0][1] = _b64(zlib.compress(json.dumps([["cpu", "n" * 129, "s", []]]).encode()))
    elif how == "artifact unreadable":
        r0["artifacts"][0][2:] = [codec.ZLIB, "", _b64(b"\x00\x01")]
    elif how == "artifact encoding":
        r0["artifacts"][0][2] = "gzip"
    elif how == "artifact twice":
        r0["artifacts"][1][0] = r0["artifacts"][0][0]
    elif how == "uuid twice":
        r1["uuid"] = r0["uuid"]
    elif how == "label":
        r0["label"] = "x\x00"
    return doc


DAMAGE = {
    "not base64": "runs[0].series[0]: not base64",
    "ref": "runs[0].docs[",
    "doc unreadable": "runs[0].docs[",
    "doc not an object": "runs[0].env: document",
    "env not carried": "runs[0].env: document '000",
    "doc carried twice": "carried by an earlier run already",
    "delta base missing": "a delta whose base",
    "kind missing": "runs[0].metrics: kind 1 is not carried",
    "kind changed": "runs[1].kinds['1']: an earlier run's kind 1 is",
    "kind id": "not a kind id",
    "metric twice": "runs[0].metrics: ",
    "metrics unreadable": "runs[0].metrics: unreadable",
    "series samples": "runs[0].series[0]: not series as the store keeps them",
    "series twice": "runs[0].series[0]: cpu/sys appears twice",
    "series name": "series.name is 129 characters long",
    "artifact unreadable": "runs[0].artifacts[0]: unreadable",
    "artifact encoding": "runs[0].artifacts[0]: encoding 'gzip'",
    "artifact twice": "runs[0].artifacts[1]: ",
    "uuid twice": "runs[1].uuid: ",
    "label": "NUL character",
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_damaged_packed_runs_refused_with_one_line(tmp_path: Path, how: str) -> None:
    runs = [make_run("base", "6.18.0", 1, 1e9), make_run("base", "6.18.1", 2, 2e9)]
    _, doc = _packed(tmp_path, runs)
    path = _write(tmp_path, _damaged(doc, how))
    with pytest.raises(UserError) as e:
        b.read_models(path)
    msg = str(e.value)
    assert msg.startswith(f"bundle {path}: ") and "\n" not in msg
    assert DAMAGE[how] in msg


def test_workers_read_as_one_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [
        _packed(tmp_path, [make_run("base", f"6.{i}", j, 1e9 * j) for j in (1, 2)], f"p{i}.json")[0]
        for i in range(3)
    ]
    plain = str(tmp_path / "plain.json")
    b.write_bundle([make_run("x", "6.9", 1, 5.0)], plain)
    files.append(plain)
    serial = _read_all(files, workers=1)
    monkeypatch.setattr(bundle_pool, "PARALLEL_MIN_BYTES", 0)
    parallel = _read_all(files, workers=2)
    assert [p.row for p in parallel] == [p.row for p in serial] and len(serial) == 7
    assert [(p.metrics, p.series, p.artifacts, p.docs) for p in parallel] == [
        (p.metrics, p.series, p.artifacts, p.docs) for p in serial
    ]
    bad = _write(tmp_path, {"format": "iowall-bundle", "schema_version": 3})
    with pytest.raises(UserError, match=f"^bundle {bad}: created_at: missing"):
        _read_all([*files, bad], workers=2)
    store = Store(f"sqlite:///{tmp_path / 'iowall.db'}")  # the good files written, then rolled back
    parts = (
        [p for p in part if type(p).__name__ == "Packed"]
        for _, part in bundle_pool.packed_parts([*files, bad])
    )
    with pytest.raises(UserError, match=f"^bundle {bad}: created_at: missing"):
        ingest.import_parts(store, parts)
    assert store.count() == 0
    assert ingest.import_parts(store, [[p for p in parallel if type(p).__name__ == "Packed"]]) == 7


def test_one_large_file_is_shared_by_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One packed file read by slices on two processes gives the rows one process reads, and
    names the run one process would name when several fail: the first in order, though the
    slices' first pass (what runs carry) finds a later one first."""
    runs = [make_run("base", f"6.{j % 3}", j, 1e9 * j) for j in range(1, 12)]
    path, doc = _packed(tmp_path, runs, "big.json")
    serial = _read_all([path], workers=1)
    monkeypatch.setattr(bundle_pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(bundle_pool, "SLICE", 2)
    shared = _read_all([path], workers=2)
    assert len(shared) == len(runs) and [p.row for p in shared] == [p.row for p in serial]
    assert [(list(p.metrics), p.series, p.artifacts, p.docs, p.kept_metrics) for p in shared] == [
        (list(p.metrics), p.series, p.artifacts, p.docs, p.kept_metrics) for p in serial
    ]
    late = copy.deepcopy(doc)  # run 8 redefines a kind: found by the first pass
    late["runs"][8]["kinds"] = {"1": ["other", "s", "lower"]}
    early = copy.deepcopy(late)  # and run 3's series cannot be read: found by the second
    early["runs"][3]["series"] = [["nope", ""]]
    for damaged, run in ((late, 8), (early, 3)):
        f = _write(tmp_path, damaged)
        with pytest.raises(UserError) as one:
            _read_all([f], workers=1)
        with pytest.raises(UserError) as two:
            _read_all([f], workers=2)
        assert str(two.value) == str(one.value) and f"runs[{run}]." in str(one.value)


_WATCH_SUBMIT = """
import json, sys
from iowall.bundle import workers as bundle_workers
seen = []
submit = bundle_workers.ProcessPoolExecutor.submit
def watched(self, *a, **k):
    seen.append("sqlalchemy" in sys.modules)
    return submit(self, *a, **k)
bundle_workers.ProcessPoolExecutor.submit = watched
from iowall.cli.main import main
rc = main(["import", "--db", sys.argv[1], *sys.argv[2:]])
print(json.dumps([rc, seen, "sqlalchemy" in sys.modules]))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: the files are read in the one process")
def test_the_workers_read_before_the_writer_is_imported(tmp_path: Path) -> None:
    """``iowall import`` forks its readers before it imports SQLAlchemy (the writer), which it
    imports while they read: the reading needs none of it (row_checks is plain data)."""
    files = [_packed(tmp_path, [make_run("base", f"6.{i}", 1, 1e9)], f"p{i}.json")[0] for i in range(2)]
    cp = subprocess.run(
        [sys.executable, "-c", _WATCH_SUBMIT, str(tmp_path / "s.db"), *files],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(b.__file__).parents[2])},
    )
    rc, seen, at_end = json.loads(cp.stdout.splitlines()[-1])
    assert rc == 0 and at_end and seen == [False, False], cp.stderr
    assert "imported 2 runs" in cp.stdout


def test_plain_runs_the_store_has_are_not_packed_again(tmp_path: Path, store_url: str) -> None:
    runs = collect_runs(fill(store_url), [])
    plain = str(tmp_path / "plain.json")
    b.write_bundle([*runs, make_run("new", "6.9", 1, 5.0)], plain)
    got = _read_all([plain], url=store_url)
    assert [type(p).__name__ for p in got] == ["Present"] * 4 + ["Packed"]
    assert [p.uuid for p in got] == [*(r.uuid for r in runs), got[-1].uuid]
    assert ingest.import_parts(Store(store_url), [[p for p in got if type(p).__name__ == "Packed"]]) == 1
    nowhere = tmp_path / "none.db"  # no store there: asked nothing, made nothing
    assert all(type(p).__name__ == "Packed" for p in _read_all([plain], url=f"sqlite:///{nowhere}"))
    assert not nowhere.exists()


def test_a_blob_that_inflates_past_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iowall.bundle import packed as bundle_packed

    _, doc = _packed(tmp_path, [make_run("base", "6.18.0", 1, 1e9)])
    big = json.dumps([["cpu", "sys", "share", [[float(i), 0.5] for i in range(400)]]]).encode()
    doc["runs"][0]["series"][0][1] = _b64(zlib.compress(big, 9))  # 6 KB of samples from a few hundred bytes
    path = _write(tmp_path, doc)
    assert len(b.read_models(path)) == 1  # under the cap: read
    monkeypatch.setattr(bundle_packed, "INFLATE_MAX", 1000)
    with pytest.raises(UserError, match=r"runs\[0\]\.series\[0\]: unreadable \(inflates past 1000 bytes\)"):
        b.read_models(path)
    assert codec.inflate(zlib.compress(big), None) == big  # the store's reads: no cap
    with pytest.raises(zlib.error):
        codec.inflate(zlib.compress(big)[:-9], 10_000)  # truncated: as zlib.decompress says


def _read_all(paths: list[str], **kw: Any) -> list[Any]:
    """Every run of ``paths`` as ``iowall import`` reads them (``packed_parts``), in order."""
    return [p for _, part in bundle_pool.packed_parts(paths, **kw) for p in part]
