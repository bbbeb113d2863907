"""What the probes cost: throughput of one workload point with a probe set vs without.

    .venv/bin/python benchmarks/probe_overhead.py                       # default vs none
    .venv/bin/python benchmarks/probe_overhead.py --probes default,locks
    .venv/bin/python benchmarks/probe_overhead.py --pairs 7 --seconds 8 --json out.json
    .venv/bin/python benchmarks/probe_overhead.py --probes none     # A/A: the noise floor
    .venv/bin/python benchmarks/probe_overhead.py --without threadstate --workload direct
    .venv/bin/python benchmarks/probe_overhead.py --without threadstate --workload all

The workloads are each recipe's point shape on a ram bed (``--workload all``, FIO_POINTS and
ENGINE_POINTS below): the main job's buffered write, buffered read and direct write, the
engine's create phase and small-file stream, io_uring writes over many files, direct random
writes, buffered mixed I/O; fio's aggregate bytes/s or the engine's files/s.

The default workload is a buffered sequential write at nproc jobs on a ram bed (fio, 1 MiB
blocks, psync, time based, end_fsync), the point ``iowall limits`` measures first. The
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
from iowall.workloads.engine import run_meta, run_smallfiles

Workload = Callable[[str], float]
FLOOR = 0.98


def fio_point(name: str, opts: list[str], jobs: int, seconds: int, size: str = "384M") -> Workload:
    """One fio point on a file of the bed, ``jobs`` jobs, time based; returns fio's aggregate
    bytes/s, reads and writes summed (group_reporting)."""

    def run(path: str) -> float:
        argv = [
            "fio",
            f"--name={name}",
            f"--directory={path}",
            f"--size={size}",
            f"--numjobs={jobs}",
            "--time_based",
            f"--runtime={seconds}",
            "--group_reporting",
            "--output-format=json",
            *opts,
        ]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds * 10 + 60)
        job = json.loads(out.stdout)["jobs"][0]
        return float(job["read"]["bw_bytes"] + job["write"]["bw_bytes"])

    return run


#: Each recipe's point shape, as fio options (the engine's points are below): the main job's
#: buffered write and read and its direct write, buffered-wall's io_uring 2M writes over 10
#: files a job, tag-fairness's direct 1M random writes, bdev-rwmix's buffered 64k mixed I/O.
FIO_POINTS: dict[str, tuple[str, list[str]]] = {
    "write": (
        "buffered write, 1 MiB, psync, end_fsync (limits)",
        ["--rw=write", "--bs=1M", "--ioengine=psync", "--direct=0", "--end_fsync=1"],
    ),
    "read": (
        "buffered read, 1 MiB, psync (limits)",
        ["--rw=read", "--bs=1M", "--ioengine=psync", "--direct=0"],
    ),
    "direct": (
        "direct write, 1 MiB, psync (limits)",
        ["--rw=write", "--bs=1M", "--ioengine=psync", "--direct=1"],
    ),
    "uring": (
        "buffered write, 2 MiB, io_uring, 10 files a job (buffered-wall)",
        [
            "--rw=write",
            "--bs=2M",
            "--ioengine=io_uring",
            "--direct=0",
            "--nrfiles=10",
            "--fallocate=none",
            "--end_fsync=1",
        ],
    ),
    "randwrite": (
        "direct random write, 1 MiB, psync (tag-fairness)",
        ["--rw=randwrite", "--bs=1M", "--ioengine=psync", "--direct=1"],
    ),
    "rwmix": (
        "buffered 64 KiB rw, 30% writes, sync (bdev-rwmix)",
        [
            "--rw=rw",
            "--rwmixwrite=30",
            "--bs=64k",
            "--ioengine=sync",
            "--direct=0",
            "--norandommap",
            "--randrepeat=0",
            "--thread",
        ],
    ),
}


def engine_create(threads: int, files: int = 20000) -> Workload:
    """The engine's create phase: ``threads`` threads x ``files`` empty files; files/s."""

    def run(path: str) -> float:
        d = os.path.join(path, "create")
        os.makedirs(d)
        (rec,) = run_meta(d, threads, files, ["create"])
        return float(rec["files_per_s"])

    return run


def engine_smallfiles(threads: int, seconds: int) -> Workload:
    """small-file-writeback's stream: 4 KiB files through the page cache for ``seconds``;
    files/s."""

    def run(path: str) -> float:
        d = os.path.join(path, "small")
        os.makedirs(d)
        rec = run_smallfiles(d, threads, seconds=seconds, timeout=seconds * 10 + 60)
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
    return {
        "probes": probes,
        "bytes_per_s": bw,
        "wall_s": round(wall, 3),
        "self_cpu_s": round(self_cpu, 4),
        "skipped": {r.probe: r.skipped for r in results if r.skipped},
    }


