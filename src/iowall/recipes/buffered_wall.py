"""`buffered-wall` (seed 002): buffered vs direct sequential write on XFS over a RAM-backed
loop device, nproc jobs, 10 files each, 2M blocks, io_uring — the seed's incantation:

    fio --nrfiles=10 -bs=2M -ioengine=io_uring --group_reporting=1 --filesize=… \
        --readwrite=write --fallocate=none --numjobs=$(nproc) --create_on_open=1

with ``-direct=0`` and ``-direct=1``. ``--filesize`` is scaled to the bed so that the
whole set fits (``variant=normal``); ``variant=fill`` writes more than the bed holds, as the
seed did on pmem: ENOSPC is its expected end, its status is ``filled`` and the bytes fio
reports as written are kept.

"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from ..beds import BedSpec, provision
from ..errors import UserError
from ..model import Point
from ..results import Report
from ..runner import Progress
from ..store import Store
from ..sysinfo import cpu_count, dirty_thresholds_bytes, meminfo
from ..units import GIB, MIB, fio_size, fmt_bytes
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, one, size_opt
from .registry import Recipe, register
from .tables import columns, fmt_mib, head, recipe_report
from .tasks import fio_task

NAME = "buffered-wall"
BS = 2 * MIB
NRFILES = 10

def _bed_size(quick: bool) -> int:
    avail = meminfo().get("MemAvailable", 0)
    want = 2 * GIB if quick else 8 * GIB
    return max(512 * MIB, min(want, avail // 3)) >> 20 << 20


def _check(opts: RecipeOptions) -> None:
    opts.check_sets(NAME, ("variant", "jobs", "bed_size", "fs", "direct"))
    if str(one(opts, "variant", "normal")) not in ("normal", "fill"):
        raise UserError("--set variant= takes normal or fill")
    if any(d not in (0, 1) for d in opts.values("direct") or ()):
        raise UserError("--set direct= takes 0 and/or 1")


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    variant = str(one(opts, "variant", "normal"))
    cpus = cpu_count()
    jobs = int(one(opts, "jobs", cpus))
    directs = sorted({int(d) for d in (opts.values("direct") or (0, 1))})
    fs = str(one(opts, "fs", "xfs"))
    size = size_opt(opts, "bed_size", _bed_size(opts.quick))
    repeat = opts.repeats(quick_default=3, default=3)
    label = opts.label or NAME
    spec = BedSpec.parse(opts.bed or "ram")
    notes = [f"bed: {spec} {fs} of {fmt_bytes(size)} (scaled: {'--quick ' if opts.quick else ''}"
             f"at most a third of free memory)",
             f"{jobs} jobs (nproc = {cpus}) x {NRFILES} files, bs 2M, io_uring, "
             "fallocate=none, create_on_open=1, group_reporting (the seed's incantation)"]
    session = opts.session(store, progress, NAME)
    with provision(spec, fs=fs, size_bytes=size) as bed:
        session.use_beds(bed)
        free = bed.free_bytes()
        if variant == "fill":
            filesize = max(BS, int(free * 1.5) // (jobs * NRFILES) // BS * BS)
            notes.append(f"fill: filesize {fmt_bytes(filesize)}, "
                         f"{fmt_bytes(filesize * jobs * NRFILES)} asked of a bed with "
                         f"{fmt_bytes(free)} free; ENOSPC ends every point (status filled)")
        else:
            filesize = int(free * 0.8) // (jobs * NRFILES) // BS * BS
            if filesize < BS:
                raise UserError(f"the bed has {fmt_bytes(free)} free: too little for {jobs} jobs "
                                f"x {NRFILES} files of 2M blocks; --set bed_size= larger")
            thr, _ = dirty_thresholds_bytes()
            total = filesize * jobs * NRFILES
            notes.append(f"filesize {fmt_bytes(filesize)} per file (80% of the bed's "
                         f"{fmt_bytes(free)} free): {fmt_bytes(total)} per point, "
                         f"{total / thr if thr else 0:.1f}x the dirty threshold "
                         f"({fmt_bytes(thr)}); no end_fsync, as in the seed")
        wdir = os.path.join(bed.path, "w")

        def prepare() -> None:
            shutil.rmtree(wdir, ignore_errors=True)
            os.makedirs(wdir)

        def cleanup() -> None:
            shutil.rmtree(wdir, ignore_errors=True)

        def job_for(direct: int) -> Callable[[], JobFile]:
            g = {"directory": wdir, "nrfiles": NRFILES, "bs": "2M", "ioengine": "io_uring",
                 "group_reporting": 1, "filesize": fio_size(filesize), "readwrite": "write",
                 "fallocate": "none", "numjobs": jobs, "create_on_open": 1, "direct": direct}
            return lambda: JobFile(g, [JobSection("ten-files-per-thread", {})])

        tasks = []
        for d in directs:
            pt = Point(NAME, {"variant": variant, "direct": d, "jobs": jobs, "nrfiles": NRFILES,
                              "bs": "2m", "ioengine": "io_uring", "filesize": filesize,
                              "rw": "write"})
            tasks.append(fio_task(pt, job_for(d), drop=session.drop_caches, prepare=prepare,
                                  cleanup=cleanup,
                                  title=f"{variant} {'direct' if d else 'buffered'} {jobs} jobs",
                                  expect_enospc=variant == "fill"))
        runs = session.execute(tasks, repeat)
    notes += session.notes
    notes.append(f"{repeat.summarise(runs)}, interleaved; medians; caches dropped before "
                 "each point")
    cols = columns(store, NAME, runs, label)
    pts = {bool(r.point.params["direct"]): r.point for r in runs}
    headers: list[str] = ["Variant", "Jobs"]
    row: list[str] = [variant, str(jobs)]
    for d, name in ((True, "Direct"), (False, "Buffered")):
        headers += head(name, cols.labels)
        row += [fmt_mib(cols.median(pts[d], lab, "write_bw_bytes_per_s")) if d in pts else "-"
                for lab in cols.labels]
    headers += head("Buffered/Direct", cols.labels)
    for lab in cols.labels:
        dv = cols.median(pts[True], lab, "write_bw_bytes_per_s") if True in pts else None
        bv = cols.median(pts[False], lab, "write_bw_bytes_per_s") if False in pts else None
        row.append(f"{bv / dv:.2f}" if dv and bv is not None else "-")
    if variant == "fill":
        for d, name in ((True, "Direct written"), (False, "Buffered written")):
            headers += head(name, cols.labels)
            row += [fmt_bytes(v) if (d in pts and (v := cols.median(pts[d], lab,
                                                                    "write_io_bytes")))
                    else "-" for lab in cols.labels]
    title = f"buffered-wall (seed 002): sequential write, {fs} on a {spec} bed"
    return recipe_report(NAME, title, label=label, batch=session.batch, cols=cols,
                         headers=headers,
                  rows=[row], notes=notes, runs=runs,
                  extra={"variant": variant, "jobs": jobs, "filesize": filesize})


register(Recipe(name=NAME, seed="002",
                description="buffered vs direct sequential write, nproc jobs x 10 files, 2M "
                            "io_uring on XFS over RAM (variant=fill: write until ENOSPC)",
                execute=_execute, check=_check, module=__name__))
