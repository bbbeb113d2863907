"""Fixtures for the engine's tests: a fresh engine binary, scratch trees on disk and on tmpfs."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from enginetest import ENGINE_SRC, REPO, Result, run_engine

ROOT = os.geteuid() == 0


@pytest.fixture(scope="session")
def engine() -> str:
    """The package's engine, rebuilt first if its sources changed (make is a no-op otherwise)."""
    out = REPO / "src" / "iowall" / "_bin"
    subprocess.run(["make", "-s", "-C", str(ENGINE_SRC), f"OUT={out}"], check=True)
    return str(out / "iowall-engine")


@pytest.fixture
def run(engine: str) -> Callable[..., Result]:
    """``run("meta", "--dir", ...)`` with the session's engine."""

    def _run(*args: str, **kw: Any) -> Result:
        return run_engine(engine, *args, **kw)

    return _run


@pytest.fixture
def scratch() -> Iterator[Path]:
    """An empty directory under /tmp (the root filesystem), removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="iowall-engine-test-", dir="/tmp"))
    try:
        yield d
    finally:
        subprocess.run(["rm", "-rf", str(d)], check=False)


def _umount(d: Path) -> None:
    subprocess.run(["umount", str(d)], check=False)
    with open("/proc/self/mounts") as f:
        assert not any(line.split()[1] == str(d) for line in f), f"{d} is still mounted"
    d.rmdir()


@pytest.fixture
def mount_tmpfs() -> Iterator[Callable[[str], Path]]:
    """Factory: mount a private tmpfs with the given options; every mount is undone."""
    if not ROOT:
        pytest.skip("needs root (mount)")
    mounts: list[Path] = []

    def _mount(opts: str) -> Path:
        d = Path(tempfile.mkdtemp(prefix="iowall-engine-tmpfs-", dir="/tmp"))
        mounts.append(d)
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "iowall-test", str(d)], check=True)
        return d

    yield _mount
    for d in reversed(mounts):
        _umount(d)


@pytest.fixture
def tmpfs(mount_tmpfs: Callable[[str], Path]) -> Path:
    """A private 1 GiB tmpfs."""
    return mount_tmpfs("size=1g")


@pytest.fixture(params=["disk", "tmpfs"])
def anyfs(request: pytest.FixtureRequest) -> Path:
    """The same test on /tmp (ext4 here) and on a private tmpfs."""
    if request.param == "disk":
        return Path(request.getfixturevalue("scratch"))
    return Path(request.getfixturevalue("tmpfs"))
