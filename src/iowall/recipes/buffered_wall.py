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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..beds import Bed, BedSpec, provision
from ..machine.sysinfo import cpu_count, dirty_thresholds_bytes, meminfo
from ..measure.repeat import RepeatPolicy
from ..measure.runner import Task
from ..measure.session import Session
from ..model import Point, Run
from ..results import Cell, Report, Value
from ..store import Store
from ..vocab.errors import UserError
from ..vocab.progress import Progress
from ..vocab.units import GIB, MIB, fio_size, fmt_bytes, plural
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, one, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, per_label, recipe_report
from .tasks import fio_task

NAME = "buffered-wall"
BS = 2 * MIB
NRFILES = 10


@dataclass(frozen=True)
class _Options:
    """What the user asked of buffered-wall, checked and scaled to the machine."""

    variant: str
    cpus: int
    jobs: int
    directs: tuple[int, ...]
    fs: str
    size: int
    repeat: RepeatPolicy
    label: str
    spec: BedSpec


def _bed_size(quick: bool) -> int:
    avail = meminfo().get("MemAvailable", 0)
    want = 2 * GIB if quick else 8 * GIB
    return max(512 * MIB, min(want, avail // 3)) >> 20 << 20


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("variant", "jobs", "bed_size", "fs", "direct"))
    variant = str(one(opts, "variant", "normal"))
    if variant not in ("normal", "fill"):
        raise UserError("--set variant= takes normal or fill")
    cpus = cpu_count()
    jobs = int(one(opts, "jobs", cpus))
    if any(d not in (0, 1) for d in opts.values("direct") or ()):
        raise UserError("--set direct= takes 0 and/or 1")
    directs = tuple(sorted({int(d) for d in (opts.values("direct") or (0, 1))}))
    fs = str(one(opts, "fs", "xfs"))
    size = size_opt(opts, "bed_size", _bed_size(opts.quick))
    return _Options(
        variant=variant,
        cpus=cpus,
        jobs=jobs,
        directs=directs,
        fs=fs,
        size=size,
        repeat=opts.repeats(quick_default=3, default=3),
        label=opts.label or NAME,
        spec=BedSpec.parse(opts.bed or "ram"),
    )


def _notes(o: _Options, quick: bool) -> list[str]:
    return [
        f"bed: {o.spec} {o.fs} of {fmt_bytes(o.size)} (scaled: {'--quick ' if quick else ''}"
        f"at most a third of free memory)",
        f"{o.jobs} jobs (nproc = {o.cpus}) x {NRFILES} files, bs 2M, io_uring, "
        "fallocate=none, create_on_open=1, group_reporting (the seed's incantation)",
    ]


def _filesize(o: _Options, free: int) -> tuple[int, str]:
    """Each file's size on a bed with ``free`` bytes free, and the note that says why."""
    if o.variant == "fill":
        filesize = max(BS, int(free * 1.5) // (o.jobs * NRFILES) // BS * BS)
        return filesize, (
            f"fill: filesize {fmt_bytes(filesize)}, "
            f"{fmt_bytes(filesize * o.jobs * NRFILES)} asked of a bed with "
            f"{fmt_bytes(free)} free; ENOSPC ends every point (status filled)"
        )
    filesize = int(free * 0.8) // (o.jobs * NRFILES) // BS * BS
    if filesize < BS:
        raise UserError(
            f"the bed has {fmt_bytes(free)} free: too little for {o.jobs} jobs "
            f"x {NRFILES} files of 2M blocks; --set bed_size= larger"
        )
    thr, _ = dirty_thresholds_bytes()
    total = filesize * o.jobs * NRFILES
    return filesize, (
        f"filesize {fmt_bytes(filesize)} per file (80% of the bed's "
        f"{fmt_bytes(free)} free): {fmt_bytes(total)} per point, "
        f"{total / thr if thr else 0:.1f}x the dirty threshold "
        f"({fmt_bytes(thr)}); no end_fsync, as in the seed"
    )


def _tasks(o: _Options, session: Session, bed: Bed, filesize: int) -> list[Task]:
    """One fio point per direct= value, in a fresh directory of the bed."""
    wdir = os.path.join(bed.path, "w")

    def prepare() -> None:
        shutil.rmtree(wdir, ignore_errors=True)
        os.makedirs(wdir)

    def cleanup() -> None:
        shutil.rmtree(wdir, ignore_errors=True)

    def job_for(direct: int) -> Callable[[], JobFile]:
        g = {
            "directory": wdir,
            "nrfiles": NRFILES,
            "bs": "2M",
            "ioengine": "io_uring",
            "group_reporting": 1,
            "filesize": fio_size(filesize),
            "readwrite": "write",
            "fallocate": "none",
            "numjobs": o.jobs,
            "create_on_open": 1,
            "direct": direct,
        }
        return lambda: JobFile(g, [JobSection("ten-files-per-thread", {})])

    tasks = []
    for d in o.directs:
        pt = Point(
            NAME,
            {
                "variant": o.variant,
                "direct": d,
                "jobs": o.jobs,
                "nrfiles": NRFILES,
                "bs": "2m",
                "ioengine": "io_uring",
                "filesize": filesize,
                "rw": "write",
            },
        )
        tasks.append(
            fio_task(
                pt,
                job_for(d),
                drop=session.drop_caches,
                prepare=prepare,
                cleanup=cleanup,
                title=f"{o.variant} {'direct' if d else 'buffered'} {plural(o.jobs, 'job')}",
                expect_enospc=o.variant == "fill",
            )
        )
    return tasks


def _table(o: _Options, cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """One row: direct and buffered bandwidth, their ratio (and with fill, the bytes
    written)."""
    pts = {bool(r.point.params["direct"]): r.point for r in runs}

    def med(direct: bool, lab: str, metric: str) -> float | None:
        return cols.median(pts[direct], lab, metric) if direct in pts else None

    def cells(direct: bool, metric: str, unit: str) -> tuple[Cell, ...]:
        return per_label(cols, lambda lab: Value(med(direct, lab, metric), unit))

    def ratio(lab: str) -> Value:
        dv = med(True, lab, "write_bw_bytes_per_s")
        bv = med(False, lab, "write_bw_bytes_per_s")
        return Value(bv / dv if dv and bv is not None else None, "ratio")

    names = ["Direct", "Buffered", "Buffered/Direct"]
    bw = "write_bw_bytes_per_s"
    values = [cells(True, bw, "B/s"), cells(False, bw, "B/s"), per_label(cols, ratio)]
    if o.variant == "fill":
        names += ["Direct written", "Buffered written"]
        values += [cells(True, "write_io_bytes", "B"), cells(False, "write_io_bytes", "B")]
    return LabelTable(("Variant", "Jobs"), tuple(names), (LabelRow((o.variant, str(o.jobs)), tuple(values)),))


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    notes = _notes(o, opts.quick)
    session = opts.session(store, progress, NAME)
    with provision(o.spec, fs=o.fs, size_bytes=o.size) as bed:
        session.use_beds(bed)
        filesize, sized = _filesize(o, bed.free_bytes())
        notes.append(sized)
        runs = session.execute(_tasks(o, session, bed, filesize), o.repeat)
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs)}, interleaved; medians; caches dropped before each point")
    cols = columns(store, NAME, runs, o.label)
    title = f"buffered-wall (seed 002): sequential write, {o.fs} on a {o.spec} bed"
    return recipe_report(
        NAME,
        title,
        label=o.label,
        batch=session.batch,
        cols=cols,
        table=_table(o, cols, runs),
        notes=notes,
        runs=runs,
        extra={"variant": o.variant, "jobs": o.jobs, "filesize": filesize},
    )


register(
    Recipe(
        name=NAME,
        seed="002",
        description="buffered vs direct sequential write, nproc jobs x 10 files, 2M "
        "io_uring on XFS over RAM (variant=fill: write until ENOSPC)",
        execute=_execute,
        check=_options,
        module=__name__,
    )
)
