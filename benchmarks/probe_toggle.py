"""What one probe costs in throughput, resolved on a noisy host: the probe switched on and
off in short windows during one long fio run, and fio's own bandwidth log compared between
the windows of each pair.

    .venv/bin/python benchmarks/probe_toggle.py                         # threadstate; write, direct
    .venv/bin/python benchmarks/probe_toggle.py --workload all --seconds 120 --window 2
    .venv/bin/python benchmarks/probe_toggle.py --probe none            # A/A: both windows bare

Why not separate runs (benchmarks/probe_overhead.py): on a shared VM, whole runs of the same
point moved 4-6% in an A/A, so pairs of runs cannot resolve a 2% cost. Inside one run, two
adjacent 2 s windows see the same files, the same cache state and mostly the same neighbours:
each pair's ratio (probe-on window / probe-off window, the order within a pair drawn at
random, the first ``--settle`` seconds after each switch left out) carries far less noise,
and the median of 30-60 pairs is the estimate, with a 95% interval from the pairs' order
statistics (distribution-free: the binomial interval of the median). The workloads are
probe_overhead's FIO_POINTS (each recipe's fio point shape) on a ram bed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from iowall.beds import BedSpec, provision
from iowall.probes import ProbeContext, ProbeSet, resolve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_overhead import FIO_POINTS  # noqa: E402

LOG_MS = 100


def median_ci(xs: list[float], conf: float = 0.95) -> tuple[float, float, float]:
    """Median and its distribution-free interval: the order statistics k and n-1-k whose
    binomial(n, 1/2) tail is at most (1 - conf) / 2."""
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    tail, k = 0.0, -1
    while True:
        p = math.comb(n, k + 1) / 2**n
        if tail + p > (1 - conf) / 2:
            break
        tail += p
        k += 1
    if k < 0:
        return med, s[0], s[-1]
    return med, s[k], s[n - 1 - k]


def read_log(path: Path, t0: float) -> list[tuple[float, float]]:
    """fio's bandwidth logs (one a job, Unix-epoch ms stamps) as (seconds since ``t0``,
    KiB/s) summed over the jobs per bucket."""
    sums: dict[int, float] = {}
    for f in path.parent.glob(path.name + "*_bw*.log"):
        for line in f.read_text().splitlines():
            parts = [x.strip() for x in line.split(",")]
            if len(parts) >= 2 and parts[0].isdigit():
                b = round(int(parts[0]) / LOG_MS)
                sums[b] = sums.get(b, 0.0) + float(parts[1])
    return sorted((b * LOG_MS / 1000.0 - t0, v) for b, v in sums.items())


def toggle(
    name: str, probe: str, seconds: int, window: float, settle: float, jobs: int, seed: int
) -> dict[str, Any]:
    what, opts = FIO_POINTS[name]
    rng = random.Random(seed)
    with (
        provision(BedSpec.parse("ram"), fs="xfs", size_bytes=4 << 30) as bed,
        tempfile.TemporaryDirectory() as tmp,
    ):
        ctx = ProbeContext(devices=tuple(bed.devices), devnos=(bed.devno,), workdir=tmp)
        logp = Path(tmp) / "bw"
        argv = [
            "fio",
            f"--name={name}",
            f"--directory={bed.path}",
            "--size=384M",
            f"--numjobs={jobs}",
            "--time_based",
            f"--runtime={seconds}",
            f"--write_bw_log={logp}",
            f"--log_avg_msec={LOG_MS}",
            "--log_unix_epoch=1",
            "--output=/dev/null",
            *opts,
        ]
        t0 = time.time()
        fio = subprocess.Popen(argv)
        time.sleep(2.0)  # lay-out and start-up: not in any window
        windows: list[tuple[int, bool, float, float]] = []
        pair = 0
        try:
            while time.time() - t0 + 2 * window < seconds - 0.5:
                order = [True, False] if rng.random() < 0.5 else [False, True]
                for on in order:
                    ps = ProbeSet(resolve(probe), ctx) if on and probe != "none" else None
                    a = time.time() - t0
                    if ps is not None:
                        ps.start()
                    time.sleep(window)
                    if ps is not None:
                        ps.stop()
                    windows.append((pair, on, a, time.time() - t0))
                pair += 1
        finally:
            fio.wait(timeout=seconds * 3 + 60)
        log = read_log(logp, t0)
    ratios = []
    for p in range(pair):
        means = {}
        for q, on, a, b in windows:
            if q != p:
                continue
            vals = [v for t, v in log if a + settle <= t - LOG_MS / 1000.0 and t <= b]
            means[on] = sum(vals) / len(vals) if vals else 0.0
        if means.get(False):
            ratios.append(means[True] / means[False])
    med, lo, hi = median_ci(ratios)
    return {
        "workload": name,
        "what": what,
        "probe": probe,
        "pairs": len(ratios),
        "window_s": window,
        "settle_s": settle,
        "median_ratio": med,
        "ci95": [lo, hi],
        "ratios": ratios,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", default="threadstate", help="a probe set; none for the A/A")
    ap.add_argument(
        "--workload", default="write,direct", help=f"comma list of {', '.join(FIO_POINTS)}, or all"
    )
    ap.add_argument("--seconds", type=int, default=90, help="fio's runtime per workload")
    ap.add_argument("--window", type=float, default=2.0)
    ap.add_argument("--settle", type=float, default=0.3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    names = list(FIO_POINTS) if a.workload == "all" else a.workload.split(",")
    for n in names:
        if n not in FIO_POINTS:
            print(f"probe_toggle: unknown workload {n!r}", file=sys.stderr)
            return 2
    out = []
    print(f"| point | pairs | {a.probe} on / off, median of pair ratios | 95% interval |")
    print("|---|---|---|---|")
    for n in names:
        r = toggle(n, a.probe, a.seconds, a.window, a.settle, a.jobs, a.seed)
        out.append(r)
        print(
            f"| {r['what']} | {r['pairs']} | {r['median_ratio']:.3f} | "
            f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] |",
            flush=True,
        )
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
