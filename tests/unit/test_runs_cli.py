"""`iowall runs` and `iowall show` on a real private store: units as a kernel list reads them,
CSV, JSON with schema_version, --last, --kernel by prefix, --db as a plain path."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from iowall.cli.main import main
from iowall.model import Metric, Point, Run, Series
from iowall.store import Store

MIB = 1 << 20


def _run(i: int, kernel: str, label: str = "base") -> Run:
    bw = 663 * MIB + i
    return Run(
        point=Point("limits", {"kind": "fio", "rw": "write", "jobs": i + 1}),
        label=label,
        status="ok",
        started_at=1.7e9 + i,
        finished_at=1.7e9 + i + 2,
        env={"kernel": kernel, "host": {"hostname": "box"}},
        metrics=(
            Metric("write_bw_bytes_per_s", float(bw), "B/s"),
            Metric("write_clat_p99_s", 0.0287048, "s", "lower"),
            Metric("write_clat_p50_s", 0.000412, "s", "lower"),
            Metric("cpu_sys_share", 0.14364, "share", "lower"),
        ),
        series=(
            Series("fio", "write_bw", "B/s", tuple((float(t), 6.95e8 + 1e6 * t) for t in range(5))),
            Series("cpu", "cpu_sys_share", "share", tuple((float(t), 0.1 + 0.01 * t) for t in range(5))),
        ),
    )


@pytest.fixture
def store(db_url: str) -> Store:
    s = Store(db_url)
    s.add_runs(
        [
            _run(0, "6.18.44-fc-v669"),
            _run(1, "6.18.44-fc-v669"),
            _run(2, "6.1.0-13"),
            _run(3, "6.180.1", label="future"),
        ]
    )
    return s


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_show_latency_in_ms_us_shares_in_percent_ranges_in_table_units(
    store: Store, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = _out(capsys, "show", "1", "--db", db_url)
    assert rc == 0
    metrics = {
        line.split()[0]: line.split(None, 1)[1]
        for line in out.splitlines()
        if line.startswith("  ") and len(line.split()) >= 3
    }
    assert metrics["write_clat_p99_s"] == "28.7 ms"
    assert metrics["write_clat_p50_s"] == "412 us"
    assert metrics["cpu_sys_share"] == "14.36 %"
    assert metrics["write_bw_bytes_per_s"] == "663 MiB/s"
    assert "share" not in "".join(metrics.values()) and "0.0287048" not in out
    ranges = {line.split()[0]: line for line in out.splitlines() if ".." in line}
    assert ranges["fio.write_bw"].endswith("663..667 MiB/s")
    assert ranges["cpu.cpu_sys_share"].endswith("10..14 %")
    assert "e+" not in out


def test_runs_csv_json_and_last(store: Store, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _out(capsys, "runs", "--format", "csv", "--db", db_url)
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"]
    assert float(rows[0]["write_bw_bytes_per_s"]) == 663 * MIB
    assert float(rows[0]["write_clat_p99_s"]) == 0.0287048 and rows[0]["kernel"] == "6.18.44-fc-v669"
    rc, out, _ = _out(capsys, "runs", "--format", "json", "--db", db_url)
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and [r["id"] for r in doc["runs"]] == [1, 2, 3, 4]


def test_runs_last(store: Store, db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _out(capsys, "runs", "--last", "2", "--format", "json", "--db", db_url)
    assert [r["id"] for r in json.loads(out)["runs"]] == [3, 4]
    # --last 0 lists nothing (as tail -n 0 does); a negative count is refused with one line
    rc, out, _ = _out(capsys, "runs", "--last", "0", "--format", "json", "--db", db_url)
    assert rc == 0 and json.loads(out)["runs"] == []
    rc, out, err = _out(capsys, "runs", "--last", "0", "--db", db_url)
    assert rc == 0 and out == "no runs\n"
    rc, out, err = _out(capsys, "runs", "--last", "-3", "--db", db_url)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "--last" in err


def test_kernel_selects_by_release_prefix_and_db_takes_a_path(
    store: Store,
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def ids(*args: str) -> list[int]:
        rc, out, err = _out(capsys, "runs", "--format", "json", *args)
        assert rc == 0, err
        return [r["id"] for r in json.loads(out)["runs"]]

    assert ids("--kernel", "6.18.44", "--db", db_url) == [1, 2]
    assert ids("--kernel", "6.18", "--db", db_url) == [1, 2]  # not 6.180.1
    assert ids("--kernel", "6.1", "--db", db_url) == [3]  # not 6.18.44
    assert ids("--kernel", "6.18.44-fc-v669", "--db", db_url) == [1, 2]
    path = db_url.removeprefix("sqlite:///")
    assert ids("--db", path) == [1, 2, 3, 4]
    monkeypatch.chdir(Path(path).parent)
    assert ids("--db", Path(path).name) == [1, 2, 3, 4]  # relative to the current directory
    rc, out, err = _out(capsys, "compare", "kernel=6.18.44", "kernel=6.1", "--db", path)
    assert rc == 2 and "nothing to compare" in err  # both sides found; no point in common
    rc, out, err = _out(capsys, "compare", "kernel=6.18.44", "kernel=6.99", "--db", path)
    assert rc == 2 and "kernel=6.99" in err and "matches no completed runs" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["runs"],
        ["show", "1"],
        ["compare", "base", "new"],
        ["history", "label=base"],
        ["export", "-o", "out.json"],
        ["scaling", "base"],
        ["explain", "1"],
        ["report", "abc"],
        ["gate", "label=new", "--baseline", "label=base"],
    ],
)
def test_reading_a_store_that_is_not_there_makes_none(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a mistyped --db used to create an empty store there and answer "No runs"
    monkeypatch.chdir(tmp_path)
    rc, out, err = _out(capsys, *argv, "--db", "typo.db")
    assert rc == 2 and out == "", (out, err)
    assert err == (
        f"iowall: error: no store at {tmp_path / 'typo.db'}: nothing has been "
        "stored there (run, limits and import make a store); check --db or "
        "IOWALL_DB\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_reading_the_default_store_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("IOWALL_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    rc, _, err = _out(capsys, "runs")
    assert rc == 2 and f"no store at {tmp_path}/iowall/iowall.db" in err
    assert not (tmp_path / "iowall" / "iowall.db").exists()


def test_writing_commands_still_make_their_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b.json"
    s = Store(str(tmp_path / "src.db"))
    s.add_runs([_run(0, "6.18.0")])
    assert _out(capsys, "export", "-o", str(bundle), "--db", str(tmp_path / "src.db"))[0] == 0
    assert _out(capsys, "import", str(bundle), "--db", str(tmp_path / "new.db"))[0] == 0
    assert len(Store.existing(str(tmp_path / "new.db")).runs()) == 1
