"""`make test` runs the suite in two phases (scripts/test-lanes.sh): the phases together must
select every test, and what runs at the same time as something else must measure nothing and
never recover machine-wide."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _selections() -> set[tuple[str, tuple[str, ...]]]:
    """(marker expression, paths) of each pytest the script runs."""
    script = (ROOT / "scripts" / "test-lanes.sh").read_text().replace("\\\n", " ")
    found = re.findall(r'-m pytest .*?-m (?:"([^"]+)"|(\w+)) +((?:tests\S* +)+)', script)
    return {(quoted or bare, tuple(paths.split())) for quoted, bare, paths in found}


def test_the_phases_select_every_test_once() -> None:
    # guests, then the fuzzers, in the background lane of phase 1, the other beside tests in
    # the lane beside it, the complement of guests and beside in phase 2: every test once, as
    # long as guests are only integration tests and every fuzzer is beside (tests/conftest.py
    # marks the whole of tests/fuzz both)
    assert _selections() == {
        ("guests or fuzz", ("tests/integration", "tests/fuzz")),
        ("beside and not fuzz", ("tests",)),
        ("not guests and not beside", ("tests",)),
    }
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert 'BESIDE_DIRS = ("unit", "fuzz", "engine")' in conftest
    assert 'rel.parts[0] == "fuzz":\n            item.add_marker(pytest.mark.fuzz)' in conftest
    outside = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if "pytest.mark.guests" in p.read_text() and p.parent.name != "integration" and p != Path(__file__)
    ]
    assert not outside


def _whole(text: str) -> bool:
    """Whether the module is marked ``beside`` as a whole (its ``pytestmark``)."""
    return any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
        and "pytest.mark.beside" in ast.unparse(n.value)
        for n in ast.parse(text).body
    )


def _concurrent(text: str) -> list[tuple[str, str]]:
    """(name, source) of the tests of a module that run beside something else: the whole
    module when it is marked ``beside``, else the functions marked ``guests``."""
    tree = ast.parse(text)
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    whole = _whole(text)
    return [
        (n.name, ast.get_source_segment(text, n) or "")
        for n in tests
        if whole or any(ast.unparse(d) == "pytest.mark.guests" for d in n.decorator_list)
    ]


def test_what_runs_concurrently_never_recovers_nor_holds_the_machine() -> None:
    """`iowall recover` is machine-wide: run beside unit tests it could undo what a test's
    killed child left for that test to check; the reporting hold is the measuring phase's.
    `limits` holds free page reporting and touches all free memory, and a browser slowed the
    guests by half: integration tests run beside do neither. They may make beds (`run`): the
    guests check only for guests left (test_ab.no_guest_left), not the machine's loops."""
    seen = []
    for path in sorted((ROOT / "tests" / "integration").glob("test_*.py")):
        for name, source in _concurrent(path.read_text()):
            seen.append(name)
            assert "recover" not in source and "reporting_released" not in source, (path.name, name)
        if _whole(path.read_text()):  # fixtures included
            text = path.read_text()
            assert not re.search(r'iowall\(\s*"limits"', text), path.name
            assert "playwright" not in text and "chromium" not in text, path.name
    assert "test_two_debian_kernels_emulated" in seen and "test_a_killed_ab_leaves_no_guest" not in seen
    guests = (ROOT / "tests" / "integration" / "test_ab.py").read_text()
    for name, source in _concurrent(guests):  # beds beside them: no machine-wide check
        assert "no_leftovers" not in source and "no_guest_left" in source, name
    assert any(n.startswith("test_") for n in seen if n not in ("test_two_debian_kernels_emulated",))
