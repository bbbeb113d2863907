"""Reading fio's JSON as users have it (text around it, duplicate keys, fio 2's units): what the
importer computed, checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.model import Point, Run, fingerprint
from iowall.vocab.errors import UserError
from iowall.workloads.fio_import import read_runs

FIXTURE = Path(__file__).parent.parent / "fixtures" / "fio" / "tiobench-per-job.json"


def test_text_around_and_duplicate_keys() -> None:
    doc = FIXTURE.read_text()
    body = doc.replace('"groupid" : 0,', '"groupid" : 7, "groupid" : 0,', 1)
    assert body != doc
    runs = read_runs(("warning: x {\n" + body + "\ntrailing {\n").encode(), "f.json", label="a")
    raw = json.loads(doc)
    assert len(runs) == len({j["groupid"] for j in raw["jobs"]})
    assert any("duplicate key 'groupid'" in n for n in runs[0].notes)
    assert runs[0].point.params["groupid"] == 0


def test_fio2_units_converted() -> None:
    job = {
        "jobname": "old",
        "groupid": 0,
        "error": 0,
        "usr_cpu": 1.0,
        "sys_cpu": 2.0,
        "read": {
            "io_kbytes": 4096,
            "bw": 2048,
            "iops": 512.0,
            "runtime": 2000,
            "total_ios": 1024,
            "clat": {"percentile": {"50.000000": 100, "99.000000": 250}},
        },
    }
    (run,) = read_runs(
        json.dumps({"fio version": "fio-2.2.10", "jobs": [job]}).encode(), "old.json", label="old"
    )
    assert run.metric("read_io_bytes") == 4096 * 1024
    assert run.metric("read_bw_bytes_per_s") == 2048 * 1024
    assert run.metric("read_clat_p99_s") == pytest.approx(250e-6)
    assert any("KiB/s" in n for n in run.notes) and any("usec" in n for n in run.notes)


@pytest.mark.parametrize(
    "doc",
    [
        {"jobs": [{"read": {"io_bytes": -1, "bw_bytes": 1, "iops": 1, "runtime": 1}}]},
        {
            "jobs": [
                {
                    "read": {
                        "io_bytes": 1,
                        "bw_bytes": 1,
                        "iops": 1,
                        "runtime": 1,
                        "clat_ns": {"bins": {"x": 1}},
                    }
                }
            ]
        },
        {"jobs": [{"job options": {"bs": [1]}}]},
        {"client_stats": [{"jobname": "All clients"}]},
    ],
)
def test_wrong_types_refused(doc: object) -> None:
    with pytest.raises(UserError):
        read_runs(json.dumps(doc).encode(), "bad.json", label="x")


def test_fingerprint_by_name_only_when_shape_unknown() -> None:
    p = Point("fio-import", {"rw": "read"})
    known = {"hostname": "a", "cpu_model": "X", "cpu_count": 2, "mem_total_bytes": 1}
    assert fingerprint(p, {}, {"host": known}) == fingerprint(p, {}, {"host": {**known, "hostname": "b"}})
    assert fingerprint(p, {}, {"host": {"hostname": "a"}}) != fingerprint(p, {}, {"host": {"hostname": "b"}})
    run = Run(p, "l", "ok", 0, 0, env={"host": {}})
    assert run.fingerprint() == fingerprint(p, {}, {})
