"""The wheelhouse a fleet installs from: iowall built from this checkout (setup.py compiles
its C engine into the wheel) and every dependency as a wheel, so hosts install offline."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from ..machine.atomic import write_text
from ..machine.dirs import cache_dir
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


#: the archive of every wheel in a wheelhouse, the one file the hosts copy (Ansible copies a
#: directory file by file, which took minutes for 42 wheels)
TAR = "wheels.tar"
#: wheelhouses kept in the cache, the most recently used: a few checkouts' worth
KEEP = 3


def shared(digest: str) -> Path:
    """``$XDG_CACHE_HOME/iowall/wheelhouse/DIGEST``: one wheelhouse per ``source_digest``,
    shared by every fleet run of those sources. Another label or plan on the same checkout
    builds nothing (13-15 s of ``pip wheel`` here), and its hosts find the archive they
    already have and skip the install (15-20 s a host)."""
    return cache_dir() / "wheelhouse" / digest[:16]


def reusable(dest: Path, digest: str) -> str | None:
    """The iowall wheel's name when ``dest`` holds a complete wheelhouse built from sources of
    this ``source_digest``; None when anything differs or is missing."""
    wheels = sorted(dest.glob("iowall-*.whl"))
    stamp = dest / DIGEST
    if len(wheels) != 1 or not stamp.is_file() or not (dest / TAR).is_file():
        return None
    return wheels[0].name if stamp.read_text().strip() == digest else None


def build(root: Path, dest: Path, digest: str) -> str:
    """Build iowall's wheel from ``root``, its dependencies' wheels and their archive
    (``TAR``) into ``dest``; returns the iowall wheel's file name. Built in a directory of its
    own beside ``dest`` and renamed into place when whole: two fleet runs building at once
    each end with a whole wheelhouse, and a killed build leaves no half of one. ``digest``,
    the sources' (``source_digest``, taken before the build), is written last."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{dest.name}.building-", dir=dest.parent))
    try:
        _pip(["--no-deps", "-w", str(tmp), str(root)], f"the iowall wheel from {root}")
        wheels = sorted(tmp.glob("iowall-*.whl"))
        if len(wheels) != 1:
            raise IowallError(f"building the iowall wheel from {root} left {len(wheels)} wheels")
        _pip(["-w", str(tmp), "--find-links", str(tmp), str(wheels[0])], "the dependency wheels")
        with tarfile.open(tmp / TAR, mode="w") as t:  # wheels are compressed already
            for w in sorted(tmp.glob("*.whl")):
                t.add(w, arcname=w.name)
        write_text(tmp / DIGEST, digest + "\n", what="wheelhouse digest")
        if reusable(dest, digest) is None:  # else another build finished first: keep its
            shutil.rmtree(dest, ignore_errors=True)
            try:
                os.rename(tmp, dest)
            except OSError:  # another build renamed its in between
                if reusable(dest, digest) is None:
                    raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prune(dest.parent)
    return wheels[0].name


def used(dest: Path) -> None:
    """Mark a wheelhouse as used now (``prune`` keeps the most recently used)."""
    os.utime(dest)


def prune(cache: Path, keep: int = KEEP) -> list[Path]:
    """Remove all but the ``keep`` most recently used wheelhouses of ``cache``, and builds
    left unfinished more than a day ago (a killed fleet run's); returns what it removed."""
    houses = sorted(
        (p for p in cache.iterdir() if p.is_dir() and ".building-" not in p.name),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    stale = [p for p in cache.glob("*.building-*") if time.time() - p.stat().st_mtime > 86400]
    gone = houses[keep:] + stale
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


def drop_per_run(fleet_root: Path) -> list[Path]:
    """Remove the wheelhouses iowall kept in each fleet run's state directory before they were
    shared (``FLEET_ROOT/KEY/wheelhouse``, about 100 MB each, used by nothing since); returns
    what it removed."""
    gone = sorted(p for p in fleet_root.glob("*/wheelhouse") if p.is_dir())
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone
