"""Shared fixtures: a private store per test, and a check that nothing is left mounted."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (loop devices, mkfs, mount)")


def leftovers() -> dict[str, set[str]]:
    """Loop devices backed by iowall images, mounts under /run/iowall, images in /dev/shm."""
    loops = set()
    for p in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            b = p.read_text().strip()
        except OSError:
            continue
        if "iowall-" in b:
            loops.add(f"{p.parent.parent.name}:{b}")
    with open("/proc/self/mounts") as f:
        mounts = {line.split()[1] for line in f if "/run/iowall" in line.split()[1]}
    images = {str(p) for p in Path("/dev/shm").glob("iowall-*")}
    return {"loops": loops, "mounts": mounts, "images": images}


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Fail the test if it leaves a loop device, a mount or an image behind."""
    before = leftovers()
    yield
    after = leftovers()
    for k in after:
        assert after[k] <= before[k], f"left behind {k}: {after[k] - before[k]}"


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A private SQLite store for one test."""
    return f"sqlite:///{tmp_path / 'iowall.db'}"


@pytest.fixture
def iowall_env(tmp_path: Path, db_url: str) -> dict[str, str]:
    """Environment for running the CLI as a child: private store, data and state dirs."""
    env = dict(os.environ)
    env.update(IOWALL_DB=db_url, XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    return env


def iowall(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
           check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI as a child process, the way a user does."""
    import sys

    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    cp = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp
