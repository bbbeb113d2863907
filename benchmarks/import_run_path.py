"""What it costs to import the modules `iowall run` needs (``import iowall.cli.run``), two
trees side by side: fresh interpreters, the trees interleaved (A B, B A, ...), median and
minimum wall time of each, and the median of the per-round ratios.

Run:  flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/import_run_path.py \\
          --src OLD/src --src src [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--src", action="append", required=True, help="a tree's src (give two)")
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    if len(a.src) != 2:
        raise SystemExit("give two trees: --src OLD/src --src NEW/src")
    times: list[list[float]] = [[], []]
    for i in range(a.rounds):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", "import iowall.cli.run"],
                check=True,
                env={"PYTHONPATH": a.src[k], "PATH": "/usr/bin:/bin"},
            )
            times[k].append(time.perf_counter() - t0)
    for src, t in zip(a.src, times, strict=True):
        print(f"{src:<32} median {statistics.median(t):.3f} s  min {min(t):.3f} s")
    ratios = [n / o for o, n in zip(*times, strict=True)]
    print(f"median ratio second/first {statistics.median(ratios):.3f} over {a.rounds} rounds")


if __name__ == "__main__":
    main()
