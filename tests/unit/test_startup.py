"""Start-up stays light: `iowall --help` and the commands that need no heavy library import
none (checked in a fresh interpreter through sys.modules), the lazy listing reads the same
help as the loaded commands, and every command still loads and prints its own help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iowall.cli.lazy import load, summary
from iowall.cli.main import COMMANDS, main

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = (
    "numpy",
    "scipy",
    "sqlalchemy",
    "alembic",
    "matplotlib",
    "iowall.store",
    "iowall.analysis",
    "importlib.metadata",
)
#: 30 ms, left to --version by iowall; a command's own parsing imports it (typer's pydantic).
META = {"importlib.metadata"}


def imported_by(args: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    """Exit code of ``iowall ARGS`` in a fresh interpreter, and which HEAVY modules it imported."""
    code = (
        "import contextlib, io, json, sys\n"
        "from iowall.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main({args!r})\n"
        f"print(json.dumps([rc, [m for m in {HEAVY!r} if m in sys.modules]]))\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_DATA_HOME": str(tmp_path)}
    cp = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rc, mods = json.loads(cp.stdout.splitlines()[-1])
    return rc, set(mods)


def test_importing_the_entry_point_imports_nothing_heavy(tmp_path: Path) -> None:
    cp = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, iowall.cli.main; print([m for m in {HEAVY!r} if m in sys.modules])",
        ],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        check=True,
    )
    assert cp.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "args, allowed",
    [
        (["--help"], set()),
        (["recover", "--help"], META),
        (["doctor", "--format", "json"], META),
        (["runs", "--help"], {"sqlalchemy", "iowall.store", "iowall.analysis", *META}),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else "",
)
def test_light_commands_import_no_heavy_library(args: list[str], allowed: set[str], tmp_path: Path) -> None:
    rc, mods = imported_by(args, tmp_path)
    assert rc in (0, 1) and mods <= allowed, mods - allowed


def test_runs_imports_no_numpy_and_compare_no_scipy(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/s.db"
    _, runs = imported_by(["runs", "--db", db], tmp_path)
    assert not {"numpy", "scipy", "matplotlib"} & runs
    rc, cmp = imported_by(["compare", "a", "b", "--db", db], tmp_path)
    assert rc == 2 and "numpy" in cmp and "scipy" not in cmp  # nothing to compare: exit 2


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listing_reads_the_help_the_command_has(name: str) -> None:
    assert summary(COMMANDS[name]) == load(name, COMMANDS[name]).help


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_prints_its_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0
    assert f"iowall {name}" in capsys.readouterr().out


def test_listing_in_table_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    rows = [
        line.split()[1]
        for line in out.splitlines()
        if line.startswith("│ ") and line[2] != " " and line.split()[1] in COMMANDS
    ]
    assert rows == list(COMMANDS)


def test_a_typo_is_answered_with_the_nearest_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rns"]) == 2
    assert "No such command 'rns'. Did you mean 'runs', 'run'?" in capsys.readouterr().err


def test_summary_of_an_unknown_target_is_none() -> None:
    assert summary("runs:no_such_function") is None
    assert summary("no_such_module:x") is None


def test_repeat_decisions_and_the_gate_test_import_no_scipy() -> None:
    """Every repeating run asks median_ci and every gate welch_p: neither may cost scipy's
    1.2 s of import (15 s inside an emulated `ab` guest)."""
    code = (
        "import sys\n"
        "from iowall.analysis.regress.repeat_rule import decided, median_ci\n"
        "from iowall.analysis.regress.gate import welch_p\n"
        "median_ci([1.0, 2, 3, 4, 5, 6, 7]); decided([1.0, 2, 3]); welch_p([1, 2, 3], [2, 3, 5])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_the_run_path_imports_no_numpy() -> None:
    """`iowall run` (a plan, and what `ab` runs in its guests) loads its command and decides
    ``--repeat auto`` without numpy (its imports 13-15% faster here, more in an emulated
    guest); numpy comes with the first compare, fit or plot."""
    code = (
        "import sys\n"
        "import iowall.cli.run\n"
        "from iowall.analysis.regress.repeat_rule import decision_state\n"
        "s = decision_state([1.0, 1.01, 0.99, 1.0, 1.02, 0.98], max_repeats=9)\n"
        "print(s.n, sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "6 []", out
