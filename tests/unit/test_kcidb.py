"""KCIDB v5.3 documents (report/kcidb.py), validated with KernelCI's own kcidb-io: runs of two
kernels (one with a commit), a failed run, non-finite metrics; a gate's verdicts as test
statuses; ids stable across exports."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime

import kcidb_io

from iowall.analysis.regress.compare import Side, compare
from iowall.analysis.regress.gate import decide
from iowall.model import Metric
from iowall.report.kcidb import checkout_id, gate_doc, kcidb_doc

from .test_compare import two_sides

SHA = "0123456789abcdef0123456789abcdef01234567"


def _validate(doc: dict) -> None:
    kcidb_io.schema.LATEST.validate(json.loads(json.dumps(doc)))  # as written: JSON, no NaN


def test_runs_become_checkouts_builds_and_tests_that_kcidb_io_accepts() -> None:
    base, new = two_sides()
    new = [dataclasses.replace(r, env={**r.env, "commit": SHA}) for r in new]
    failed = dataclasses.replace(base[0], status="failed", error="fio: No space left on device", id=999)
    odd = dataclasses.replace(
        base[1], metrics=(Metric("x", math.nan, "s"), Metric("y", math.inf, "s")), id=998
    )
    doc = kcidb_doc([*base, *new, failed, odd])
    _validate(doc)
    assert doc["version"] == {"major": 5, "minor": 3}
    ids = {c["id"] for c in doc["checkouts"]}
    assert ids == {checkout_id(base[0]), f"iowall:{SHA}"}
    assert next(c for c in doc["checkouts"] if c["id"] == f"iowall:{SHA}")["git_commit_hash"] == SHA
    assert all(t["id"].startswith("iowall:") and t["origin"] == "iowall" for t in doc["tests"])
    err = [t for t in doc["tests"] if t["status"] == "ERROR"]
    assert len(err) == 1 and "No space left" in err[0]["log_excerpt"]
    assert not [t for t in doc["tests"] if t["misc"]["run"] == 998]  # NaN and inf: no number to give
    bw = next(t for t in doc["tests"] if t["path"].endswith(".write_bw_bytes_per_s"))
    assert bw["status"] == "DONE" and bw["number"]["unit"] == "B/s" and bw["number"]["prefix"] == "binary"
    earliest = min(r.started_at for r in [*base, failed, odd])
    start = next(c for c in doc["checkouts"] if c["id"] == checkout_id(base[0]))["start_time"]
    assert start == kcidb_doc([*reversed(base), odd, failed])["checkouts"][0]["start_time"]
    assert datetime.fromisoformat(start).timestamp() == earliest  # the checkout starts at its first run
    assert kcidb_doc([*base, *new, failed, odd]) == doc  # the same ids and content, export after export


def test_a_gates_verdicts_are_test_statuses_with_the_why() -> None:
    base, new = two_sides()
    res = decide(compare(Side("base", base), [Side("patched", new)], by_invocation=False))
    doc = gate_doc(res, new, {"direct=0": ("The memory-copy wall: …",)}, base)
    _validate(doc)
    statuses = {t["misc"]["verdict"]: t["status"] for t in doc["tests"]}
    assert statuses.get("regression") == "FAIL" and statuses.get("same", "PASS") == "PASS"
    fail = next(t for t in doc["tests"] if t["status"] == "FAIL")
    assert fail["misc"]["change"] < 0 and fail["number"]["value"] > 0 and fail["misc"]["new_runs"]
    window = fail["misc"]["bisect_window"]
    assert window["last_good"]["kernel"] != window["first_bad"]["kernel"]  # 6.18.44 against 6.18.44+
    assert set(window["first_bad"]["runs"]) <= {r.id for r in new}
    assert gate_doc(res, new)["tests"][0]["id"] == doc["tests"][0]["id"]
    assert set(window["last_good"]["runs"]) <= {r.id for r in base}


def test_export_kcidb_from_the_command_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from iowall.cli.main import main
    from iowall.store import Store

    base, new = two_sides()
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    for r in [*base, *new]:
        store.add_run(dataclasses.replace(r, id=None))
    out = tmp_path / "k.json"
    assert main(["export", "--db", url, "--kcidb", "-o", str(out)]) == 0
    assert "runs (2 labels" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    _validate(doc)
    assert len({t["misc"]["uuid"] for t in doc["tests"]}) == len(base) + len(new)
    assert main(["export", "--db", url, "--kcidb", "--packed", "-o", str(out)]) == 2
    assert "drop --packed" in capsys.readouterr().err
