"""Why fio and iowall-engine disagree on one buffered read (issue 36 item 6): the read point of
`iowall limits --quick` (2 jobs, bs 2M, pvsync2/preadv2, the read pool of 40 files on a ram bed
sized as limits --quick sizes it, 5 GiB: XFS on a loop device over an image in /dev/shm; the job
file and the engine's arguments are limits' own) run by both generators with one thing changed
at a time, the variants interleaved round after round (each round starts one variant later).
"fio's defaults" is limits' job without the two options it now sets (iomem_align=4096,
fadvise_hint=0): what limits ran before.

    .venv/bin/python benchmarks/generator_gap.py --case cold    # as limits: caches dropped,
                                                                # 3 s time-based, each pass cold
    .venv/bin/python benchmarks/generator_gap.py --case warm    # one pass, files in the cache
    .venv/bin/python benchmarks/generator_gap.py --case write   # the write point, 4 variants
    .venv/bin/python benchmarks/generator_gap.py --case profile # perf record of each side
    .venv/bin/python benchmarks/generator_gap.py --case copy    # the CPU's copy, no I/O
    options: --rounds N (5; profile 3), --only SUBSTRING[,..] (the variants whose names
             contain one; the engine as limits runs it always), --json FILE, --size 5G

Per variant: the median MiB/s and range, the ratio to the engine as limits runs it, user and
system CPU seconds per GiB read (wait4's rusage of the generator and its children: fio's job
processes), the loop device's bytes read per byte delivered (diskstats), the reads that came
back short, the CPU seconds other processes used meanwhile (a disturbed round shows), and for
the THP variants how much anonymous memory was in huge pages during the run. ``profile``
records each side's own threads (``perf record -e cpu-clock -g``) and gives the share of CPU
in the kernel's copy to user space, in fio's own user-space code, and the rate at which the
kernel copied while copying (bytes read over the copy's CPU seconds). ``copy`` is the
machine's copy rate for reference (``perf bench mem memcpy``, the engine's memcopy) and
``rep movsb`` of 2 MiB into a destination at each offset from the source's page offset (a
20-line C program, compiled with cc).

Root, fio, perf, xfsprogs and cc (for copy); each case takes 1-5 minutes. Run it under
``flock /tmp/iowall-tests.lock`` on a shared machine. Results: docs/engine.md ("fio and the
engine on one buffered point") and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from iowall.beds import BedSpec, provision
from iowall.machine.sysinfo import cpu_count, dirty_thresholds_bytes, drop_caches, meminfo
from iowall.model import Point
from iowall.recipes.limits.sizing import default_jobs, size_points
from iowall.recipes.limits.tasks import LimitsBed, io_job, io_point, job_files, layout_read_pool, stream_spec
from iowall.vocab.units import GIB, MIB
from iowall.workloads.engine import engine_path
from iowall.workloads.fio import BW_LOG_MS, JobFile, with_bw_logs

THP = "/sys/kernel/mm/transparent_hugepage/enabled"
PF_KTHREAD = 0x00200000
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: perf record's sampling rate of cpu-clock in the profile case
PROFILE_HZ = 1999
#: the kernel's copy to and from user space, as perf names its frames on 6.x
COPY_SYMS = re.compile(
    r"^(_copy_to_iter|_copy_from_iter|copy_page_to_iter|copy_user_\w+|rep_movs\w*|copy_to_user\w*)"
)


@dataclass(frozen=True)
class Variant:
    """One way of running the point: a generator and what differs from how limits runs it."""

    name: str
    gen: str  # "fio" or "engine"
    fio_set: Mapping[str, object] = field(default_factory=dict)
    #: the [global] options of iowall's job left out ("iomem_align": fio's default buffer)
    fio_drop: tuple[str, ...] = ()
    log: bool = True  # the 10 ms bandwidth log limits asks both generators for
    buf_offset: int = 0  # the engine's buffer this far past a page
    thp: str = ""  # /sys/kernel/mm/transparent_hugepage/enabled for the run ("": as it is)


#: fio's defaults where iowall's job now sets them: a malloc'd buffer, POSIX_FADV_SEQUENTIAL
FIO_DEFAULT = ("iomem_align", "fadvise_hint")
NOW = "fio, as limits now (iomem_align=4096 fadvise_hint=0)"
BEFORE = "fio, fio's defaults (limits before)"
READ_VARIANTS = (
    Variant(BEFORE, "fio", fio_drop=FIO_DEFAULT),
    Variant("fio, defaults, no bw log", "fio", fio_drop=FIO_DEFAULT, log=False),
    Variant(
        "fio, defaults, gtod_reduce=1, no log", "fio", {"gtod_reduce": 1}, fio_drop=FIO_DEFAULT, log=False
    ),
    Variant(
        "fio, defaults, disable_lat=1 clat_percentiles=0",
        "fio",
        {"disable_lat": 1, "clat_percentiles": 0},
        fio_drop=FIO_DEFAULT,
    ),
    Variant("fio, defaults, psync (pread)", "fio", {"ioengine": "psync"}, fio_drop=FIO_DEFAULT),
    Variant("fio, defaults, THP always", "fio", fio_drop=FIO_DEFAULT, thp="always"),
    Variant("fio, defaults, fadvise_hint=0", "fio", {"fadvise_hint": 0}, fio_drop=("iomem_align",)),
    Variant("fio, defaults, iomem_align=64", "fio", {"iomem_align": 64}, fio_drop=("fadvise_hint",)),
    Variant("fio, defaults, iomem_align=4096", "fio", fio_drop=("fadvise_hint",)),
    Variant(NOW, "fio"),
    Variant("fio, as limits now, no bw log", "fio", log=False),
    Variant("engine (limits)", "engine"),
    Variant("engine, no bw log", "engine", log=False),
    Variant("engine, buffer 16 B past a page", "engine", buf_offset=16),
    Variant("engine, THP always", "engine", thp="always"),
)
WARM_EXTRA = tuple(
    Variant(f"engine, buffer {o} B past a page", "engine", buf_offset=o) for o in (8, 32, 64, 4080)
)
WRITE_VARIANTS = (
    Variant(BEFORE, "fio", fio_drop=FIO_DEFAULT),
    Variant(NOW, "fio"),
    Variant("engine (limits)", "engine"),
    Variant("engine, buffer 16 B past a page", "engine", buf_offset=16),
)
PROFILE_VARIANTS = (
    Variant(BEFORE, "fio", fio_drop=FIO_DEFAULT),
    Variant("fio, defaults, iomem_align=4096", "fio", fio_drop=("fadvise_hint",)),
    Variant(NOW, "fio"),
    Variant("engine (limits)", "engine"),
    Variant("engine, buffer 16 B past a page", "engine", buf_offset=16),
)


@contextmanager
def thp_mode(mode: str) -> Iterator[None]:
    """THP's ``enabled`` set to ``mode`` for the block, restored after ("": untouched)."""
    if not mode:
        yield
        return
    with open(THP) as f:
        before = re.search(r"\[(\w+)\]", f.read())
    try:
        with open(THP, "w") as f:
            f.write(mode)
        yield
    finally:
        if before:
            with open(THP, "w") as f:
                f.write(before.group(1))


