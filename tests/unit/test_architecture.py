"""The architecture as checked facts (docs/architecture.md): no import cycles between modules,
no module over about 500 lines, imports at the top of modules. The layer contract itself is
``lint-imports`` (pyproject.toml), run by ``make test``."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "iowall"
#: Imports allowed inside functions, for weight: matplotlib (plots), alembic (0.7 s, when a store is
#: opened), scipy (0.2 s and more; decide, fits, simulations), importlib.metadata (30 ms of
#: every start-up, for --version only), the bundle module in selection (60 ms of pydantic models
#: that only a bundle file needs), PostgreSQL's dialect (20 ms that only PostgreSQL needs), the
#: compare renderers in a run's report (numpy, which a run that shows no compare does not need).
LAZY_OK = ("matplotlib", "alembic", "scipy", "importlib.metadata", ".store.bundle",
           "sqlalchemy.dialects.postgresql", ".compare")


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
    big = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 500}
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
