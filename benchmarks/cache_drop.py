"""What dropping caches costs before a point, machine-wide (sync; drop_caches=3) against the
bed's own (iowall.beds.cache.drop_bed_caches), on the ram bed `limits --quick` uses (5 GiB,
xfs, its image in /dev/shm): each drop timed right after the same file set was read into the
page cache, the two interleaved, medians printed with their ratio; and whether each left any
of the bed's pages cached (util-linux fincore). Root only; the bed is torn down after.

    .venv/bin/python benchmarks/cache_drop.py [--rounds 7] [--size 5G]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from iowall.beds import BedSpec, provision
from iowall.beds.cache import drop_bed_caches, drop_caches
from iowall.vocab.units import parse_size

MIB = 1 << 20


def read_all(files: list[Path]) -> None:
    for p in files:
        with open(p, "rb") as f:
            while f.read(4 * MIB):
                pass


def cached(files: list[Path]) -> int:
    out = subprocess.run(
        ["fincore", "--noheadings", "--raw", "--bytes", "--output", "RES", *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    return sum(int(x) for x in out.stdout.split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--size", default="5G", help="the ram bed's size")
    ap.add_argument("--files", type=int, default=16, help="files of 64 MiB read before each drop")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("cache_drop.py needs root")
    with provision(BedSpec.parse("ram"), fs="xfs", size_bytes=parse_size(a.size, what="--size")) as bed:
        assert bed.device is not None
        files = [Path(bed.path) / f"f{i:03d}" for i in range(a.files)]
        for p in files:
            with open(p, "wb") as f:
                f.write(os.urandom(MIB) * 64)
        took: dict[str, list[float]] = {"drop_caches=3": [], "the bed's": []}
        left: dict[str, list[int]] = {k: [] for k in took}
        for _ in range(a.rounds):
            for name in took:
                read_all(files)
                t = time.monotonic()
                if name == "drop_caches=3":
                    os.sync()
                    drop_caches(3)
                else:
                    drop_bed_caches([bed.path], [bed.device])
                took[name].append(time.monotonic() - t)
                left[name].append(cached(files))
    print(
        f"ram bed of {a.size} (image in /dev/shm), {a.files} x 64 MiB files read before each drop, "
        f"{a.rounds} rounds interleaved"
    )
    for name, ts in took.items():
        print(
            f"  {name:14s} median {statistics.median(ts) * 1000:7.1f} ms  "
            f"(min {min(ts) * 1000:.1f}, max {max(ts) * 1000:.1f}); bed pages left cached: "
            f"{max(left[name]) // MIB} MiB at most"
        )
    ratio = statistics.median(took["drop_caches=3"]) / statistics.median(took["the bed's"])
    print(f"  machine-wide / bed's: {ratio:.1f}x")


if __name__ == "__main__":
    main()
