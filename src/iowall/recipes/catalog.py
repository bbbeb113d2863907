"""The recipes as ``iowall recipes`` lists them (name, seed, description), read from the recipe
modules' sources without importing them: a recipe module imports its beds, probes, session
and numpy (0.4 s), which a listing does not need. The registry imports the same modules
(``recipe_modules``) when a recipe runs; a unit test checks that both give the same list."""

from __future__ import annotations

import ast
import pkgutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
#: Modules of the package that are not recipes.
HELPERS = ("registry", "options", "tables", "tasks", "catalog", "stored")


@dataclass(frozen=True)
class Listed:
    """A recipe as listed: its name, the seed it reproduces and what it measures."""

    name: str
    seed: str
    description: str


def recipe_modules() -> list[str]:
    """The names of the recipe modules (and packages) in ``iowall.recipes``."""
    return [
        info.name
        for info in pkgutil.iter_modules([str(HERE)])
        if info.name not in HELPERS and not info.name.startswith("_")
    ]


def listed() -> tuple[list[Listed], dict[str, str]]:
    """Every recipe's listing, by seed then name, read from the sources, and the modules
    that could not be read so, with why (a syntax error; a registration whose name, seed
    or description is not a string the module spells out)."""
    out, unread = [], {}
    for name in recipe_modules():
        try:
            out.append(_listed(name))
        except (OSError, SyntaxError, ValueError) as e:
            unread[name] = f"{type(e).__name__}: {e}"
    return sorted(out, key=lambda r: (r.seed, r.name)), unread


def _source(module: str) -> Path:
    path = HERE / module.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _listed(module: str) -> Listed:
    """The ``register(Recipe(name=…, seed=…, description=…))`` of ``module``, its values
    string literals or module-level names bound to them (here or imported from a sibling);
    a ValueError when there is none such."""
    tree = ast.parse(_source(module).read_text())
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "register":
            recipe = call.args[0] if call.args else None
            kw = {k.arg: k.value for k in recipe.keywords} if isinstance(recipe, ast.Call) else {}
            return Listed(*(_text(module, tree, kw.get(k)) for k in ("name", "seed", "description")))
    raise ValueError("no register(Recipe(...)) at its top level")


def _text(module: str, tree: ast.Module, value: ast.expr | None) -> str:
    """A string literal, or a name the module binds to one (or imports from a sibling)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    name = value.id if isinstance(value, ast.Name) else None
    for node in tree.body if name else ():
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return _text(module, tree, node.value)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and any(a.name == name for a in node.names):
            package = module if _source(module).name == "__init__.py" else module.rpartition(".")[0]
            sibling = f"{package}.{node.module}".lstrip(".")
            return _text(sibling, ast.parse(_source(sibling).read_text()), value)
    raise ValueError(
        f"register(Recipe(...)) names {ast.unparse(value) if value else 'nothing'}, not a string"
    )
