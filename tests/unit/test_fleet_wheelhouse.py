"""The fleet's wheelhouse is reused only when it was built from the same sources."""

from __future__ import annotations

from pathlib import Path

from iowall.fleet.wheelhouse import DIGEST, reusable, source_digest


def _tree(root: Path) -> None:
    for rel, text in {
        "setup.py": "setup()",
        "pyproject.toml": "[project]",
        "src/iowall/a.py": "x = 1",
        "engine/src/e.c": "int main(void){return 0;}",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _house(dest: Path, digest: str) -> None:
    dest.mkdir(parents=True)
    (dest / "iowall-0.1.0-py3-none-linux_x86_64.whl").write_bytes(b"wheel")
    dest.with_suffix(".tar").write_bytes(b"tar")
    (dest / DIGEST).write_text(digest + "\n")


def test_the_digest_moves_with_the_sources_not_with_what_a_build_leaves(tmp_path: Path) -> None:
    _tree(tmp_path)
    d0 = source_digest(tmp_path)
    (tmp_path / "src/iowall/__pycache__").mkdir()
    (tmp_path / "src/iowall/__pycache__/a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "src/iowall/_bin").mkdir()
    (tmp_path / "src/iowall/_bin/iowall-engine").write_bytes(b"\x7fELF")
    (tmp_path / "README.md").write_text("not in the wheel")
    assert source_digest(tmp_path) == d0
    (tmp_path / "engine/src/e.c").write_text("int main(void){return 1;}")
    assert source_digest(tmp_path) != d0
    (tmp_path / "engine/src/e.c").write_text("int main(void){return 0;}")
    (tmp_path / "src/iowall/b.py").write_text("")  # a new, empty module is a change too
    assert source_digest(tmp_path) != d0


def test_a_wheelhouse_is_reused_only_when_whole_and_from_the_same_sources(tmp_path: Path) -> None:
    root, dest = tmp_path / "src", tmp_path / "fleet" / "wheelhouse"
    _tree(root)
    assert reusable(dest, source_digest(root)) is None  # nothing built yet
    _house(dest, source_digest(root))
    assert reusable(dest, source_digest(root)) == "iowall-0.1.0-py3-none-linux_x86_64.whl"
    (root / "src/iowall/a.py").write_text("x = 2")
    assert reusable(dest, source_digest(root)) is None  # edited since
    (dest / DIGEST).write_text(source_digest(root))
    dest.with_suffix(".tar").unlink()
    assert reusable(dest, source_digest(root)) is None  # the archive the hosts copy is missing
