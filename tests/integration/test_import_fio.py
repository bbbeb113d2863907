"""`iowall import-fio` on fio output the suite makes itself (groups with and without
group_reporting, json+, two fio servers driven by fio --client): one run per group and host,
every imported figure equal to fio's own in the JSON, json+ bins kept whole."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from iowall.model import Run
from iowall.store import Store
from iowall.workloads.fio_import import BINS_ARTIFACT
from tests.conftest import iowall
from tests.fio_outputs import fio_servers, job_file, run_clients, run_fio

pytestmark = pytest.mark.slow

DIRS = ("read", "write", "trim")


def expected(entries: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """A group's figures read straight from fio's entries (not through iowall's parser)."""
    out: dict[str, float] = {}
    for d in DIRS:
        parts = [e[d] for e in entries if e[d]["io_bytes"] > 0]
        if not parts:
            continue
        out[f"{d}_bw_bytes_per_s"] = sum(p["bw_bytes"] for p in parts)
        out[f"{d}_iops"] = sum(p["iops"] for p in parts)
        out[f"{d}_io_bytes"] = sum(p["io_bytes"] for p in parts)
        out[f"{d}_runtime_s"] = max(p["runtime"] for p in parts) / 1000
        if len(parts) == 1:
            pct = parts[0]["clat_ns"]["percentile"]
            out[f"{d}_clat_p50_s"] = pct["50.000000"] / 1e9
            out[f"{d}_clat_p99_s"] = pct["99.000000"] / 1e9
    out["fio_usr_cpu_pct"] = sum(e["usr_cpu"] for e in entries)
    out["fio_sys_cpu_pct"] = sum(e["sys_cpu"] for e in entries)
    return out


def by_group(doc: Mapping[str, Any]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    out: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for e in doc.get("jobs", doc.get("client_stats", [])):
        if e["jobname"] != "All clients":
            out.setdefault((e.get("hostname", ""), e["groupid"]), []).append(e)
    return out


def imported(db: str, files: Sequence[Path], *args: str) -> list[Run]:
    cp = iowall("import-fio", *map(str, files), "--db", db, *args)
    assert cp.returncode == 0, cp.stderr
    return Store(db).runs()


def check_equal(runs: Sequence[Run], doc: Mapping[str, Any], label: str) -> None:
    """Every group of ``doc`` is one run of ``label`` whose metrics are fio's figures."""
    groups = by_group(doc)
    mine = [r for r in runs if r.label == label]
    assert len(mine) == len(groups)
    for r in mine:
        host = r.env["host"].get("hostname", "")
        entries = groups[(host if doc.get("client_stats") else "", r.point.params["groupid"])]
        assert {m.name: m.value for m in r.metrics} == expected(entries), (label, host)
        for k, v in entries[0].get("job options", {}).items():
            assert r.point.params[k] in (v, [e["job options"].get(k) for e in entries])


def test_groups_per_job_and_grouped_equal_fios_figures(tmp_path: Path, db_url: str) -> None:
    files = []
    for name in ("grouped", "perjob"):
        out = tmp_path / f"{name}.json"
        out.write_bytes(
            b"fio: a note before the JSON\n" + run_fio(job_file(tmp_path, name)) + b"\nand text after it\n"
        )
        files.append(out)
    runs = imported(db_url, files)
    assert len(runs) == 3 + 2
    for f in files:
        doc = json.loads(f.read_text().split("\n", 1)[1].rsplit("\nand text", 1)[0])
        check_equal(runs, doc, f.stem)
    perjob = [r for r in runs if r.label == "perjob"]
    assert [r.point.params["jobname"] for r in perjob] == ["w64k,w4k", "mixed"]
    assert perjob[0].point.params["bs"] == ["64k", "4k"]
    assert all(r.fingerprint() != perjob[0].fingerprint() for r in perjob[1:])
    again = iowall("import-fio", *map(str, files), "--db", db_url)
    assert again.stdout.splitlines()[-1] == "imported 0 runs from 2 files, 5 already present"
    assert Store(db_url).count() == 5


def test_json_plus_bins_kept_whole(tmp_path: Path, db_url: str) -> None:
    out = tmp_path / "plus.json"
    out.write_bytes(run_fio(job_file(tmp_path, "grouped"), "json+"))
    doc = json.loads(out.read_text())
    runs = imported(db_url, [out], "--label", "plus", "--host", "box1")
    store = Store(db_url)
    assert len(runs) == 3 and all(r.env["host"] == {"hostname": "box1"} for r in runs)
    check_equal(runs, doc, "plus")
    for r in runs:
        entries = by_group(doc)[("", r.point.params["groupid"])]
        art = store.artifact(r.id or 0, BINS_ARTIFACT)
        assert art is not None
        kept = json.loads(art.body)
        assert kept and kept.keys() <= set(DIRS)
        for d, hists in kept.items():  # one bins object per entry, every I/O counted
            mine = [e[d]["clat_ns"] for e in entries if "bins" in e[d].get("clat_ns", {})]
            assert hists == [c["bins"] for c in mine]
            assert sum(int(n) for h in hists for n in h.values()) == sum(c["N"] for c in mine)


def test_client_server_jobs_attributed_to_their_hosts(tmp_path: Path, db_url: str) -> None:
    jobs = [job_file(tmp_path, "grouped", "1"), job_file(tmp_path, "perjob", "2")]
    with fio_servers(["127.0.0.1", "127.0.0.2"]) as ends:
        data = run_clients(ends, jobs, "json+")
    out = tmp_path / "clients.json"
    out.write_bytes(data)
    assert not data.lstrip().startswith(b"{")  # fio --client writes its job lines first
    start = data.index(b"\n{") + 1
    doc = json.loads(data[start:])
    runs = imported(db_url, [out])
    assert {(r.env["host"]["hostname"], r.env["host"]["port"]) for r in runs} == set(ends)
    assert len(runs) == 5
    check_equal(runs, doc, "clients")
    assert all("'All clients' entry" in " ".join(r.notes) for r in runs)
    assert all(
        "directory" not in r.point.params and "fio_global_options" in r.env for r in runs
    )  # one [global] for two hosts: not put in either's point


@pytest.mark.parametrize(
    "content,says",
    [
        (b"no json here\n", "no fio JSON found"),
        (b'{"jobs": []}\n', "jobs holds no jobs"),
        (b'{"jobs": [{"groupid": "0"}]}\n', "jobs[0].groupid: expected a whole number"),
        (b'{"fio version": "fio-3.33", "jobs": [\n', "truncated"),
        (b"\xff\xfe{", "not UTF-8"),
    ],
)
def test_malformed_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, db_url: str, content: bytes, says: str
) -> None:
    f = tmp_path / "bad.json"
    f.write_bytes(content)
    cp = iowall("import-fio", str(f), "--db", db_url)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.count("\n") == 1 and cp.stderr.startswith("iowall: error: "), cp.stderr
    assert says in cp.stderr
    assert not (tmp_path / "iowall.db").exists() or Store(db_url).count() == 0
