"""Start-up time and the cost of `compare`: `iowall --help`, `iowall runs --last 1`,
`iowall recipes`, `iowall run --help` (every module a run needs) and `iowall compare` of two
labels of 500 synthetic runs each, run as fresh processes; the median wall time of several
runs and the peak RSS (getrusage of the child).

Each tree given with --src (default: this checkout's src) is measured against its own store,
built by that tree's code, so two trees (e.g. --src src --src /work/main/src) print side by
side. Run it under ``flock /tmp/iowall-tests.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
HOST = {
    "hostname": "benchbox",
    "cpu_model": "Bench CPU",
    "cpu_count": 2,
    "mem_total_bytes": 24 << 30,
    "arch": "x86_64",
}
BED = {
    "kind": "ram",
    "fs": "xfs",
    "mkfs_opts": "",
    "mount_opts": "",
    "backing": "tmpfs:/dev/shm",
    "block_size": 4096,
    "image_bytes": 6 << 30,
}
JOBS = (1, 2, 4, 8, 16)


def synthetic_runs(label: str, n: int, speedup: float, seed: int) -> list[object]:
    """``n`` runs of buffered and direct writes at JOBS job counts (n / 10 repeats of each of
    ten points), bandwidth with 3% noise, p99 latency, IOPS and CPU share, as a real
    buffered-wall run stores them; ``speedup`` scales the new side's direct bandwidth."""
    from iowall.model import Metric, Point, Run  # the measured tree's model, not this one's

    rng = random.Random(seed)
    env = {
        "host": HOST,
        "kernel": "6.18.44",
        "fio_version": "3.33",
        "sysctls": {"vm.dirty_bytes": "0", "vm.dirty_ratio": "20"},
        "thp": "always",
    }
    out = []
    for i in range(n):
        direct, jobs = (i // len(JOBS)) % 2, JOBS[i % len(JOBS)]
        true = (900.0 if direct else 1400.0) * (1 << 20) * (1 + 0.6 * (jobs - 1))
        true *= speedup if direct else 1.0
        bw = true * (1 + rng.gauss(0, 0.03))
        p99 = 2e-3 * (1 << 20) * 1400 / bw * (1 + rng.gauss(0, 0.03))
        pt = Point("buffered-wall", {"rw": "write", "bs": "2m", "direct": direct, "jobs": jobs})
        out.append(
            Run(
                point=pt,
                label=label,
                status="ok",
                started_at=1.7e9 + 20 * i,
                finished_at=1.7e9 + 20 * i + 10,
                repeat_index=i // 10,
                env=env,
                bed=dict(BED),
                metrics=(
                    Metric("write_bw_bytes_per_s", bw, "B/s"),
                    Metric("write_iops", bw / (2 << 20), "IO/s"),
                    Metric("write_clat_p99_s", p99, "s", "lower"),
                    Metric("cpu_sys_share", 0.5 + rng.gauss(0, 0.01), "share", "lower"),
                ),
            )
        )
    return out


def build_store(url: str, n: int) -> None:
    """The store of two labels, base and new, of ``n`` runs each."""
    from iowall.store import Store

    store = Store(url)
    store.add_runs(synthetic_runs("base", n, 1.0, 1))  # type: ignore[arg-type]
    store.add_runs(synthetic_runs("new", n, 1.05, 2))  # type: ignore[arg-type]


def measure(src: str, args: list[str], repeat: int) -> tuple[float, float, int]:
    """Median and minimum wall seconds of ``iowall ARGS`` as a fresh process with ``src``
    first on the path, and its peak RSS in KiB (GNU time's %M of that process alone; the
    largest over the repeats)."""
    env = {**os.environ, "PYTHONPATH": src}
    times, peak = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%M", PYTHON, "-c", "from iowall.cli.main import entry; entry()", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        times.append(time.perf_counter() - t0)
        err = p.stderr.decode().strip().splitlines()
        if p.returncode != 0:
            raise SystemExit(
                f"iowall {' '.join(args)} failed ({p.returncode}) with {src}:\n" + "\n".join(err)
            )
        peak = max(peak, int(err[-1]))
    return statistics.median(times), min(times), peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--src", action="append", help="a tree's src directory (repeatable)")
    ap.add_argument("--runs", type=int, default=500, help="runs per label (default 500)")
    ap.add_argument("--repeat", type=int, default=7, help="processes per figure (median)")
    ap.add_argument("--build", metavar="URL", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.build:
        build_store(a.build, a.runs)
        return
    srcs = [str(Path(s).resolve()) for s in (a.src or [str(HERE.parent / "src")])]
    with tempfile.TemporaryDirectory(prefix="iowall-startup-") as tmp:
        os.environ["XDG_DATA_HOME"] = tmp  # no command touches the user's own store
        urls = {}
        for k, src in enumerate(srcs):
            urls[src] = f"sqlite:///{tmp}/store{k}.db"
            subprocess.run(
                [PYTHON, __file__, "--build", urls[src], "--runs", str(a.runs)],
                env={**os.environ, "PYTHONPATH": src},
                check=True,
            )
        rows = [
            ("iowall --help", ["--help"]),
            ("iowall runs --last 1", ["runs", "--last", "1", "--db", "{db}"]),
            ("iowall recipes", ["recipes"]),
            ("iowall run --help (loads the run path)", ["run", "--help"]),
            (f"iowall compare base new ({a.runs}+{a.runs} runs)", ["compare", "base", "new", "--db", "{db}"]),
            ("  … --format json", ["compare", "base", "new", "--format", "json", "--db", "{db}"]),
        ]
        print(
            f"median of {a.repeat} fresh processes (min in brackets), peak RSS; "
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
        )
        print(f"{'command':<40}" + "".join(f"{str(Path(s).parent):>32}" for s in srcs))
        for name, args in rows:
            cells = []
            for src in srcs:
                med, low, rss = measure(src, [x.format(db=urls[src]) for x in args], a.repeat)
                cells.append(f"{med:.3f} s ({low:.3f}) {rss / 1024:4.0f} MiB")
            print(f"{name:<40}" + "".join(f"{c:>32}" for c in cells))


if __name__ == "__main__":
    main()
