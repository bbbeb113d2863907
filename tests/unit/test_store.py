"""The store: runs round-trip with metrics, artifacts and series; filters work."""

from iowall.model import Artifact, Metric, Point, Run, Series
from iowall.store import RunFilter, Store


def _run(label: str, rw: str, bw: float, status: str = "ok") -> Run:
    return Run(point=Point("limits", {"rw": rw, "jobs": 1}), label=label, status=status,  # type: ignore[arg-type]
               started_at=1.0, finished_at=2.5, batch="b1",
               metrics=(Metric(f"{rw}_bw_bytes_per_s", bw, "B/s"),
                        Metric(f"{rw}_runtime_s", 1.5, "s", "lower")),
               env={"kernel": "6.18", "host": {"hostname": "h1", "cpu_count": 2}},
               bed={"kind": "ram", "fs": "xfs"},
               artifacts=(Artifact("fio.json", "application/json", '{"jobs": []}'),),
               series=(Series("cpu", "sys", "share", ((0.0, 0.5), (1.0, 0.75))),),
               notes=("a note",))


def test_roundtrip(db_url: str) -> None:
    s = Store(db_url)
    rid = s.add_run(_run("base", "write", 123.5))
    got = s.get_run(rid)
    assert got.id == rid and got.label == "base" and got.status == "ok"
    assert got.metric("write_bw_bytes_per_s") == 123.5
    assert got.metrics[1].direction == "lower"
    assert got.artifacts[0].body == '{"jobs": []}'
    assert got.series[0].samples == ((0.0, 0.5), (1.0, 0.75))
    assert got.env["host"]["hostname"] == "h1" and got.notes == ("a note",)
    assert got.fingerprint() == _run("x", "write", 1.0).fingerprint()


def test_filters_and_reopen(db_url: str) -> None:
    s = Store(db_url)
    for i, (label, status) in enumerate([("a", "ok"), ("b", "ok"), ("a", "interrupted")]):
        s.add_run(_run(label, "read", float(i), status))
    s2 = Store(db_url)  # migrations are idempotent
    assert s2.count() == 3
    assert [r.metric("read_bw_bytes_per_s") for r in s2.runs(RunFilter(label="a"))] == [0.0, 2.0]
    assert len(s2.runs(RunFilter(status="interrupted"))) == 1
    assert [r.metric("read_bw_bytes_per_s") for r in s2.runs(RunFilter(limit=2))] == [1.0, 2.0]
    assert s2.labels() == ["a", "b"]
