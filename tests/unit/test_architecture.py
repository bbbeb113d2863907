"""The architecture as checked facts (docs/architecture.md): no import cycles between modules,
no module over about 500 lines, imports at the top of modules, no command module imported by
another face module. The layer contract itself is
``lint-imports`` (pyproject.toml), run by ``make test``."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

from iowall.cli.main import COMMANDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SRC = Path(__file__).resolve().parents[2] / "src" / "iowall"
#: Imports allowed inside functions, for weight: matplotlib (plots), alembic (0.7 s, when a store is
#: opened), scipy (0.2 s and more; decide, fits, simulations), importlib.metadata (30 ms of
#: every start-up, for --version only), the bundle module in selection (60 ms of pydantic models
#: that only a bundle file needs), PostgreSQL's dialect (20 ms that only PostgreSQL needs), the
#: compare renderers in a run's report (numpy, which a run that shows no compare does not need),
#: the store's SQLAlchemy half (store/write.py: 0.2 s that reading a store does not need), psycopg
#: (40-80 ms that only a PostgreSQL store needs), the compare of a stored report (analysis.regress.compare
#: and recipes.tables: numpy, which a report without a compare does not need), the import's writer
#: (store.ingest: SQLAlchemy, imported while the workers read the bundles), rich's progress bar
#: (30 ms that an import of a small bundle, which shows no bar, does not need).
LAZY_OK = (
    "matplotlib",
    "alembic",
    "scipy",
    "importlib.metadata",
    "..bundle.files",
    "sqlalchemy.dialects.postgresql",
    ".compare",
    ".write",
    "psycopg",
    "..analysis.regress.compare",
    "..actions.spool",
    ".tables",
    "..store.ingest",
    "rich.progress",
)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(grimp.build_graph("iowall")) == []


def test_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a two-module cycle is found."""
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyc")) == [["cyc.a", "cyc.b"]]


def test_modules_stay_small() -> None:
    big = {
        str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500
    }
    assert big == {}


def test_imports_at_the_top() -> None:
    inner = []
    for p in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    name = "." * sub.level + (sub.module or "")
                elif isinstance(sub, ast.Import):
                    name = sub.names[0].name
                else:
                    continue
                if not name.startswith(LAZY_OK):
                    inner.append(f"{p.relative_to(SRC)}:{sub.lineno} {name}")
    assert inner == []


def _command_modules() -> set[str]:
    """The modules `iowall`'s COMMANDS table names: one per command (or command group)."""
    return {f"iowall.cli.{target.split(':')[0]}" for target in COMMANDS.values()}


def _commands_imported(graph: grimp.ImportGraph, faces: tuple[str, ...], commands: set[str]) -> list[str]:
    """``importer -> command`` for every face module that imports a command module other
    than itself."""
    return sorted(
        f"{m} -> {n}"
        for m in graph.modules
        if m.startswith(faces)
        for n in graph.find_modules_directly_imported_by(m)
        if n in commands and n != m
    )


def test_no_face_imports_a_command() -> None:
    """Commands are parse, one call, emit: the work a second command or a dashboard page
    shares lives in a layer below (``iowall.actions`` and under), never in a command."""
    graph = grimp.build_graph("iowall")
    assert _commands_imported(graph, ("iowall.cli.", "iowall.web."), _command_modules()) == []


def test_the_command_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "faces"
    (pkg / "cli").mkdir(parents=True)
    for f in ("__init__.py", "cli/__init__.py", "cli/options.py"):
        (pkg / f).write_text("")
    (pkg / "cli" / "a.py").write_text("from . import options\n")
    (pkg / "cli" / "b.py").write_text("from .a import x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("faces")
    assert _commands_imported(graph, ("faces.cli.",), {"faces.cli.a", "faces.cli.b"}) == [
        "faces.cli.b -> faces.cli.a"
    ]


def test_the_contract_lists_every_command() -> None:
    """The independence contract in pyproject.toml names exactly the COMMANDS modules."""
    doc = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())
    (contract,) = [c for c in doc["tool"]["importlinter"]["contracts"] if c["type"] == "independence"]
    assert set(contract["modules"]) == _command_modules()
