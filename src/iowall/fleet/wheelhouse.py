"""The wheelhouse a fleet installs from: iowall built from this checkout (setup.py compiles
its C engine into the wheel) and every dependency as a wheel, so hosts install offline."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

from ..machine.atomic import open_atomic_bytes
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


def build(root: Path, dest: Path) -> str:
    """Build iowall's wheel from ``root`` and its dependencies' wheels into ``dest``, and
    ``dest``.tar holding them all (one file to copy: Ansible copies a directory file by file,
    which took minutes for 42 wheels); returns the iowall wheel's file name. An older iowall
    wheel there is removed first."""
    dest.mkdir(parents=True, exist_ok=True)
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
    return wheels[0].name
