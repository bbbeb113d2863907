"""The store: runs round-trip with metrics, artifacts and series; filters work."""

import math

from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.store import RunFilter, Store


def _run(label: str, rw: str, bw: float, status: str = "ok") -> Run:
    return Run(
        point=Point("limits", {"rw": rw, "jobs": 1}),
        label=label,
        status=status,  # type: ignore[arg-type]
        started_at=1.0,
        finished_at=2.5,
        batch="b1",
        metrics=(Metric(f"{rw}_bw_bytes_per_s", bw, "B/s"), Metric(f"{rw}_runtime_s", 1.5, "s", "lower")),
        env={"kernel": "6.18", "host": {"hostname": "h1", "cpu_count": 2}},
        bed={"kind": "ram", "fs": "xfs"},
        artifacts=(Artifact("fio.json", "application/json", '{"jobs": []}'),),
        series=(Series("cpu", "sys", "share", ((0.0, 0.5), (1.0, 0.75))),),
        notes=("a note",),
    )


def test_roundtrip(store_url: str) -> None:
    s = Store(store_url)
    rid = s.add_run(_run("base", "write", 123.5))
    got = s.get_run(rid)
    assert got.id == rid and got.label == "base" and got.status == "ok"
    assert got.metric("write_bw_bytes_per_s") == 123.5
    assert got.metrics[1].direction == "lower"
    assert got.artifacts[0].body == '{"jobs": []}'
    assert got.series[0].samples == ((0.0, 0.5), (1.0, 0.75))
    assert got.env["host"]["hostname"] == "h1" and got.notes == ("a note",)
    assert got.fingerprint() == _run("x", "write", 1.0).fingerprint()


def test_filters_and_reopen(store_url: str) -> None:
    s = Store(store_url)
    for i, (label, status) in enumerate([("a", "ok"), ("b", "ok"), ("a", "interrupted")]):
        s.add_run(_run(label, "read", float(i), status))
    s2 = Store(store_url)  # migrations are idempotent
    assert s2.count() == 3
    assert [r.metric("read_bw_bytes_per_s") for r in s2.runs(RunFilter(label="a"))] == [0.0, 2.0]
    assert len(s2.runs(RunFilter(status="interrupted"))) == 1
    assert [r.metric("read_bw_bytes_per_s") for r in s2.runs(RunFilter(limit=2))] == [1.0, 2.0]
    assert s2.labels() == ["a", "b"]


def test_order_and_prefixes_do_not_depend_on_the_backend(store_url: str) -> None:
    # en-US collation sorts "a_b" < "aB" < "ab" < "B"; the store sorts by code point
    names = ["ab", "B", "a_b", "aB", "Z_1", "z"]
    s = Store(store_url)
    run = Run(
        point=Point("limits", {"jobs": 1}),
        label="l",
        status="ok",
        started_at=1.0,
        finished_at=2.0,
        metrics=tuple(Metric(n, -0.0, "s") for n in names),
        env={"kernel": "6.18.0-Rc1"},
        bed={},
        batch="Batch-1",
        artifacts=tuple(Artifact(n, "text/plain", n) for n in names),
        series=tuple(Series(p, n, "s", ((0.0, 1.0),)) for p in ("b", "A") for n in names),
    )
    rid = s.add_run(run)
    got = s.get_run(rid)
    assert [m.name for m in got.metrics] == sorted(names) == ["B", "Z_1", "aB", "a_b", "ab", "z"]
    assert {math.copysign(1.0, m.value) for m in got.metrics} == {1.0}  # -0.0 kept as 0.0
    assert [a.name for a in got.artifacts] == sorted(names)
    assert [(x.probe, x.name) for x in got.series] == sorted((p, n) for p in "bA" for n in names)
    assert [r.id for r in s.runs(RunFilter(kernel="6.18.0"))] == [rid]
    assert s.runs(RunFilter(kernel="6.18.0-rc1")) == []  # kernel names are case-sensitive
    assert s.runs(RunFilter(kernel="6.18.0-R%")) == []  # LIKE's wildcards are plain text


def test_a_store_a_command_made_and_left_empty_is_removed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """remove_if_empty: a store with no run goes, also one interrupted while its tables were
    made (no byte yet, or no runs table yet: Ctrl-C during the first open); a store with runs
    and a file that is not SQLite stay."""
    import sqlite3

    from iowall.store.db import remove_if_empty

    empty = tmp_path / "empty.db"
    Store(str(empty))
    nothing = tmp_path / "nothing.db"
    nothing.write_bytes(b"")
    half = tmp_path / "half.db"
    con = sqlite3.connect(half)
    con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    con.commit()
    con.close()
    full = tmp_path / "full.db"
    Store(str(full)).add_run(_run("a", "read", 1.0))
    other = tmp_path / "other.db"
    other.write_text("not a database, whatever it is")
    for p in (empty, nothing, half, full, other):
        remove_if_empty(str(p))
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["full.db", "other.db"]
