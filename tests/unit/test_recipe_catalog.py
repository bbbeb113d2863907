"""`iowall recipes` lists the recipes from their sources (recipes/catalog.py), importing no
recipe module: the same list the registry makes by importing them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iowall.recipes import catalog
from iowall.recipes.catalog import Listed, listed, recipe_modules
from iowall.recipes.registry import broken, recipes
from tests.fresh_process import fresh_run

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_the_sources_list_what_the_registry_registers() -> None:
    found, unread = listed()
    assert unread == {} == broken()
    assert found == [Listed(r.name, r.seed, r.description) for r in recipes()]
    assert len(found) >= 6


def test_listing_imports_no_recipe_module() -> None:
    watch = [f"iowall.recipes.{m}" for m in recipe_modules()] + ["numpy", "sqlalchemy"]
    rcs, mods, (out,) = fresh_run([["recipes", "--format", "json"]], watch)
    assert rcs == [0] and mods == []
    assert [r["name"] for r in json.loads(out)["recipes"]] == [r.name for r in recipes()]


def test_a_module_that_cannot_be_read_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "good.py").write_text(
        'NAME = "good"\nregister(Recipe(name=NAME, seed="009", description="d " "e", execute=x))\n'
    )
    (tmp_path / "computed.py").write_text('register(Recipe(name="c" + "x", seed="1", description="d"))\n')
    (tmp_path / "syntax.py").write_text("register(\n")
    monkeypatch.setattr(catalog, "HERE", tmp_path)
    found, unread = listed()
    assert found == [Listed("good", "009", "d e")]
    assert sorted(unread) == ["computed", "syntax"]
    assert "not a string" in unread["computed"] and unread["syntax"].startswith("SyntaxError")