def measure(
    workload: Workload,
    probes_a: str,
    probes_b: str = "none",
    *,
    pairs: int = 5,
    bed: str = "ram",
    fs: str = "xfs",
    size_bytes: int = 2 << 30,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Interleaved pairs of ``probes_a`` and ``probes_b`` runs; ratio of medians a/b."""
    runs: list[dict[str, Any]] = []
    with (
        provision(BedSpec.parse(bed), fs=fs, size_bytes=size_bytes) as b,
        tempfile.TemporaryDirectory(prefix="iowall-overhead-") as work,
    ):
        ctx = ProbeContext(1.0, tuple(b.devices), (b.devno,) if b.devno else (), work)
        for i in range(pairs):
            order = (("a", probes_a), ("b", probes_b))
            for side, spec in order if i % 2 == 0 else order[::-1]:
                r = one(workload, spec, b.path, ctx)
                r["pair"], r["side"] = i, side
                runs.append(r)
                log(
                    f"pair {i} {side} {spec:>16}: {r['bytes_per_s']:14.0f} per s "
                    f"(wall {r['wall_s']:.1f} s, iowall CPU {r['self_cpu_s']:.3f} s)"
                )
    a = [r["bytes_per_s"] for r in runs if r["side"] == "a"]
    b_ = [r["bytes_per_s"] for r in runs if r["side"] == "b"]
    ratio = statistics.median(a) / statistics.median(b_)
    pair_ratios = [x / y for x, y in zip(a, b_, strict=True)]
    cpu_share = statistics.median(r["self_cpu_s"] / r["wall_s"] for r in runs if r["side"] == "a")
    return {
        "probes": probes_a,
        "baseline": probes_b,
        "pairs": pairs,
        "self_cpu_share": cpu_share,
        "median_bytes_per_s": statistics.median(a),
        "baseline_median_bytes_per_s": statistics.median(b_),
        "ratio_of_medians": ratio,
        "pair_ratios": pair_ratios,
        "median_pair_ratio": statistics.median(pair_ratios),
        "floor": FLOOR,
        "ok": ratio >= FLOOR,
        "runs": runs,
    }


ENGINE_POINTS = {
    "create": "the engine's create phase, empty files (inode-cache)",
    "smallfiles": "4 KiB files through the page cache (small-file-writeback)",
}
WORKLOADS = (*FIO_POINTS, *ENGINE_POINTS)


def workload_for(name: str, args: argparse.Namespace) -> tuple[Workload, str, float]:
    """The workload callable, its unit and the divisor that prints it."""
    if name == "create":
        return engine_create(args.jobs, args.files), "files/s", 1.0
    if name == "smallfiles":
        return engine_smallfiles(args.jobs, args.seconds), "files/s", 1.0
    _, opts = FIO_POINTS[name]
    return fio_point(name, opts, args.jobs, args.seconds), "MiB/s", float(1 << 20)


def measure_one(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Interleaved pairs of one workload, with its description, unit and verdict line."""
    work, unit, scale = workload_for(name, args)
    res = measure(work, args.probes, args.baseline, pairs=args.pairs)
    what = ENGINE_POINTS.get(name) or FIO_POINTS[name][0]
    res["workload"] = {
        "name": name,
        "what": what,
        "jobs": args.jobs,
        "seconds": args.seconds,
        "bed": "ram",
        "fs": "xfs",
        "unit": unit,
    }
    print(
        f"{args.probes} vs {args.baseline} ({name}): median "
        f"{res['median_bytes_per_s'] / scale:.0f} vs "
        f"{res['baseline_median_bytes_per_s'] / scale:.0f} {unit}, ratio of medians "
        f"{res['ratio_of_medians']:.3f}, median pair ratio {res['median_pair_ratio']:.3f} "
        f"({'ok' if res['ok'] else 'BELOW'} floor {FLOOR}); iowall's own CPU "
        f"{100 * res['self_cpu_share']:.2f}% of one CPU",
        flush=True,
    )
    res["scale"] = scale
    return res


def table(results: list[dict[str, Any]]) -> str:
    """A markdown table of every workload measured: medians, ratios, iowall's CPU."""
    rows = [
        "| point | pairs | with / without (median) | ratio of medians | median pair ratio "
        "| iowall CPU (share of one CPU) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        w, sc = r["workload"], r["scale"]
        rows.append(
            f"| {w['what']} | {r['pairs']} | {r['median_bytes_per_s'] / sc:.0f} / "
            f"{r['baseline_median_bytes_per_s'] / sc:.0f} {w['unit']} | "
            f"{r['ratio_of_medians']:.3f} | {r['median_pair_ratio']:.3f} | "
            f"{100 * r['self_cpu_share']:.2f}% |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", default="default", help="probe set measured (default)")
    ap.add_argument("--baseline", default="none", help="probe set compared with (none)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5, help="runtime per run (fio, smallfiles)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--files", type=int, default=150000, help="files per thread (create)")
    ap.add_argument(
        "--workload",
        default="write",
        help="one or more of " + ", ".join(WORKLOADS) + " (comma-separated), "
        "or all: each recipe's point shape",
    )
    ap.add_argument(
        "--without",
        metavar="PROBE",
        help="measure --probes against the same set without PROBE (its own cost)",
    )
    ap.add_argument("--json", help="write the full result here")
    args = ap.parse_args(argv)
    names = list(WORKLOADS) if args.workload == "all" else args.workload.split(",")
    bad = [n for n in names if n not in WORKLOADS]
    if bad:
        print(
            f"probe_overhead: unknown workload {bad[0]!r}: use {', '.join(WORKLOADS)} or all", file=sys.stderr
        )
        return 2
    if os.geteuid() != 0:
        print("probe_overhead: needs root (ram bed, tracefs, perf)", file=sys.stderr)
        return 2
    if args.without:
        from iowall.probes import REGISTRY

        have = [c.name for c in resolve(args.probes)]
        if args.without not in REGISTRY or args.without not in have:
            print(f"probe_overhead: --without {args.without}: not in {args.probes}", file=sys.stderr)
            return 2
        args.baseline = ",".join(n for n in have if n != args.without) or "none"
    results = [measure_one(n, args) for n in names]
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
