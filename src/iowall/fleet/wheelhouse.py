"""The wheelhouse a fleet installs from: iowall built from this checkout (setup.py compiles
its C engine into the wheel) and every dependency as a wheel, so hosts install offline."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from pathlib import Path

from ..machine.atomic import open_atomic_bytes, write_text
from ..vocab.errors import IowallError, UserError


def checkout() -> Path:
    """The source checkout this iowall runs from: the wheel is built from it and the
    playbook is its ``fleet/``; an installed iowall without its checkout cannot drive one."""
    root = Path(__file__).resolve().parents[3]
    if not ((root / "setup.py").is_file() and (root / "fleet" / "playbook.yml").is_file()):
        raise UserError(
            f"iowall fleet run needs iowall's source checkout (setup.py, fleet/); "
            f"this iowall is installed in {root}: run it from a checkout"
        )
    return root


def _pip(args: list[str], what: str) -> None:
    cp = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
    )
    if cp.returncode != 0:
        last = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        raise IowallError(f"building {what} failed (pip wheel exit {cp.returncode}): {last}")


#: what the wheel is built from, below the checkout: the build files and the package's and
#: engine's sources (compiled bytecode and the engine binary ``make`` puts in the tree left out)
SOURCES = ("setup.py", "pyproject.toml", "src/iowall", "engine")
#: the file beside the wheels naming the digest of the sources they were built from
DIGEST = "SOURCES.sha256"


def source_digest(root: Path) -> str:
    """SHA-256 over the relative path and bytes of every file the wheel is built from."""
    h = hashlib.sha256()
    for top in SOURCES:
        base = root / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(root)
            if "__pycache__" in rel.parts or f.suffix == ".pyc" or rel.parts[:3] == ("src", "iowall", "_bin"):
                continue
            h.update(str(rel).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def reusable(dest: Path, digest: str) -> str | None:
    """The iowall wheel's name when ``dest`` holds a complete wheelhouse built from sources of
    this ``source_digest`` (a rerun after a host failed: the same install, ten seconds of
    ``pip wheel`` saved); None when anything differs or is missing."""
    wheels = sorted(dest.glob("iowall-*.whl"))
    stamp = dest / DIGEST
    if len(wheels) != 1 or not stamp.is_file() or not dest.with_suffix(".tar").is_file():
        return None
    return wheels[0].name if stamp.read_text().strip() == digest else None


def build(root: Path, dest: Path, digest: str) -> str:
    """Build iowall's wheel from ``root`` and its dependencies' wheels into ``dest``, and
    ``dest``.tar holding them all (one file to copy: Ansible copies a directory file by file,
    which took minutes for 42 wheels); returns the iowall wheel's file name. An older iowall
    wheel there is removed first; ``digest``, the sources' (``source_digest``, taken before the
    build), is written last (``reusable``)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / DIGEST).unlink(missing_ok=True)
    for old in dest.glob("iowall-*.whl"):
        old.unlink()
    _pip(["--no-deps", "-w", str(dest), str(root)], f"the iowall wheel from {root}")
    wheels = sorted(dest.glob("iowall-*.whl"))
    if len(wheels) != 1:
        raise IowallError(f"building the iowall wheel left {len(wheels)} wheels in {dest}")
    _pip(["-w", str(dest), "--find-links", str(dest), str(wheels[0])], "the dependency wheels")
    tar = dest.with_suffix(".tar")
    with (
        open_atomic_bytes(tar, what="wheel archive") as f,
        tarfile.open(fileobj=f, mode="w") as t,
    ):  # wheels are compressed already
        for w in sorted(dest.glob("*.whl")):
            t.add(w, arcname=w.name)
    write_text(dest / DIGEST, digest + "\n", what="wheelhouse digest")
    return wheels[0].name
