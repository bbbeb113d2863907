"""The CLI's face, command by command: help shows flags as flags, a wrong --format lists the
choices in one line, -o writes atomically and says so, every JSON carries schema_version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.cli.main import COMMANDS as REGISTERED
from iowall.cli.main import main
from iowall.model import Metric, Point, Run
from iowall.store import Store

COMMANDS = [
    ["runs"],
    ["show"],
    ["explain"],
    ["locks"],
    ["compare"],
    ["scaling"],
    ["export"],
    ["import"],
    ["doctor"],
    ["plot", "run"],
    ["plot", "compare"],
    ["plot", "scaling"],
]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("cmd", [[], *COMMANDS], ids=lambda c: " ".join(c) or "iowall")
def test_help_shows_flags_as_flags(cmd: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, *cmd, "-h")
    assert rc == 0 and "--help" in out
    assert "<bool>" not in out


def test_every_command_is_registered() -> None:
    assert {c[0] for c in COMMANDS} <= set(REGISTERED)


@pytest.fixture
def stored(db_url: str) -> str:
    Store(db_url).add_run(
        Run(
            point=Point("limits", {"kind": "fio", "jobs": 1}),
            label="base",
            status="ok",
            started_at=1.7e9,
            finished_at=1.7e9 + 1,
            metrics=(Metric("write_bw_bytes_per_s", 1e9, "B/s"),),
        )
    )
    return db_url


@pytest.mark.parametrize(
    "args",
    [
        ["runs"],
        ["show", "1"],
        ["compare", "base", "x"],
        ["scaling", "base"],
        ["doctor"],
        ["locks", "1", "1"],
        ["explain", "1"],
    ],
    ids=lambda a: a[0],
)
def test_wrong_format_lists_the_choices(
    args: list[str], stored: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _run(capsys, *args, "--format", "xml", *([] if args == ["doctor"] else ["--db", stored]))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("iowall: error: --format 'xml': use one of text, ")


def test_output_file_is_written_whole_and_said(
    stored: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, name in (
        (["runs", "--format", "json"], "runs.json"),
        (["show", "1", "--format", "json"], "show.json"),
        (["runs", "--format", "csv"], "runs.csv"),
        (["show", "1"], "show.txt"),
    ):
        out = tmp_path / name
        rc, stdout, err = _run(capsys, *args, "-o", str(out), "--db", stored)
        assert rc == 0 and stdout == "" and err == f"wrote {out}\n"
        assert out.read_text()
        if name.endswith(".json"):
            doc = json.loads(out.read_text())
            assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".iowall-")]
    rc, _, err = _run(capsys, "runs", "-o", str(tmp_path / "no" / "such" / "dir.txt"), "--db", stored)
    assert rc == 2 and "cannot write" in err


def test_doctor_json_carries_schema_version(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "doctor", "--format", "json")
    doc = json.loads(out)
    assert rc in (0, 1) and doc["schema_version"] == 1 and doc["checks"]
    assert doc["can_run_limits"] == (rc == 0)


@pytest.mark.parametrize(("group", "listed"), [(["plot"], "run, compare, scaling, flame"), (["db"], "copy")])
def test_a_group_with_no_command_says_what_is_missing(
    group: list[str], listed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The help, then one line naming the commands (it was an empty ``error:`` line)."""
    rc, out, err = _run(capsys, *group)
    assert rc == 2 and "Usage:" in out
    assert err.strip() == f"iowall: error: iowall {group[0]} needs a command: one of {listed}"


def test_ctrl_c_in_a_command_says_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C inside a command exits 130 with one line (typer returned a silent 130)."""
    import iowall.cli.recipes as recipes

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(recipes, "recipes_cmd", interrupted)
    rc, _, err = _run(capsys, "recipes")
    assert rc == 130
    assert err.strip().splitlines()[-1] == "iowall: interrupted"