def proc_cpu() -> dict[int, float]:
    """CPU seconds of every user-space process now (kernel threads left out)."""
    out: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[6]) & PF_KTHREAD:
            continue
        out[int(d)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


def sectors_read(dev: str) -> int:
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[2])


class HugeWatch:
    """The most anonymous memory in huge pages above the level at the start, sampled."""

    def __init__(self) -> None:
        self.base = meminfo().get("AnonHugePages", 0)
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, meminfo().get("AnonHugePages", 0) - self.base)

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.peak


@dataclass
class Setup:
    """The bed and the point both generators run."""

    lb: LimitsBed
    point: Point
    sizing: Any
    device: str


def fio_text(v: Variant, s: Setup, *, warm: bool = False) -> str:
    """The job iowall runs for the point, changed as the variant says; warm: the files' pages
    kept at open (fio's invalidate=1, its default, would drop them)."""
    job = io_job(s.point, s.lb, s.sizing)
    g = {k: val for k, val in job.global_options.items() if k not in v.fio_drop}
    g.update(v.fio_set)
    if warm:
        g["invalidate"] = 0
    return str(with_bw_logs(JobFile(g, job.sections), BW_LOG_MS if v.log else 0))


def run_one(v: Variant, s: Setup, *, warm: bool, perf_out: str | None = None) -> dict[str, Any]:
    """One run of the variant: caches dropped first (cold) or the files read into the cache
    (warm); its figures."""
    rw = str(s.point.params["rw"])
    if rw == "write":
        shutil.rmtree(s.lb.write_dir, ignore_errors=True)
        os.makedirs(s.lb.write_dir)
    if not warm:
        drop_caches()
    else:
        for name in s.lb.pool_files(s.sizing):
            with open(os.path.join(s.lb.read_dir, name), "rb") as f:
                while f.read(8 << 20):
                    pass
    with tempfile.TemporaryDirectory(prefix="iowall-gap-") as tmp:
        if v.gen == "fio":
            with open(os.path.join(tmp, "job.fio"), "w") as f:
                f.write(fio_text(v, s, warm=warm))
            argv = ["fio", "--output-format=json", "--output=out.json", "job.fio"]
        else:
            spec = replace(
                stream_spec(s.point, s.lb, s.sizing),
                log_ms=BW_LOG_MS if v.log else 0,
                buf_offset=v.buf_offset,
            )
            lst = os.path.join(tmp, "files.list")
            with open(lst, "w") as f:
                f.write(spec.files_list())
            argv = [engine_path(), *spec.args(lst)]
        if perf_out:
            argv = [
                "perf",
                "record",
                "-q",
                "-g",
                "-e",
                "cpu-clock",
                "-F",
                str(PROFILE_HZ),
                "-o",
                perf_out,
                "--",
                *argv,
            ]
        with thp_mode(v.thp):
            before, sec0 = proc_cpu(), sectors_read(s.device)
            huge = HugeWatch() if v.thp else None
            with open(os.path.join(tmp, "stdout"), "w") as out:
                child = subprocess.Popen(argv, cwd=tmp, stdout=out, stderr=subprocess.PIPE)
                _, status, ru = os.wait4(child.pid, 0)
            peak_huge = huge.stop() if huge else None
            after, sec1 = proc_cpu(), sectors_read(s.device)
        if status:
            raise SystemExit(
                f"{v.name}: exit status {status}: {child.stderr.read().decode() if child.stderr else ''}"
            )
        me = os.getpid()
        others = sum(t - before.get(pid, 0.0) for pid, t in after.items() if pid != me)
        res: dict[str, Any] = {
            "user_s": ru.ru_utime,
            "sys_s": ru.ru_stime,
            "device_bytes": (sec1 - sec0) * 512,
            "others_cpu_s": round(others, 3),
            "huge_bytes": peak_huge,
        }
        if v.gen == "fio":
            with open(os.path.join(tmp, "out.json")) as f:
                raw = json.load(f)
            (job,) = raw["jobs"]
            d = job[rw]
            res.update(
                bytes_per_s=float(d["bw_bytes"]),
                bytes=int(d["io_bytes"]),
                ios=int(d["total_ios"]),
                short_ios=int(d.get("short_ios", 0)),
                runtime_s=d["runtime"] / 1000.0,
            )
        else:
            with open(os.path.join(tmp, "stdout")) as f:
                rec = json.loads(f.read().splitlines()[-1])
            res.update(
                bytes_per_s=float(rec["bytes_per_s"]),
                bytes=int(rec["bytes"]),
                ios=int(rec["ios"]),
                short_ios=None,  # not counted apart: bytes / ios shows a short read
                runtime_s=float(rec["runtime_s"]),
            )
    return res


