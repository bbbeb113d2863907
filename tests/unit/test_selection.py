"""Run selections as written on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowall.actions.selection import matches, parse_selection
from iowall.model import Point, Run
from iowall.vocab.errors import UserError


def test_forms() -> None:
    assert parse_selection("patched").flt.label == "patched"
    assert parse_selection("3-5,9").flt.ids == [3, 4, 5, 9]
    s = parse_selection("ids=1,4-5,kernel=6.18.44")
    assert s.flt.ids == [1, 4, 5] and s.flt.kernel == "6.18.44"
    assert parse_selection("host=a,recipe=limits").flt.host == "a"


def test_bundle_with_filter(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_text("{}")
    s = parse_selection(f"{f}:label=base")
    assert s.bundle == str(f) and s.flt.label == "base"
    r = Run(
        point=Point("x", {}),
        label="base",
        status="ok",
        started_at=0,
        finished_at=1,
        id=7,
        env={"kernel": "k", "host": {"hostname": "h"}},
    )
    assert matches(r, s.flt) and matches(r, parse_selection("ids=7,host=h").flt)
    assert not matches(r, parse_selection("kernel=other").flt)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "empty"),
        ("colour=red", "unknown field"),
        ("ids=x", "run ids"),
        ("ids=5-2", "run ids"),
        ("nofile.json", "no such file"),
        ("label=a,oops", "not FIELD=VALUE"),
    ],
)
def test_bad(text: str, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        parse_selection(text)


def test_kernel_matches_by_release_prefix_in_bundles_too() -> None:
    def run(kernel: str) -> Run:
        return Run(
            point=Point("x", {}),
            label="l",
            status="ok",
            started_at=0,
            finished_at=1,
            env={"kernel": kernel, "host": {"hostname": "h"}},
        )

    sel = parse_selection("kernel=6.18.44").flt
    assert matches(run("6.18.44-fc-v669"), sel) and matches(run("6.18.44"), sel)
    assert matches(run("6.18.44+"), sel)
    assert not matches(run("6.18.440"), sel) and not matches(run("6.18.4"), sel)
    assert matches(run("6.18.44-fc-v669"), parse_selection("kernel=6.18").flt)
    assert not matches(run("6.18.44"), parse_selection("kernel=6.1").flt)


def _imports(module: str) -> set[str]:
    """The iowall modules ``module`` imports anywhere in its source (top level or not)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    pkg = module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_import_cycle_between_selection_and_bundles() -> None:
    # selection reads through the store and its bundle files; the store never imports it back
    assert "iowall.bundle.files" in _imports("iowall.actions.selection")
    for m in ("iowall.bundle.files", "iowall.store.db", "iowall.store"):
        assert "iowall.actions.selection" not in _imports(m), m
