"""Dropping a bed's caches drops the bed's and nothing else's, on a real ram bed: a file read
into the page cache in the bed has no page left in it after (util-linux ``fincore`` counts
them), while a file read outside the bed keeps its pages, as ``drop_caches=3`` would not; a
loop device names its backing file. Root only; the bed is torn down after."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from iowall.beds import Bed, BedSpec, provision
from iowall.beds.cache import drop_bed_caches, loop_backing

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (loop devices, drop_caches)"),
    pytest.mark.skipif(shutil.which("fincore") is None, reason="needs util-linux fincore"),
]

MIB = 1 << 20


@pytest.fixture
def bed(no_leftovers: None) -> Iterator[Bed]:
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=512 * MIB) as b:
        yield b


def cached_pages(path: Path) -> int:
    """Pages of ``path`` in the page cache, as util-linux's fincore counts them."""
    out = subprocess.run(
        ["fincore", "--noheadings", "--raw", "--output", "PAGES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def write_and_read(path: Path, nbytes: int) -> None:
    path.write_bytes(os.urandom(nbytes))
    with open(path, "rb") as f:
        os.fsync(f.fileno())
        while f.read(1 << 20):
            pass


def test_the_beds_pages_go_and_the_rest_stay(bed: Bed, tmp_path: Path) -> None:
    inside = Path(bed.path) / "d" / "data"
    inside.parent.mkdir()
    write_and_read(inside, 32 * MIB)
    outside = tmp_path / "outside"
    write_and_read(outside, 4 * MIB)
    assert cached_pages(inside) > 0 and cached_pages(outside) > 0
    assert bed.device is not None
    drop_bed_caches([bed.path], [bed.device])
    assert cached_pages(inside) == 0
    # a machine-wide drop would have taken these too (the point of dropping the bed's only)
    assert cached_pages(outside) > 0


def test_a_loop_device_names_its_backing_file(bed: Bed) -> None:
    assert bed.device is not None
    backing = loop_backing(bed.device)
    assert backing is not None and backing == bed.facts["image"]
    assert os.path.isfile(backing) and backing.startswith("/dev/shm/")
    assert loop_backing("/dev/null") is None