def profile_of(path: str, nbytes: int) -> dict[str, Any]:
    """Where a recorded generator's CPU went: samples in the kernel's copy to user space, in
    user space (fio's own code, glibc, the vDSO), the rest in the kernel; the copy's rate."""
    out = subprocess.run(
        [
            "perf",
            "report",
            "-i",
            path,
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
            "--stdio",
            "-F",
            "sample,sym",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = copy = user = 0
    top_user: list[tuple[int, str]] = []
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)\s+\[([.k])\]\s+(\S+)", line)
        if not m:
            continue
        n, space, sym = int(m.group(1)), m.group(2), m.group(3)
        total += n
        if space == ".":
            user += n
            top_user.append((n, sym))
        elif COPY_SYMS.match(sym):
            copy += n
    copy_s = copy / PROFILE_HZ
    return {
        "cpu_s": total / PROFILE_HZ,
        "copy_s": copy_s,
        "user_share": user / total if total else 0.0,
        "copy_share": copy / total if total else 0.0,
        "copy_bytes_per_s": nbytes / copy_s if copy_s else None,
        "top_user": [f"{sym} {n / total:.1%}" for n, sym in sorted(top_user, reverse=True)[:3]],
    }


def summary(runs: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float, float]:
    vals = [float(r[key]) for r in runs]
    return statistics.median(vals), min(vals), max(vals)


def table(figures: Mapping[str, list[dict[str, Any]]], ref: str) -> list[str]:
    ref_med = summary(figures[ref], "bytes_per_s")[0]
    lines = [
        f"{'variant':56} {'MiB/s':>7} {'range':>13} {'/eng':>5} {'usr s/GiB':>9} {'sys s/GiB':>9} "
        f"{'dev/read':>8} {'B/io':>8} {'short':>5} {'others s':>8} {'THP MiB':>7}"
    ]
    for name, runs in figures.items():
        med, lo, hi = summary(runs, "bytes_per_s")
        gib = sum(r["bytes"] for r in runs) / GIB
        usr = sum(r["user_s"] for r in runs) / gib
        sys_ = sum(r["sys_s"] for r in runs) / gib
        dev = sum(r["device_bytes"] for r in runs) / sum(r["bytes"] for r in runs)
        per_io = sum(r["bytes"] for r in runs) / sum(r["ios"] for r in runs)
        others = statistics.median(r["others_cpu_s"] for r in runs)
        shorts = [r["short_ios"] for r in runs if r["short_ios"] is not None]
        short = f"{sum(shorts):5d}" if shorts else f"{'-':>5}"
        huge = [r["huge_bytes"] for r in runs if r["huge_bytes"] is not None]
        thp = f"{statistics.median(huge) / MIB:7.0f}" if huge else f"{'':7}"
        lines.append(
            f"{name:56} {med / MIB:7.0f} {lo / MIB:6.0f}-{hi / MIB:<6.0f} {med / ref_med:5.2f} {usr:9.3f} "
            f"{sys_:9.3f} {dev:8.3f} {per_io:8.0f} {short} {others:8.2f} {thp}"
        )
    return lines


@contextmanager
def setup(case: str, size: int) -> Iterator[Setup]:
    cpus = cpu_count()
    with provision(BedSpec("ram"), fs="xfs", size_bytes=size) as bed:
        lb = LimitsBed(bed, None)  # type: ignore[arg-type,unused-ignore]
        threshold, _ = dirty_thresholds_bytes()
        sizing = size_points(
            free_bytes=bed.free_bytes(),
            dirty_threshold=threshold,
            cpus=cpus,
            mem_total=meminfo().get("MemTotal", 0),
            jobs=default_jobs(cpus),
            quick=True,
        )
        layout_read_pool(lb, sizing, cpus)
        point = io_point("write" if case == "write" else "read", "buffered", min(2, cpus), sizing)
        if case == "warm":  # one pass over files already in the cache, nothing dropped
            params = {k: v for k, v in point.params.items() if k != "runtime_s"}
            point = Point(point.recipe, params)
        yield Setup(lb, point, sizing, str(bed.facts.get("device") or ""))


def io_case(args: argparse.Namespace) -> dict[str, Any]:
    variants = {"write": WRITE_VARIANTS, "warm": READ_VARIANTS + WARM_EXTRA}.get(args.case, READ_VARIANTS)
    if args.only:
        keys = args.only.split(",")
        variants = tuple(v for v in variants if any(k in v.name for k in keys) or v.name == "engine (limits)")
    figures: dict[str, list[dict[str, Any]]] = {v.name: [] for v in variants}
    with setup(args.case, args.size) as s:
        if args.case == "warm":
            assert "time_based" not in io_job(s.point, s.lb, s.sizing).global_options
        per_job, fsize = job_files(s.point, s.lb, s.sizing)
        files = sum(len(names) for names in per_job)
        print(
            f"{args.case}: {s.point.params['rw']} {s.point.params['jobs']} jobs, bs 2M, "
            f"{files} files of {fsize / MIB:.0f} MiB on {s.device}; THP {open(THP).read().strip()}",
            flush=True,
        )
        for r in range(args.rounds):
            order = list(variants[r % len(variants) :] + variants[: r % len(variants)])
            for v in order:
                figures[v.name].append(run_one(v, s, warm=args.case == "warm"))
            load = os.getloadavg()[0]
            print(f"round {r + 1}/{args.rounds} done (load {load:.1f})", file=sys.stderr, flush=True)
    print("\n".join(table(figures, "engine (limits)")))
    return {"case": args.case, "figures": figures}


def profile_case(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {v.name: [] for v in PROFILE_VARIANTS}
    with setup("cold", args.size) as s, tempfile.TemporaryDirectory(prefix="iowall-gap-perf-") as tmp:
        for r in range(args.rounds):
            k = r % len(PROFILE_VARIANTS)
            for v in PROFILE_VARIANTS[k:] + PROFILE_VARIANTS[:k]:
                path = os.path.join(tmp, "perf.data")
                res = run_one(v, s, warm=False, perf_out=path)
                out[v.name].append({**res, **profile_of(path, res["bytes"])})
    print(
        f"{'variant':54} {'MiB/s':>6} {'CPU s':>6} {'copy':>6} {'user':>6} {'copy GiB/s':>10}  "
        "fio's own functions (share of its CPU)"
    )
    for name, runs in out.items():
        rate = statistics.median(r["copy_bytes_per_s"] or 0.0 for r in runs)
        print(
            f"{name:54} {statistics.median(r['bytes_per_s'] for r in runs) / MIB:6.0f} "
            f"{statistics.median(r['cpu_s'] for r in runs):6.2f} "
            f"{statistics.median(r['copy_share'] for r in runs):6.1%} "
            f"{statistics.median(r['user_share'] for r in runs):6.1%} {rate / GIB:10.2f}  "
            f"{', '.join(runs[-1]['top_user']) if name.startswith('fio') else ''}"
        )
    return {"case": "profile", "figures": out}


MOVSB_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
	struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9;
}
static void movsb(void *d, const void *s, size_t n) {
	asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
int main(int argc, char **argv) {
	size_t n = 2 << 20; char *src = aligned_alloc(4096, n), *dst = aligned_alloc(4096, n + 8192);
	memset(src, 1, n); memset(dst, 2, n + 8192);
	for (int k = 1; k < argc; k++) {
		int off = atoi(argv[k]); double best = 1e9;
		for (int p = 0; p < 5; p++) {
			double t0 = now();
			for (int i = 0; i < 128; i++) movsb(dst + off, src, n);
			if (now() - t0 < best) best = now() - t0;
		}
		printf("%d %.0f\n", off, 128.0 * n / best);
	}
	return 0;
}
"""


def copy_case(args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for size in ("2MB", "64MB"):
        out = subprocess.run(
            ["perf", "bench", "mem", "memcpy", "-f", "x86-64-movsb", "-s", size, "-l", "200"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        m = re.search(r"([\d.]+) GB/sec", out)
        res[f"perf movsb {size}"] = float(m.group(1)) * GIB if m else None
    for threads in (1, 2):
        for size in ("2M", "64M"):
            out = subprocess.run(
                [engine_path(), "memcopy", "--threads", str(threads), "--bytes", size, "--passes", "5"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            doc = json.loads(out.splitlines()[-1])
            res[f"engine memcopy {threads} thread(s) {size}"] = doc["methods"]["movsb"]["total_bytes_per_s"]
    for k, v in res.items():
        print(f"{k:36} {v / GIB:6.1f} GiB/s")
    if shutil.which("cc"):
        with tempfile.TemporaryDirectory(prefix="iowall-gap-cc-") as tmp:
            src, exe = os.path.join(tmp, "m.c"), os.path.join(tmp, "m")
            with open(src, "w") as f:
                f.write(MOVSB_C)
            subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
            offs = ["0", "8", "16", "24", "32", "48", "64", "128", "2048", "4032", "4080"]
            out = subprocess.run([exe, *offs], capture_output=True, text=True, check=True).stdout
        print("rep movsb of 2 MiB (L2/L3-resident), destination offset from the source's page offset:")
        for line in out.splitlines():
            off, bps = line.split()
            res[f"movsb dst+{off}"] = float(bps)
            print(f"  +{off:>4} B: {float(bps) / GIB:5.1f} GiB/s")
    return {"case": "copy", "figures": res}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--case", choices=("cold", "warm", "write", "profile", "copy"), default="cold")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--only", help="comma list of substrings of the variants to run (and the engine)")
    ap.add_argument("--size", default="5G", help="ram bed size (limits --quick: 5G)")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args(argv)
    args.size = int(args.size.rstrip("G")) * GIB
    args.rounds = args.rounds or (3 if args.case == "profile" else 5)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    if args.case == "copy":
        doc = copy_case(args)
    elif args.case == "profile":
        doc = profile_case(args)
    else:
        doc = io_case(args)
    doc["started"], doc["finished"] = started, time.strftime("%Y-%m-%d %H:%M:%S")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
