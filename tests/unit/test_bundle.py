"""Bundles: store → bundle → fresh store keeps every run whole; import is idempotent; old
schema versions migrate step by step; newer and malformed files are refused with one line."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from iowall.actions.selection import collect_runs, load, parse_selection
from iowall.bundle import files as b
from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.store import Store, codec, ingest
from iowall.store.packing import pack_run
from iowall.vocab.errors import UserError

FIO_JSON = json.dumps({"fio version": "fio-3.38", "jobs": [{"write": {"bw_bytes": 123}}]})


def make_run(label: str, kernel: str, jobs: int, bw: float, *, status: str = "ok", uuid: str = "") -> Run:
    return Run(
        point=Point("buffered-wall", {"rw": "write", "jobs": jobs, "direct": False}),
        label=label,
        status=status,
        started_at=1000.25 + jobs,
        finished_at=1010.5 + jobs,  # type: ignore[arg-type]
        metrics=(Metric("write_bw_bytes_per_s", bw, "B/s"), Metric("wall_s", 10.25, "s", "lower")),
        env={
            "kernel": kernel,
            "host": {"hostname": "box", "cpu_model": "Xeon", "cpu_count": 2, "mem_total_bytes": 8 << 30},
            "sysctl": {"vm.dirty_ratio": 20},
        },
        bed={"kind": "ram", "fs": "xfs", "mkfs_opts": "-m reflink=0", "block_size": 4096},
        artifacts=(
            Artifact("fio.json", "application/json", FIO_JSON),
            Artifact("notes.txt", "text/plain", "ünïcode ✓\n"),
        ),
        series=(
            Series("cpu", "sys", "share", ((0.0, 0.5), (0.5, 0.625), (1.0, 0.75))),
            Series("flusher", "busy", "share", ((0.0, 0.0), (1.0, 1.0))),
        ),
        batch="batch-1",
        repeat_index=jobs % 2,
        error="" if status == "ok" else "fio died",
        notes=("first note", "second"),
        uuid=uuid,
    )


def fill(url: str) -> Store:
    s = Store(url)
    s.add_run(make_run("base", "6.18.0", 1, 1.5e9))
    s.add_run(make_run("base", "6.18.0", 2, 2.5e9))
    s.add_run(make_run("patched", "6.18.0-p", 1, 1.75e9))
    s.add_run(make_run("patched", "6.18.0-p", 2, 0.0, status="failed"))
    return s


def same(a: Run, c: Run) -> None:
    """Everything a run carries is equal, except the store id."""
    assert dataclasses.replace(a, id=None) == dataclasses.replace(c, id=None)
    assert a.fingerprint() == c.fingerprint()


def test_round_trip_store_bundle_fresh_store(tmp_path: Path, store_url: str, store_url2: str) -> None:
    src = fill(store_url)
    runs = collect_runs(src, [])
    assert [len(r.artifacts) for r in runs] == [2, 2, 2, 2]
    path = str(tmp_path / "out.json")
    assert b.write_bundle(runs, path, source={"store": src.url}) == 4

    back = b.read_bundle(path)
    assert back == runs  # id = source_id, uuid kept, every field equal
    dst = Store(store_url2)
    dst.add_run(make_run("local", "6.1", 9, 1.0))  # the new store assigns its own ids
    assert ingest.import_runs(dst, back) == (4, 0)
    for orig in runs:
        assert orig.id is not None and orig.uuid
        got = [r for r in dst.runs() if r.uuid == orig.uuid]
        assert len(got) == 1 and got[0].id != orig.id
        same(dst.get_run(got[0].id or 0), src.get_run(orig.id))


def test_bundle_document_shape(tmp_path: Path, store_url: str) -> None:
    s = fill(store_url)
    path = str(tmp_path / "x.json")
    b.write_bundle(
        collect_runs(s, ["ids=1"]), path, source={"host": "lab1", "store": "postgresql://me:s3cret@db/iowall"}
    )
    doc = json.loads(Path(path).read_text())
    assert doc["format"] == "iowall-bundle" and doc["schema_version"] == b.SCHEMA_VERSION == 2
    assert doc["source"] == {"host": "lab1", "store": "postgresql://me:***@db/iowall"}
    assert "s3cret" not in Path(path).read_text()
    r = doc["runs"][0]
    assert r["source_id"] == 1 and r["fingerprint"] == s.get_run(1).fingerprint()
    assert r["metrics"][0] == {"name": "wall_s", "value": 10.25, "unit": "s", "direction": "lower"}
    assert r["series"][0]["samples"][1] == [0.5, 0.625]
    assert r["artifacts"][0]["body"] == FIO_JSON
    assert b.migrate(doc)["runs"][0]["uuid"] == r["uuid"]


def test_import_twice_adds_nothing(tmp_path: Path, store_url: str, store_url2: str) -> None:
    path = str(tmp_path / "x.json")
    b.write_bundle(collect_runs(fill(store_url), []), path)
    dst = Store(store_url2)
    runs = b.read_bundle(path)
    # the same run twice in one import counts once
    assert ingest.import_runs(dst, runs + runs[:1]) == (4, 1)
    assert ingest.import_runs(dst, runs) == (0, 4)
    assert dst.count() == 4


def test_models_pack_into_the_rows_runs_do(tmp_path: Path, store_url: str, store_url2: str) -> None:
    """``import`` packs a bundle's validated models straight into rows (``pack_model``): the
    rows, metrics, artifacts and series of ``pack_run`` of the same runs (what is written of
    them: ``write_group`` is one for both); importing the models twice adds nothing."""
    odd = dataclasses.replace(
        make_run("odd", "6.1", 3, float("nan")),
        metrics=(Metric("zero", -0.0, "B/s"), Metric("n", float("nan"), "B/s"), Metric("i", 7.0, "ops")),
        series=(Series("cpu", "sys", "share", ((0.0, -0.0), (1.0, float("inf")))),),
    )
    path = str(tmp_path / "x.json")
    b.write_bundle([*collect_runs(fill(store_url), []), odd], path)
    models, runs = b.read_models(path), b.read_bundle(path)

    def text(rs: list[Run]) -> str:  # NaN-safe equality
        return json.dumps(
            sorted((dataclasses.replace(r, id=None) for r in rs), key=lambda r: r.uuid), default=str
        )

    assert text([b.to_run(m) for m in models]) == text(runs)
    for m, r in zip(models, runs, strict=True):
        got, want = b.pack_model(m, set()), pack_run(r, set())
        assert got.row == want.row and got.artifacts == want.artifacts
        assert json.dumps(got.metrics) == json.dumps(want.metrics)  # NaN-safe, -0.0 as 0.0 both
        assert [repr(codec.unpack_series(x["encoding"], x["data"])) for x in got.series] == [
            repr(codec.unpack_series(x["encoding"], x["data"])) for x in want.series
        ]
    dst = Store(store_url2)
    assert ingest.import_runs(dst, models, pack=b.pack_model) == (5, 0)
    assert ingest.import_runs(dst, models + models[:1], pack=b.pack_model) == (0, 6)
    assert sorted(r.uuid for r in dst.runs()) == sorted(r.uuid for r in runs)


def test_run_without_uuid_gets_a_stable_one(tmp_path: Path, store_url: str) -> None:
    r = make_run("x", "6.1", 1, 1.0)
    assert b.run_uuid(r) == b.run_uuid(dataclasses.replace(r)) != b.run_uuid(make_run("x", "6.1", 1, 2.0))
    p1, p2 = str(tmp_path / "1.json"), str(tmp_path / "2.json")
    b.write_bundle([r], p1)
    b.write_bundle([r], p2)
    dst = Store(store_url)
    assert ingest.import_runs(dst, b.read_bundle(p1)) == (1, 0)
    assert ingest.import_runs(dst, b.read_bundle(p2)) == (0, 1)


def test_store_keeps_given_uuid(store_url: str) -> None:
    s = Store(store_url)
    u = "0b7c3f1e-5d2a-4c8e-9f10-2a3b4c5d6e7f"
    rid = s.add_run(make_run("x", "6.1", 1, 1.0, uuid=u))
    rid2 = s.add_run(make_run("x", "6.1", 1, 1.0))
    assert s.get_run(rid).uuid == u
    assert len(s.get_run(rid2).uuid) == 36 and s.known_uuids([u, "nope"]) == {u}


def test_selection_of_a_bundle_file(tmp_path: Path, store_url: str) -> None:
    s = fill(store_url)
    path = str(tmp_path / "both.json")
    b.write_bundle(collect_runs(s, []), path)
    assert [r.id for r in load(None, parse_selection(f"{path}:ids=3"))] == [3]
    assert [r.label for r in load(None, parse_selection(f"{path}:label=base"))] == ["base"] * 2
    # re-exporting from a bundle passes its runs through whole
    again = collect_runs(None, [f"{path}:label=patched"])
    assert again == [r for r in b.read_bundle(path) if r.label == "patched"]


def test_collect_selections_dedupe_and_measured_only(store_url: str, store_url2: str) -> None:
    s = fill(store_url)
    assert [r.id for r in collect_runs(s, ["patched", "ids=1-3"])] == [3, 4, 1, 2]
    assert [r.id for r in collect_runs(s, ["patched"], measured_only=True)] == [3]
    assert [r.id for r in collect_runs(s, [], measured_only=True)] == [1, 2, 3]
    with pytest.raises(UserError, match="no runs to export"):
        collect_runs(Store(store_url2), [])


def test_write_is_atomic_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("old")
    b.write_bundle([make_run("x", "6.1", 1, 1.0)], str(path))
    assert json.loads(path.read_text())["runs"][0]["label"] == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    with pytest.raises(UserError, match=r"cannot write bundle .*/nodir/x.json: No such file"):
        b.write_bundle([], str(tmp_path / "nodir" / "x.json"))
    with pytest.raises(ValueError, match="host and store"):
        b.write_bundle([], str(path), source={"password": "x"})


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_stdout_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    r = make_run("x", "6.1", 1, 1.0, uuid="0b7c3f1e-5d2a-4c8e-9f10-2a3b4c5d6e7f")
    assert b.write_bundle([r], "-") == 1
    text = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert b.read_bundle("-") == [r]


# -- version 1 and migrations ----------------------------------------------------------------

V1_DOC: dict[str, Any] = {
    "format": "iowall-bundle",
    "schema_version": 1,
    "created_at": "2025-03-01T10:00:00Z",
    "iowall_version": "0.0.9",
    "runs": [
        {
            "uuid": "5f0e4c1a-8a57-4d7e-9d1c-0c6a1b2c3d4e",
            "id": 17,
            "label": "base",
            "recipe": "buffered-wall",
            "params": {"rw": "write", "jobs": 2},
            "status": "ok",
            "started_at": 1700000000.5,
            "finished_at": 1700000030,
            "batch": "b7",
            "repeat_index": 1,
            "error": "",
            "notes": ["from v1"],
            "env": {"kernel": "6.6.0", "host": {"hostname": "old"}},
            "bed": {"kind": "ram", "fs": "xfs"},
            "metrics": {"write_bw_bytes_per_s": 2147483648, "wall_s": 30.0},
            "units": {"write_bw_bytes_per_s": "B/s", "wall_s": "s"},
            "lower_is_better": ["wall_s"],
            "artifacts": [{"name": "fio.json", "content_type": "application/json", "body": "{}"}],
        }
    ],
}


def test_every_older_version_has_a_step_and_a_model() -> None:
    assert set(b.MIGRATIONS) == set(range(1, b.SCHEMA_VERSION))
    assert set(b.MODELS) == set(range(1, b.PACKED_VERSION + 1))  # packed (3): the form of 2


def test_v1_migrates_to_v2() -> None:
    doc = b.migrate(copy.deepcopy(V1_DOC))
    assert doc["schema_version"] == 2 and doc["source"] == {"host": "", "store": ""}
    r = doc["runs"][0]
    assert r["source_id"] == 17 and r["point"] == {"rw": "write", "jobs": 2} and r["series"] == []
    assert r["metrics"] == [
        {"name": "write_bw_bytes_per_s", "value": 2147483648.0, "unit": "B/s", "direction": "higher"},
        {"name": "wall_s", "value": 30.0, "unit": "s", "direction": "lower"},
    ]
    step = b.MIGRATIONS[1](copy.deepcopy(V1_DOC))
    assert step["schema_version"] == 2 and step["runs"][0]["fingerprint"] == r["fingerprint"]


def test_v1_file_reads_and_imports(tmp_path: Path, store_url: str) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(V1_DOC))
    (run,) = b.read_bundle(str(path))
    assert run.id == 17 and run.uuid == V1_DOC["runs"][0]["uuid"] and run.label == "base"
    assert run.metrics[1] == Metric("wall_s", 30.0, "s", "lower")
    assert run.fingerprint() == b.migrate(copy.deepcopy(V1_DOC))["runs"][0]["fingerprint"]
    s = Store(store_url)
    assert ingest.import_runs(s, [run]) == (1, 0)
    got = s.runs()[0]
    assert got.metric("write_bw_bytes_per_s") == 2147483648.0 and got.notes == ("from v1",)
    assert ingest.import_runs(s, b.read_bundle(str(path))) == (0, 1)


def test_bad_v1_is_named_as_v1() -> None:
    doc = copy.deepcopy(V1_DOC)
    del doc["runs"][0]["units"]["wall_s"]
    with pytest.raises(
        UserError, match=r"^x \(schema_version 1\): runs\[0\]\.units: no unit for metric 'wall_s'$"
    ):
        b.migrate(doc, name="x")


def test_newer_version_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    path.write_text(json.dumps({"format": "iowall-bundle", "schema_version": 7, "runs": []}))
    with pytest.raises(UserError) as e:
        b.read_bundle(str(path))
    assert str(e.value) == (f"bundle {path} has schema_version 7; this iowall reads up to 3: upgrade iowall")


def _v2() -> dict[str, Any]:
    r = make_run("x", "6.1", 1, 1.0, uuid="0b7c3f1e-5d2a-4c8e-9f10-2a3b4c5d6e7f")
    return b.bundle_doc([r])


def _set(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *head, last = path.split(".")
    cur: Any = doc
    for k in head:
        cur = cur[int(k)] if k.isdigit() else cur[k]
    if value is _DEL:
        del cur[last]
    else:
        cur[int(last) if last.isdigit() else last] = value
    return doc


_DEL = object()


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        (lambda d: [1, 2], r"not an iowall bundle"),
        (lambda d: _set(d, "format", "other"), r"not an iowall bundle"),
        (
            lambda d: _set(d, "schema_version", "2"),
            r"schema_version must be a whole number from 1 \(got '2'\)",
        ),
        (lambda d: _set(d, "schema_version", 0), r"schema_version must be a whole number"),
        (lambda d: _set(d, "runs", _DEL), r": runs: missing$"),
        (
            lambda d: _set(d, "runs.0.metrics.0.value", "fast"),
            r": runs\[0\]\.metrics\[0\]\.value: input should be a valid number \(got 'fast'\)$",
        ),
        (lambda d: _set(d, "runs.0.metrics.0.direction", "up"), r"runs\[0\]\.metrics\[0\]\.direction: "),
        (lambda d: _set(d, "runs.0.status", "great"), r"runs\[0\]\.status: input should be 'ok'"),
        (lambda d: _set(d, "runs.0.uuid", "abc"), r"runs\[0\]\.uuid: expected a UUID"),
        (
            lambda d: _set(d, "runs.0.series.0.samples.1", [1, 2, 3]),
            r"runs\[0\]\.series\[0\]\.samples\[1\]: ",
        ),
        (lambda d: _set(d, "runs.0.label", 5), r"runs\[0\]\.label: input should be a valid string \(got 5\)"),
        (lambda d: _set(d, "runs.0.extra", 1), r"runs\[0\]\.extra: unknown key$"),
        (lambda d: _set(d, "created_at", "yesterday"), r"created_at: expected an ISO 8601 time"),
        (
            lambda d: _set(d, "runs.0.metrics.1.name", "write_bw_bytes_per_s"),
            r"runs\[0\]\.metrics: 'write_bw_bytes_per_s' appears twice$",
        ),
        (lambda d: _set(d, "runs", d["runs"] * 2), r"runs\[1\]\.uuid: 0b7c3f1e-\S+ repeats runs\[0\]$"),
    ],
)
def test_malformed_documents(tmp_path: Path, edit: Any, expect: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(edit(_v2())))
    with pytest.raises(UserError, match=expect) as e:
        b.read_bundle(str(path))
    msg = str(e.value)
    assert msg.startswith(f"bundle {path}") and "\n" not in msg


@pytest.mark.parametrize(
    ("raw", "expect"),
    [
        (b"", r"not JSON: Expecting value at line 1 column 1$"),
        (b'{"format": "iowall-bundle",', r"not JSON: "),
        (b"\xff\xfe{}", r"not JSON: not UTF-8 text"),
    ],
)
def test_not_json(tmp_path: Path, raw: bytes, expect: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    with pytest.raises(UserError, match=expect):
        b.read_bundle(str(path))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^bundle .*nope.json: no such file$"):
        b.read_bundle(str(tmp_path / "nope.json"))
    with pytest.raises(UserError, match=r"cannot read"):
        b.read_bundle(str(tmp_path))


def test_the_documented_example_reads(tmp_path: Path) -> None:
    text = (Path(__file__).parents[2] / "docs" / "bundle-format.md").read_text()
    example = text.split("## Example", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.json"
    path.write_text(example)
    (run,) = b.read_bundle(str(path))
    assert run.fingerprint() == json.loads(example)["runs"][0]["fingerprint"]
    assert run.metric("write_bw_bytes_per_s") == 2415919104.0


def test_nan_metric_imports_and_round_trips(tmp_path: Path, store_url: str) -> None:
    # docs/bundle-format.md: a metric that is not a finite number is written NaN / Infinity
    run = dataclasses.replace(
        make_run("base", "6.18.0", 1, 1.5e9),
        uuid="",
        metrics=(
            Metric("write_bw_bytes_per_s", float("nan"), "B/s"),
            Metric("write_clat_p99_s", float("inf"), "s", "lower"),
            Metric("wall_s", 10.25, "s", "lower"),
        ),
    )
    path = str(tmp_path / "nan.json")
    b.write_bundle([run], path)
    assert '"value":NaN' in Path(path).read_text()
    dst = Store(store_url)
    assert ingest.import_runs(dst, b.read_bundle(path)) == (1, 0)
    (got,) = dst.runs()
    values = {m.name: m.value for m in got.metrics}
    assert math.isnan(values["write_bw_bytes_per_s"])
    assert values["write_clat_p99_s"] == float("inf") and values["wall_s"] == 10.25
    again = str(tmp_path / "again.json")
    b.write_bundle(collect_runs(dst, []), again)
    (back,) = b.read_bundle(again)
    assert math.isnan(back.metric("write_bw_bytes_per_s") or 0.0)
    assert ingest.import_runs(dst, b.read_bundle(again)) == (0, 1)


class _Blind(Store):
    """A store that does not see the runs already in it: what an import racing another
    import of the same runs sees between its check and its insert."""

    def known_uuids(self, uuids: Any) -> set[str]:
        return set()


def test_a_run_added_meanwhile_is_skipped_and_other_refusals_name_the_constraint(store_url: str) -> None:
    runs = collect_runs(fill(store_url), [])
    extra = make_run("x", "6.18.0", 5, 1.0)
    assert ingest.import_runs(_Blind(store_url), [*runs, extra]) == (1, 4)  # the uuid decides
    assert Store(store_url).count() == 5
    broken = dataclasses.replace(make_run("x", "6.18.0", 3, 1.0), batch=None)  # type: ignore[arg-type]
    with pytest.raises(UserError) as e:
        ingest.import_runs(Store(store_url), [broken])
    assert "nothing was imported" in str(e.value)
    assert "NOT NULL" in str(e.value) or "not-null" in str(e.value)
    assert Store(store_url).count() == 5


@pytest.mark.parametrize(
    ("edit", "expect"),
    [
        (
            lambda r: dataclasses.replace(r, label="x" * 129),
            r"runs\.label is 129 characters long; the store keeps at most 128",
        ),
        (
            lambda r: dataclasses.replace(r, notes=("ok",), error="a\x00b"),
            r"runs\.error holds a NUL character",
        ),
        (
            lambda r: dataclasses.replace(r, repeat_index=2**31),
            r"runs\.repeat_index is 2147483648, past the store's 32-bit integers",
        ),
        (
            lambda r: dataclasses.replace(r, artifacts=(Artifact("a" * 200, "text/plain", ""),)),
            r"artifacts\.name is 200 characters long",
        ),
    ],
)
def test_what_one_backend_cannot_hold_neither_takes(store_url: str, edit: Any, expect: str) -> None:
    s = Store(store_url)
    with pytest.raises(UserError, match=expect):
        ingest.import_runs(s, [edit(make_run("x", "6.18.0", 1, 1.0))])
    assert s.count() == 0
