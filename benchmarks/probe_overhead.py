"""What the probes cost: throughput of one workload point with a probe set vs without.

    .venv/bin/python benchmarks/probe_overhead.py                       # default vs none
    .venv/bin/python benchmarks/probe_overhead.py --probes default,locks
    .venv/bin/python benchmarks/probe_overhead.py --pairs 7 --seconds 8 --json out.json
    .venv/bin/python benchmarks/probe_overhead.py --probes none     # A/A: the noise floor
    .venv/bin/python benchmarks/probe_overhead.py --without threadstate --workload direct

The workload is a buffered sequential write at nproc jobs on a ram bed (fio, 1 MiB blocks,
psync, time based, end_fsync), the point ``iowall limits`` measures first, or with
``--workload create`` the engine's create phase (nproc threads, empty files, files/s). The
default probe set includes ``tasks`` (schedstat of every thread) and ``profile`` (perf at 99
Hz with call graphs, folded at stop). Runs are
interleaved in pairs (A B, B A, A B …: order alternates so drift does not favour one side),
and the verdict is the ratio of the medians, probes / none, against a floor (0.98).

``measure(workload, probes_a, probes_b, ...)`` takes any ``workload(bed_path) -> bytes/s``
callable, so the lead's ``iowall limits`` / ``run`` points can be measured the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iowall.beds import BedSpec, provision
from iowall.probes import ProbeContext, ProbeSet, resolve
from iowall.workloads.engine import run_meta

Workload = Callable[[str], float]
FLOOR = 0.98


def fio_buffered_write(jobs: int, seconds: int, size: str = "384M") -> Workload:
    """fio buffered write, ``jobs`` jobs, time based; returns fio's aggregate bytes/s."""
    def run(path: str) -> float:
        argv = ["fio", "--name=w", f"--directory={path}", "--rw=write", "--bs=1M",
                f"--size={size}", f"--numjobs={jobs}", "--ioengine=psync", "--direct=0",
                "--time_based", f"--runtime={seconds}", "--end_fsync=1", "--group_reporting",
                "--output-format=json"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True,
                             timeout=seconds * 10 + 60)
        return float(json.loads(out.stdout)["jobs"][0]["write"]["bw_bytes"])
    return run


def fio_direct_write(jobs: int, seconds: int, size: str = "384M") -> Workload:
    """fio direct write at queue depth 1 per job (psync, 1 MiB), time based: the main job's
    direct point, where every I/O is a sleep and a wake-up of the workload."""
    def run(path: str) -> float:
        argv = ["fio", "--name=d", f"--directory={path}", "--rw=write", "--bs=1M",
                f"--size={size}", f"--numjobs={jobs}", "--ioengine=psync", "--direct=1",
                "--time_based", f"--runtime={seconds}", "--group_reporting",
                "--output-format=json"]
        out = subprocess.run(argv, capture_output=True, text=True, check=True,
                             timeout=seconds * 10 + 60)
        return float(json.loads(out.stdout)["jobs"][0]["write"]["bw_bytes"])
    return run


def engine_create(threads: int, files: int = 20000) -> Workload:
    """The engine's create phase: ``threads`` threads x ``files`` empty files; files/s."""
    def run(path: str) -> float:
        d = os.path.join(path, "create")
        os.makedirs(d)
        (rec,) = run_meta(d, threads, files, ["create"])
        return float(rec["files_per_s"])
    return run


def _clean(path: str) -> None:
    for p in Path(path).iterdir():
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
    os.sync()


def one(workload: Workload, probes: str, path: str, ctx: ProbeContext) -> dict[str, Any]:
    """One run: the probe set started around the workload (``none``: nothing)."""
    _clean(path)
    ps = ProbeSet(resolve(probes), ctx)
    t = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    ps.start()
    try:
        bw = workload(path)
    finally:
        results = ps.stop()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - t
    # iowall's own CPU (sampler threads, trace_pipe parsing, perf's table parsing); the
    # workload is a child process and not in it, nor is perf record itself.
    self_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"probes": probes, "bytes_per_s": bw, "wall_s": round(wall, 3),
            "self_cpu_s": round(self_cpu, 4),
            "skipped": {r.probe: r.skipped for r in results if r.skipped}}


