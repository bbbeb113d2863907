"""`make test` runs the suite in phases (scripts/test-lanes.sh): every test file must sit in a
directory one phase runs, or `make test` would pass without it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_file_is_in_a_phase() -> None:
    script = (ROOT / "scripts" / "test-lanes.sh").read_text()
    ran = set(re.findall(r"\btests/(\w+)", script))
    assert {"unit", "fuzz", "engine", "integration"} <= ran, ran
    files = [p.relative_to(ROOT / "tests") for p in (ROOT / "tests").rglob("test_*.py")]
    assert files
    outside = [str(f) for f in files if f.parts[0] not in ran]
    assert not outside, f"test files no phase of make test runs: {outside}"


def test_the_guests_phase_never_recovers() -> None:
    """Tests marked `guests` run beside the unit tests; none may run `iowall recover`
    (machine-wide: it could undo what a unit test's killed child left for that test)."""
    marked = []
    for path in (ROOT / "tests" / "integration").glob("test_*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d) == "pytest.mark.guests" for d in node.decorator_list
            ):
                marked.append(node.name)
                assert "recover" not in (ast.get_source_segment(text, node) or ""), node.name
    assert "test_two_debian_kernels_emulated" in marked and "test_a_killed_ab_leaves_no_guest" not in marked
