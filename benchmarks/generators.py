"""Two generators, one point: fio (pvsync2) against iowall-engine's stream on the very points
`iowall limits` measures (same files, block size, jobs, end fsync), buffered, interleaved;
and what the guest-memory touch buys on a VM whose host takes freed memory back.

    .venv/bin/python benchmarks/generators.py                  # 5 rounds, 1 and 2 jobs
    .venv/bin/python benchmarks/generators.py --rounds 9 --json out.json

Prints per direction and job count the medians, their ratio engine / fio and each side's
half-range; the verdict is the limits report's rule (``analysis.scaling.limits.Agreement.within``):
the engine's median inside fio's range of repeats widened by the larger of the engine's
half-range and 10%. Run as root on a quiet machine. Why the read once disagreed (fio's buffer
16 bytes past a page, its readahead hint), one cause at a time: benchmarks/generator_gap.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from typing import Any

from iowall.analysis.scaling.limits import Agreement, Cell
from iowall.beds import BedSpec, provision
from iowall.machine.sysinfo import cpu_count, dirty_thresholds_bytes, drop_caches, meminfo
from iowall.recipes.limits.sizing import size_points
from iowall.recipes.limits.tasks import LimitsBed, io_job, io_point, layout_read_pool, stream_spec
from iowall.tuning.guestmem import hold_guest_memory
from iowall.tuning.knob_session import KnobSession
from iowall.vocab.units import GIB, MIB
from iowall.workloads.fio import run_fio
from iowall.workloads.stream import run_stream


def _bw(metrics: Any, rw: str) -> float:
    return next(m.value for m in metrics if m.name == f"{rw}_bw_bytes_per_s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--size", default="4G", help="ram bed size")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args(argv)
    jobs = [int(j) for j in args.jobs.split(",")]
    out: dict[str, Any] = {"rounds": args.rounds, "points": []}
    with KnobSession() as ks:
        gm = hold_guest_memory(ks)
        if gm is not None:
            print(
                f"guest memory: touched {gm.touched_bytes / GIB:.1f} GiB at "
                f"{gm.rate / GIB:.2f} GiB/s; reporting held off",
                flush=True,
            )
            out["touch_gib_per_s"] = gm.rate / GIB
        size = int(args.size.rstrip("G")) * GIB
        with provision(BedSpec("ram"), fs="xfs", size_bytes=size) as bed:
            lb = LimitsBed(bed, None)  # type: ignore[arg-type]
            threshold, _ = dirty_thresholds_bytes()
            sizing = size_points(
                free_bytes=bed.free_bytes(),
                dirty_threshold=threshold,
                cpus=cpu_count(),
                mem_total=meminfo().get("MemTotal", 0),
                jobs=jobs,
                quick=True,
            )
            layout_read_pool(lb, sizing, cpu_count())
            figures: dict[tuple[str, int, str], list[float]] = {}
            for r in range(args.rounds):
                for j in jobs:
                    for rw in ("write", "read"):
                        p = io_point(rw, "buffered", j, sizing)
                        order = ("fio", "engine") if r % 2 == 0 else ("engine", "fio")
                        for gen in order:
                            if rw == "write":
                                shutil.rmtree(lb.write_dir, ignore_errors=True)
                                os.makedirs(lb.write_dir)
                            drop_caches()
                            if gen == "fio":
                                bw = _bw(run_fio(io_job(p, lb, sizing), bw_log_ms=0).metrics, rw)
                            else:
                                bw = _bw(run_stream(stream_spec(p, lb, sizing)).metrics, rw)
                            figures.setdefault((rw, j, gen), []).append(bw)
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"{'point':14} {'fio MiB/s':>16} {'engine MiB/s':>16} {'eng/fio':>8}  agree")
    for j in jobs:
        for rw in ("write", "read"):
            f, e = figures[(rw, j, "fio")], figures[(rw, j, "engine")]
            mf, me = statistics.median(f), statistics.median(e)
            hf, he = (max(f) - min(f)) / 2 / mf, (max(e) - min(e)) / 2 / me
            ratio = me / mf
            agree = Agreement(rw, j, Cell.of(e, range(len(e))), Cell.of(f, range(len(f))))
            print(
                f"{rw + ' ' + str(j) + ' job' + ('s' if j > 1 else ''):14} "
                f"{mf / MIB:10.0f} ±{hf:4.0%} {me / MIB:10.0f} ±{he:4.0%} {ratio:8.2f}  "
                f"{'yes' if agree.within else 'NO'}"
            )
            out["points"].append({"rw": rw, "jobs": j, "fio": f, "engine": e, "ratio": ratio})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