def measure(workload: Workload, probes_a: str, probes_b: str = "none", *, pairs: int = 5,
            bed: str = "ram", fs: str = "xfs", size_bytes: int = 2 << 30,
            log: Callable[[str], None] = print) -> dict[str, Any]:
    """Interleaved pairs of ``probes_a`` and ``probes_b`` runs; ratio of medians a/b."""
    runs: list[dict[str, Any]] = []
    with provision(BedSpec.parse(bed), fs=fs, size_bytes=size_bytes) as b, \
            tempfile.TemporaryDirectory(prefix="iowall-overhead-") as work:
        ctx = ProbeContext(1.0, tuple(b.devices), (b.devno,) if b.devno else (), work)
        for i in range(pairs):
            order = (("a", probes_a), ("b", probes_b))
            for side, spec in order if i % 2 == 0 else order[::-1]:
                r = one(workload, spec, b.path, ctx)
                r["pair"], r["side"] = i, side
                runs.append(r)
                log(f"pair {i} {side} {spec:>16}: {r['bytes_per_s']:14.0f} per s "
                    f"(wall {r['wall_s']:.1f} s, iowall CPU {r['self_cpu_s']:.3f} s)")
    a = [r["bytes_per_s"] for r in runs if r["side"] == "a"]
    b_ = [r["bytes_per_s"] for r in runs if r["side"] == "b"]
    ratio = statistics.median(a) / statistics.median(b_)
    pair_ratios = [x / y for x, y in zip(a, b_, strict=True)]
    cpu_share = statistics.median(r["self_cpu_s"] / r["wall_s"] for r in runs
                                  if r["side"] == "a")
    return {"probes": probes_a, "baseline": probes_b, "pairs": pairs,
            "self_cpu_share": cpu_share,
            "median_bytes_per_s": statistics.median(a),
            "baseline_median_bytes_per_s": statistics.median(b_),
            "ratio_of_medians": ratio, "pair_ratios": pair_ratios,
            "median_pair_ratio": statistics.median(pair_ratios),
            "floor": FLOOR, "ok": ratio >= FLOOR, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", default="default", help="probe set measured (default)")
    ap.add_argument("--baseline", default="none", help="probe set compared with (none)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5, help="fio runtime per run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--files", type=int, default=150000, help="files per thread (create)")
    ap.add_argument("--workload", choices=("write", "direct", "create"), default="write",
                    help="fio buffered write or direct write (MiB/s), or the engine's create "
                         "(files/s)")
    ap.add_argument("--without", metavar="PROBE",
                    help="measure --probes against the same set without PROBE (its own cost)")
    ap.add_argument("--json", help="write the full result here")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("probe_overhead: needs root (ram bed, tracefs, perf)", file=sys.stderr)
        return 2
    if args.without:
        from iowall.probes import REGISTRY
        names = [c.name for c in resolve(args.probes)]
        if args.without not in REGISTRY or args.without not in names:
            print(f"probe_overhead: --without {args.without}: not in {args.probes}",
                  file=sys.stderr)
            return 2
        args.baseline = ",".join(n for n in names if n != args.without) or "none"
    if args.workload == "create":
        work, unit, scale = engine_create(args.jobs, args.files), "files/s", 1.0
        res = measure(work, args.probes, args.baseline, pairs=args.pairs)
        res["workload"] = {"engine": "create", "threads": args.jobs, "files_per_thread": args.files,
                           "bed": "ram", "fs": "xfs"}
    else:
        direct = args.workload == "direct"
        make = fio_direct_write if direct else fio_buffered_write
        work, unit, scale = make(args.jobs, args.seconds), "MiB/s", float(1 << 20)
        res = measure(work, args.probes, args.baseline, pairs=args.pairs)
        res["workload"] = {"fio": "direct write" if direct else "buffered write",
                           "jobs": args.jobs, "seconds": args.seconds, "bs": "1M",
                           "bed": "ram", "fs": "xfs"}
    print(f"{args.probes} vs {args.baseline} ({args.workload}): median "
          f"{res['median_bytes_per_s'] / scale:.0f} vs "
          f"{res['baseline_median_bytes_per_s'] / scale:.0f} {unit}, ratio of medians "
          f"{res['ratio_of_medians']:.3f}, median pair ratio {res['median_pair_ratio']:.3f} "
          f"({'ok' if res['ok'] else 'BELOW'} floor {FLOOR}); iowall's own CPU "
          f"{100 * res['self_cpu_share']:.2f}% of one CPU")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
