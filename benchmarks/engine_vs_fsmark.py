"""Engine create vs ``fs_mark -S0``: the same files, sizes, threads and directories, interleaved.

Cells: tmpfs and XFS over a RAM-backed loop device (``iowall.beds`` ram bed) x 0-byte and
4 KiB files x 1 and 2 threads. Each thread gets its own directory with the same number of
subdirectories and files in both tools (fs_mark: one ``-d`` per thread, ``-D N -N F/N``;
engine: ``meta --dirs-per-thread N``). Every measured run starts on an empty filesystem after
``fsfreeze -f; fsfreeze -u`` (XFS: writes back the previous run's log and metadata) and
``sync; echo 3 > /proc/sys/vm/drop_caches`` (both tools); trees are removed between runs,
untimed. Rounds alternate the order (engine first, then fs_mark first, ...).

Rates: the engine's files_per_s is all files / wall from the start barrier to the last thread;
fs_mark's Files/sec is the sum of its per-process rates (each over its own loop), which can
only be higher than files / wall. The ratio is engine / fs_mark per round (paired), median.

    .venv/bin/python benchmarks/engine_vs_fsmark.py [--quick] [--fs tmpfs,xfs] [--rounds N]
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import drop_caches, file_bench_args, user_share_line

from iowall.beds import BedSpec, provision
from iowall.workloads.engine import run_meta


def fsmark(base: Path, threads: int, files: int, dirs: int, size: int, logdir: str) -> float:
    """One fs_mark -S0 create run; its Files/sec."""
    argv = [
        "fs_mark",
        "-S0",
        "-k",
        "-L",
        "1",
        "-s",
        str(size),
        "-n",
        str(files),
        "-D",
        str(dirs),
        "-N",
        str(files // dirs),
        "-t",
        str(threads),
    ]
    for t in range(threads):
        argv += ["-d", str(base / f"t{t:03d}")]
    cp = subprocess.run(argv, capture_output=True, text=True, cwd=logdir)
    out = cp.stdout
    if cp.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({cp.returncode}):\n{cp.stdout}{cp.stderr}")
    rows = [ln.split() for ln in out.splitlines() if re.match(r"\s*\d+\s+\d+\s+\d+\s+[\d.]+", ln)]
    if not rows:
        raise SystemExit(f"cannot parse fs_mark output:\n{out}")
    count, rate = int(rows[-1][1]), float(rows[-1][3])
    if count != files * threads:
        raise SystemExit(f"fs_mark made {count} files, expected {files * threads}")
    return rate


def clean(path: Path) -> None:
    subprocess.run(["rm", "-rf", str(path)], check=True)


def main() -> int:
    a = file_bench_args(__doc__ or "").parse_args()
    if shutil.which("fs_mark") is None:
        raise SystemExit("fs_mark not found: apt-get install fsmark")
    files = a.files_per_thread or (20000 if a.quick else 40000)
    dirs = 2 if a.quick else 4
    rounds = a.rounds or (2 if a.quick else 3)
    sizes, thread_counts = (0, 4096), (1, 2)
    print(
        f"create: {files} files per thread in {dirs} directories per thread, {rounds} rounds; "
        f"engine files/s / fs_mark files/s (paired per round, median [min-max])"
    )

    results: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
    cpu_share: list[tuple[float, float]] = []
    logdir = tempfile.mkdtemp(prefix="iowall-fsmark-log-")
    try:
        for fs in a.fs.split(","):
            spec = BedSpec.parse("tmpfs" if fs == "tmpfs" else "ram")
            kw = {} if fs == "tmpfs" else {"fs": fs}
            with provision(spec, size_bytes=4 << 30, **kw) as bed:
                root = Path(bed.path)
                for r in range(rounds):
                    for size in sizes:
                        for threads in thread_counts:
                            order = ("engine", "fs_mark") if r % 2 == 0 else ("fs_mark", "engine")
                            got: dict[str, float] = {}
                            for who in order:
                                # fs_mark wants each -d path shorter than 40 bytes
                                d = root / f"{who[0]}{r}{size // 4096}{threads}"
                                d.mkdir()
                                drop_caches(None if fs == "tmpfs" else root)
                                if who == "engine":
                                    (rec,) = run_meta(
                                        d, threads, files, ["create"], dirs_per_thread=dirs, size=size
                                    )
                                    got[who] = rec["files_per_s"]
                                    if fs == "tmpfs":
                                        cpu_share.append((rec["user_s"], rec["sys_s"]))
                                else:
                                    got[who] = fsmark(d, threads, files, dirs, size, logdir)
                                clean(d)
                            results.setdefault((fs, size, threads), []).append(
                                (got["engine"], got["fs_mark"])
                            )
                    print(f"{fs}: round {r + 1}/{rounds} done", file=sys.stderr)
    finally:
        shutil.rmtree(logdir, ignore_errors=True)

    ok = True
    print(
        f"{'fs':6} {'size':>5} {'thr':>3} {'engine files/s':>15} {'fs_mark files/s':>16} "
        f"{'ratio':>6}  {'[min-max]':>13}  target"
    )
    for (fs, size, threads), pairs in results.items():
        ratios = [e / f for e, f in pairs]
        med = statistics.median(ratios)
        target = 1.1 if (fs == "tmpfs" and threads == 2) else 1.0
        verdict = "ok" if med >= target else "BELOW"
        ok = ok and med >= target
        print(
            f"{fs:6} {size:5} {threads:3} {statistics.median(e for e, _ in pairs):15,.0f} "
            f"{statistics.median(f for _, f in pairs):16,.0f} {med:6.2f}  "
            f"[{min(ratios):.2f}-{max(ratios):.2f}]  >= {target} {verdict}"
        )
    if cpu_share:
        share_ok, line = user_share_line("create", cpu_share)
        ok = ok and share_ok
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
