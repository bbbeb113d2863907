"""`iowall history --series`: another system's series read right (issue 24): the file's own
index kept and printed, repeats of one index as one result, direction and unit, a series too
short listed with its reason, p-values at the permutation floor printed as such."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iowall.analysis.regress.gate import GateReport
from iowall.analysis.regress.history import SeriesRow, from_rows, results, worse
from iowall.analysis.regress.series_gate import gate_series
from iowall.cli.main import main
from iowall.report.gate import render_text as gate_text
from iowall.report.history import history_report
from iowall.report.recipe import render_text

from .test_compare import golden


def _values(seed: int, n: int, cv: float = 0.02) -> list[float]:
    return (100.0 * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))).tolist()


def _csv(path: Path, rows: list[tuple[str, str, float]], extra: str = "") -> str:
    head = "series,index,value" + ("," + extra if extra else "")
    path.write_text(head + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return str(path)


def test_the_file_index_is_the_bisect_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = _values(1, 30)
    builds = [("s", str(1000 + 10 * i), x * (0.9 if i >= 15 else 1.0)) for i, x in enumerate(v)]
    ones = [("one", str(i + 1), x * (0.9 if i >= 15 else 1.0)) for i, x in enumerate(v)]
    big = [("big", str(1234560 + i), x * (0.9 if i >= 15 else 1.0)) for i, x in enumerate(v)]
    assert main(["history", "--series", _csv(tmp_path / "s.csv", builds + ones + big)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "last before #1140; first worse #1150" not in out  # not a row position, no '#'
    assert "last before 1140; first worse 1150" in out
    assert "last before 15; first worse 16" in out  # a 1-based file is not one off
    assert "last before 1234574; first worse 1234575" in out
    assert "e+06" not in out


def test_repeats_of_one_index_are_one_result() -> None:
    """20 results × 3 repeats, two true changes: two change points, never one inside a result
    (sorting the repeats by value made 15 of them)."""
    rng = np.random.default_rng(4)
    rows = []
    for i in range(20):
        level = 100.0 if i < 7 else 85.0 if i < 14 else 100.0
        rows += [SeriesRow("s", f"{i}", float(level * np.exp(rng.normal(0, 0.02)))) for _ in range(3)]
    (h,) = from_rows(rows)
    assert h.groups == 20 and len(h.observations) == 60
    assert [w.first_bad.at for w in h.windows] == ["7", "14"]
    assert [worse(h, w) for w in h.windows] == [True, False]


def test_dates_and_commit_ids_keep_their_order() -> None:
    v = _values(2, 24)
    dated = [SeriesRow("d", f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}", x) for i, x in enumerate(v)]
    (h,) = from_rows(list(reversed(dated)))
    assert [o.at for o in h.observations] == [r.at for r in dated]
    commits = [SeriesRow("c", f"{(i * 7919) % 65536:04x}", x) for i, x in enumerate(v)]
    (h,) = from_rows(commits)
    assert [o.at for o in h.observations] == [r.at for r in commits]  # the file's order


def test_direction_unit_and_alpha(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = _values(3, 30)
    lat = [("lat", str(i), round(x * (1.2 if i >= 15 else 1.0) / 50, 4)) for i, x in enumerate(v)]
    f = _csv(tmp_path / "lat.csv", lat)
    assert main(["history", "--series", f, "--direction", "lower", "--unit", "ms"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "lat — value (lower is better)" in out and "worse" in out
    assert "first worse 15" in out and " ms [" in out
    assert main(["history", "--series", f]) == 0  # higher is better: the same rise is better
    assert "first better 15" in " ".join(capsys.readouterr().out.split())
    g = _csv(tmp_path / "col.csv", [(*r, "lower") for r in lat], "direction")
    assert main(["history", "--series", g]) == 0
    assert "first worse 15" in " ".join(capsys.readouterr().out.split())
    assert main(["history", "--series", f, "--alpha", "0.0001", "--format", "json"]) == 0
    assert "p <= 0.0001" in capsys.readouterr().out
    for args, msg in ((["--direction", "up"], "--direction up"), (["--alpha", "2"], "--alpha 2")):
        assert main(["history", "--series", f, *args]) == 2
        assert msg in capsys.readouterr().err


def test_short_series_listed_and_p_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v = _values(5, 30)
    rows = [("s", str(i), x * (0.8 if i >= 15 else 1.0)) for i, x in enumerate(v)]
    f = _csv(tmp_path / "s.csv", rows + [("lonely", "1", 3.0)])
    assert main(["history", "--series", f]) == 0
    out = capsys.readouterr().out
    assert "lonely — value (higher is better): 1 result" in out
    assert "no change point: 1 finite value; at least 6 are needed" in out
    assert "≤ 5e-05" in out and "  5e-05\n" not in out  # 20 000 permutations at alpha 0.001


def test_a_short_excursion_is_found(tmp_path: Path) -> None:
    """+25% for 11 results, then back, at CV 1.4%: both changes (binary segmentation alone
    masked it)."""
    rng = np.random.default_rng(24)
    x = 100.0 * np.exp(rng.normal(0.0, 0.014, 60))
    x[25:36] *= 1.25
    (h,) = from_rows([SeriesRow("e", str(i), float(v)) for i, v in enumerate(x)])
    assert [w.first_bad.at for w in h.windows] in (["25", "36"], ["25", "37"])


def _ci_rows(commits: int) -> list[SeriesRow]:
    """A kernel CI's file after ``commits`` builds: two fio jobs, 3 repeats a commit; write
    bandwidth 8% lower from the 25th commit (the CI loop of docs/history.md)."""
    rng = np.random.default_rng(2026)
    rows = []
    for i in range(commits):
        for _ in range(3):
            bw = 2650 * np.exp(rng.normal(0, 0.03)) * (0.92 if i >= 24 else 1.0)
            rows.append(SeriesRow("fio-write-bw", f"c{i:03d}", round(float(bw)), "higher", "MiB/s"))
            lat = 0.412 * np.exp(rng.normal(0, 0.05))
            rows.append(SeriesRow("fio-randread-p99", f"c{i:03d}", round(float(lat), 3), "lower", "ms"))
    return rows


def test_history_and_gate_text_match_golden() -> None:
    """The human-facing text of `history --series` and `gate --series` at the second bad
    commit (golden files: regenerate with IOWALL_UPDATE_GOLDEN=1 after a deliberate change)."""
    hs = from_rows(_ci_rows(26))
    golden("history_series.txt", render_text(history_report(hs, "results.csv")))
    res, tested = gate_series([results(h) for h in hs], source="results.csv")
    assert res.exit_code == 1
    notes = tuple(
        f"{t.name}: newest {', '.join(t.window)} against {t.n_base} results from {t.base_from}"
        for t in tested
    )
    text = gate_text(
        GateReport(
            res,
            "results.csv: each series' history",
            "results.csv: its newest results",
            (),
            ("iowall gate --series results.csv",),
            notes,
        )
    )
    golden("gate_series.txt", text)
    assert text.splitlines()[0] == "[iowall gate] fio-write-bw: value -8.1% regression"
