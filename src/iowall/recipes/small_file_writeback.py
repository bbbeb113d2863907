"""`small-file-writeback` (seed 004): 4 KiB files created through the page cache for a fixed
time (``iowall-engine smallfiles``), against the direct-I/O 4k random-write IOPS ceiling of
the same device.

Per point: files/s, the device write IOPS reached (diskstats probe), the flusher's busy %
(flusher probe: writeback kworker CPU of the bed's bdi) and the time writers spent throttled
in balance_dirty_pages (throttle probe). The ceiling is fio randwrite bs 4k, io_uring,
direct, iodepth 32 on a file on the bed. ``variant=extsize`` repeats the stream with a 4 KiB
extent size hint on the root directory (knob ``xfs:extsize``), as the seed did to avoid
delayed allocation.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from ..beds import Bed, BedSpec, provision
from ..machine.sysinfo import cpu_count, dirty_thresholds_bytes, meminfo
from ..measure.repeat import RepeatPolicy
from ..measure.runner import Outcome, Partial, Task
from ..measure.session import Session
from ..model import Artifact, Metric, Point, Run
from ..results import Report, Value
from ..store import Store
from ..tuning.knob_session import KnobSession
from ..vocab.errors import UserError
from ..vocab.knob import parse_knob
from ..vocab.progress import Progress
from ..vocab.units import GIB, fio_size, fmt_bytes, plural
from ..workloads.engine import EngineRunError, run_smallfiles
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, counts, one, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, per_label, recipe_report
from .tasks import fio_task

NAME = "small-file-writeback"
VARIANTS = ("default", "extsize")


def _stream_task(session: Session, bed: Bed, variant: str, threads: int, seconds: int) -> Task:
    point = Point(
        NAME,
        {
            "kind": "smallfiles",
            "variant": variant,
            "threads": threads,
            "size": 4096,
            "seconds": seconds,
            "fsync": "none",
        },
    )
    d = os.path.join(bed.path, "sf")

    def remove() -> None:
        shutil.rmtree(d, ignore_errors=True)

    def execute(partial: Partial) -> Outcome:
        session.drop_caches(partial)
        with KnobSession(bed) as ks:
            if variant == "extsize":
                ks.set(parse_knob("xfs:extsize"), "4k")
            os.makedirs(d)  # created after the hint: it inherits it
            status = "ok"
            notes: tuple[str, ...] = ()
            try:
                rec = run_smallfiles(d, threads, 4096, seconds=float(seconds))
            except EngineRunError as e:
                if e.errno_name != "ENOSPC":
                    raise
                rec = dict(e.record)
                status, notes = "filled", ("the bed filled up (ENOSPC) before the time",)
        metrics = [
            Metric("files_per_s", float(rec.get("files_per_s", 0.0)), "files/s"),
            Metric("files", float(rec.get("files", 0)), "files"),
            Metric("wall_s", float(rec.get("wall_s", 0.0)), "s", "lower"),
        ]
        return Outcome(
            status=status,  # type: ignore[arg-type]
            metrics=tuple(metrics),
            notes=notes,
            artifacts=(Artifact("engine.json", "application/json", json.dumps(rec)),),
        )

    return Task(
        point,
        execute,
        weight=seconds,
        title=f"small files {variant} {plural(threads, 'thread')}",
        prepare=remove,
        cleanup=remove,
    )


def _ceiling_task(session: Session, bed: Bed, jobs: int, seconds: int, size: int) -> Task:
    point = Point(
        NAME,
        {
            "kind": "dio-ceiling",
            "rw": "randwrite",
            "bs": "4k",
            "ioengine": "io_uring",
            "direct": 1,
            "iodepth": 32,
            "jobs": jobs,
            "size": size,
            "seconds": seconds,
            "overwrite": 1,
        },
    )
    path = os.path.join(bed.path, "ceiling.dat")

    def job() -> JobFile:
        g = {
            "filename": path,
            "size": fio_size(size),
            "rw": "randwrite",
            "bs": "4k",
            "ioengine": "io_uring",
            "direct": 1,
            "iodepth": 32,
            "numjobs": jobs,
            "time_based": 1,
            "runtime": seconds,
            "group_reporting": 1,
            "norandommap": 1,
            "randrepeat": 0,
            # lay the file out with real writes first: otherwise the first repeat writes
            # into unwritten extents (measured: 0.3x the later repeats' IOPS)
            "overwrite": 1,
        }
        return JobFile(g, [JobSection("dio-ceiling", {})])

    return fio_task(
        point,
        job,
        drop=session.drop_caches,
        title=f"direct 4k randwrite ceiling {plural(jobs, 'job')}",
        weight=seconds,
    )


@dataclass(frozen=True)
class _Options:
    """What the user asked of small-file-writeback, checked and scaled to the machine."""

    variants: tuple[str, ...]
    cpus: int
    threads: tuple[int, ...]
    seconds: int
    size: int
    ceiling_size: int
    repeat: RepeatPolicy
    label: str
    spec: BedSpec


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("variant", "threads", "seconds", "bed_size"))
    variants = tuple(str(v) for v in (opts.values("variant") or VARIANTS))
    if any(v not in VARIANTS for v in variants):
        raise UserError("--set variant= takes default and/or extsize")
    cpus = cpu_count()
    threads = counts(opts, "threads", (cpus,))
    seconds = int(one(opts, "seconds", 10 if opts.quick else 30))
    if seconds < 1:
        raise UserError("--set seconds= at least 1")
    avail = meminfo().get("MemAvailable", 0)
    size = size_opt(
        opts, "bed_size", max(GIB, min(4 * GIB if opts.quick else 8 * GIB, avail // 3)) >> 20 << 20
    )
    return _Options(
        variants=variants,
        cpus=cpus,
        threads=tuple(threads),
        seconds=seconds,
        size=size,
        ceiling_size=min(GIB, size // 4) >> 20 << 20,
        repeat=opts.repeats(quick_default=1, default=3),
        label=opts.label or NAME,
        spec=BedSpec.parse(opts.bed or "ram"),
    )


def _notes(o: _Options) -> list[str]:
    notes = [
        f"bed: {o.spec} xfs of {fmt_bytes(o.size)} (scaled to a third of free memory at most)",
        f"small files: 4 KiB each, {', '.join(map(str, o.threads))} thread(s) (nproc = "
        f"{o.cpus}), {o.seconds} s per point, no fsync: writeback is the flusher's job",
        f"ceiling: fio randwrite bs 4k io_uring direct iodepth 32, {o.cpus} job(s), "
        f"{o.seconds} s on a {fmt_bytes(o.ceiling_size)} file on the same bed",
        "device write IOPS from /proc/diskstats of the bed's device during the stream; "
        "flusher busy % is the bdi writeback kworker CPU (100% = one CPU); throttled is "
        "the writers' total pause in balance_dirty_pages",
    ]
    if "extsize" in o.variants:
        notes.append(
            "extsize: a 4 KiB extent size hint on the root directory (xfs:extsize, "
            "inherited), so delayed allocation is not used (as in the seed)"
        )
    return notes


def _tasks(o: _Options, session: Session, bed: Bed) -> list[Task]:
    """The direct-I/O ceiling, then the stream of every variant at every thread count."""
    tasks = [_ceiling_task(session, bed, o.cpus, o.seconds, o.ceiling_size)]
    for t in o.threads:
        tasks += [_stream_task(session, bed, v, t, o.seconds) for v in o.variants]
    return tasks


def _table(cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """Per variant and thread count: files/s, the device's write IOPS, the ceiling, files/s
    as a share of it, the flusher's busy share and the writers' throttled time."""
    ceil_pt = next(r.point for r in runs if r.point.params["kind"] == "dio-ceiling")
    stream_pts: list[Point] = []
    for r in runs:
        if r.point.params["kind"] == "smallfiles" and r.point not in stream_pts:
            stream_pts.append(r.point)

    def share(lab: str, p: Point) -> Value:
        f, c = cols.median(p, lab, "files_per_s"), cols.median(ceil_pt, lab, "write_iops")
        return Value(f / c if f is not None and c else None, "share")

    def row(p: Point) -> LabelRow:
        return LabelRow(
            (str(p.params["variant"]), str(p.params["threads"])),
            (
                cols.cells(p, "files_per_s", "files/s"),
                cols.cells(p, "disk_write_iops", "ops_per_s"),
                cols.cells(ceil_pt, "write_iops", "IO/s"),
                per_label(cols, lambda lab: share(lab, p)),
                cols.cells(p, "flusher_cpu_share", "percent"),
                cols.cells(p, "throttle_pause_s", "s"),
            ),
        )

    return LabelTable(
        ("Variant", "Threads"),
        ("Files/s", "Write IOPS", "DIO IOPS", "Share", "Flusher busy", "Throttled"),
        tuple(row(p) for p in stream_pts),
        left=2,
    )


def _under_threshold(runs: Sequence[Run]) -> list[str]:
    """The note that writers were never throttled, when no point wrote the dirty threshold."""
    thr, _ = dirty_thresholds_bytes()
    most = max((r.metric("files") or 0.0 for r in runs), default=0.0) * 4096
    if thr and most < thr:
        return [
            f"at most {fmt_bytes(most)} of files were written per point, under the "
            f"dirty threshold ({fmt_bytes(thr)}): writers were not throttled; "
            "--set seconds= longer (or a lower vm.dirty_bytes) to reach the wall"
        ]
    return []


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    notes = _notes(o)
    session = opts.session(store, progress, NAME)
    with provision(o.spec, fs="xfs", size_bytes=o.size) as bed:
        session.use_beds(bed)
        runs = session.execute(_tasks(o, session, bed), o.repeat)
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs)}, interleaved; medians")
    cols = columns(store, NAME, runs, o.label)
    table = _table(cols, runs)
    notes += _under_threshold(runs)
    notes.append(
        "Share = files/s as a fraction of the direct-I/O 4k write IOPS ceiling (one file = one 4 KiB write)"
    )
    notes += sorted({s for r in runs for s in _skipped(r)})
    title = "small-file-writeback (seed 004): 4 KiB files through the page cache, xfs"
    return recipe_report(
        NAME, title, label=o.label, batch=session.batch, cols=cols, table=table, notes=notes, runs=runs
    )


def _skipped(r: Run) -> list[str]:
    return [n for n in r.notes if "skipped" in n]


register(
    Recipe(
        name=NAME,
        seed="004",
        description="4 KiB files through the page cache vs the device's direct-I/O "
        "4k IOPS ceiling; flusher busy %, throttled time; xfs extsize 4k",
        execute=_execute,
        check=_options,
        module=__name__,
    )
)
