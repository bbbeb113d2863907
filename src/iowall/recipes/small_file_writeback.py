"""`small-file-writeback` (seed 004): 4 KiB files created through the page cache for a fixed
time (``iowall-engine smallfiles``), against the direct-I/O 4k random-write IOPS ceiling of
the same device.

Per point: files/s, the device write IOPS reached (diskstats probe), the flusher's busy %
(flusher probe: writeback kworker CPU of the bed's bdi) and the time writers spent throttled
in balance_dirty_pages (throttle probe). The ceiling is fio randwrite bs 4k, io_uring,
direct, iodepth 32 on a file on the bed. ``variant=extsize`` repeats the stream with a 4 KiB
extent size hint on the root directory (knob ``xfs:extsize``), as the seed did to avoid
delayed allocation.

The seed's wall needs writers to meet the dirty limit. XFS's delayed allocation holds about six
times a dirty small file's data until writeback allocates it, so under a limit sized for the
machine's memory a bed sized for the stream runs out of room first and every create waits in
the filesystem's ENOSPC flush instead. The recipe sets the dirty limits to a 32nd of the bed
(restored after) and stops each stream at the room the bed has left; docs/recipes.md.
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
from ..vocab.units import GIB, MIB, fio_size, fmt_bytes, parse_size, plural
from ..workloads.engine import EngineRunError, run_smallfiles
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, counts, one, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, per_label, recipe_report
from .tasks import fio_task

NAME = "small-file-writeback"
VARIANTS = ("default", "extsize")
#: XFS's delayed allocation holds, for each dirty small file, its block and the worst case of
#: the metadata its allocation may need, until writeback allocates it: 200,000 dirty 4 KiB
#: files held 4.8 GiB of a bed (measured 2026-12-01), about six times their data.
HELD_PER_DIRTY = 6
#: The dirty limit the recipe sets is this fraction of the bed: the dirty files' hold
#: (HELD_PER_DIRTY times the limit) then stays under a fifth of it.
DIRTY_SHARE = 32
#: What one 4 KiB file takes on the bed once written: its block and its 512-byte inode.
FILE_BYTES = 4096 + 512
#: Of the room the bed has once the dirty files' hold is set aside, a stream fills this much.
ROOM_SHARE = 0.8
#: The flusher busy at least this share of a CPU: below it, pages per flusher CPU-second is noise.
FLUSHER_FLOOR = 0.05
#: ``--set dirty_bytes=kernel``: keep the kernel's dirty limits.
KERNEL = "kernel"
#: the knob a stream's point carries when the run set its dirty limit
DIRTY_KNOB = "sysctl:vm.dirty_bytes"


def room_files(free: int, held: int) -> int:
    """How many 4 KiB files a stream may create on a bed with ``free`` bytes, ``held`` of
    which the dirty files' hold may take at once: ROOM_SHARE of the rest, one FILE_BYTES each."""
    return max(1, int(max(free - held, 0) * ROOM_SHARE) // FILE_BYTES)


def _point(params: dict[str, object], dirty: int | str) -> Point:
    """A point of the run, with the dirty limit it set as a knob on every point, as a plan's
    knob: ``compare`` drops a knob constant over a side as its treatment and pairs the points
    with the kernel's limits (``--set dirty_bytes=kernel``), and history keeps the two apart."""
    return Point(NAME, params | ({DIRTY_KNOB: dirty} if isinstance(dirty, int) else {}))


def _stream_task(
    session: Session, bed: Bed, variant: str, threads: int, seconds: int, dirty: int | str
) -> Task:
    point = _point(
        {
            "kind": "smallfiles",
            "variant": variant,
            "threads": threads,
            "size": 4096,
            "seconds": seconds,
            "fsync": "none",
        },
        dirty,
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
            st = os.statvfs(d)
            free = st.f_bavail * st.f_frsize
            # under a ratio the hold is what the user asked to see: no room kept for it
            held = HELD_PER_DIRTY * dirty if isinstance(dirty, int) else 0
            cap = room_files(free, held)
            status = "ok"
            notes: tuple[str, ...] = ()
            try:
                rec = run_smallfiles(d, threads, 4096, seconds=float(seconds), files=cap)
            except EngineRunError as e:
                if e.errno_name != "ENOSPC":
                    raise
                rec = dict(e.record)
                status, notes = "filled", ("the bed filled up (ENOSPC) before the time",)
            if status == "ok" and int(rec.get("files", 0)) >= cap:
                notes = (
                    f"stopped at the bed's room ({cap:,} files of {fmt_bytes(FILE_BYTES)}) after "
                    f"{float(rec.get('wall_s', 0.0)):.1f} s of {seconds} s",
                )
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


def _ceiling_task(session: Session, bed: Bed, jobs: int, seconds: int, size: int, dirty: int | str) -> Task:
    point = _point(
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
        dirty,
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
    #: the dirty limit to set (bytes), KERNEL to keep the kernel's, None for a 32nd of the bed
    dirty: int | str | None
    #: a ``--set sysctl:vm.dirty_…`` knob (name, value) holds the dirty limits: left as set
    dirty_knob: tuple[str, str] | None


def _dirty_option(opts: RecipeOptions) -> int | str | None:
    """``--set dirty_bytes=SIZE|kernel``: the dirty limit the streams run under."""
    v = one(opts, "dirty_bytes")
    if v is None or str(v) == KERNEL:
        return None if v is None else KERNEL
    n = parse_size(str(v), what="--set dirty_bytes")
    if n < 2 * MIB:
        raise UserError(f"--set dirty_bytes={v}: at least 2M (or kernel to keep the kernel's limits)")
    return n


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("variant", "threads", "seconds", "bed_size", "dirty_bytes"))
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
    dirty = _dirty_option(opts)
    dirty_knob = next((kv for kv in opts.knobs if kv[0].startswith("sysctl:vm.dirty_")), None)
    if dirty is not None and dirty_knob:
        raise UserError(f"--set dirty_bytes= and --set {dirty_knob[0]}= both set the dirty limits: give one")
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
        dirty=dirty,
        dirty_knob=dirty_knob,
    )


def _notes(o: _Options) -> list[str]:
    notes = [
        f"bed: {o.spec} xfs of {fmt_bytes(o.size)} (scaled to a third of free memory at most)",
        f"small files: 4 KiB each, {', '.join(map(str, o.threads))} thread(s) (nproc = "
        f"{o.cpus}), {o.seconds} s per point, no fsync: writeback is the flusher's job",
        f"ceiling: fio randwrite bs 4k io_uring direct iodepth 32, {o.cpus} job(s), "
        f"{o.seconds} s on a {fmt_bytes(o.ceiling_size)} file on the same bed",
        "device write IOPS from /proc/diskstats of the bed's device during the stream; "
        "flusher: the bdi writeback kworker's CPU, busy % (100% = one CPU); throttled is "
        "the writers' total pause in balance_dirty_pages",
        "pages/CPU-s: pages written back (/proc/vmstat nr_written, the whole machine) "
        "per second of the flusher's CPU, shown when it was busy at least "
        f"{FLUSHER_FLOOR:.0%} of a CPU; a 4 KiB file is one page, so one flusher thread alone "
        "on a CPU would clean about that many files a second (the seed's flusher: CPU-bound "
        "at 80-90k allocations a second, 'no more than 100k files/s')",
    ]
    if "extsize" in o.variants:
        notes.append(
            "extsize: a 4 KiB extent size hint on the root directory (xfs:extsize, "
            "inherited), so delayed allocation is not used (as in the seed)"
        )
    return notes


def _tasks(o: _Options, session: Session, bed: Bed, dirty: int | str) -> list[Task]:
    """The direct-I/O ceiling, then the stream of every variant at every thread count."""
    tasks = [_ceiling_task(session, bed, o.cpus, o.seconds, o.ceiling_size, dirty)]
    for t in o.threads:
        tasks += [_stream_task(session, bed, v, t, o.seconds, dirty) for v in o.variants]
    return tasks


def _dirty_limits(o: _Options, session: Session, ks: KnobSession) -> tuple[int | str, str]:
    """Set the dirty limits the streams run under (restored with ``ks``): the limit in force
    (bytes; KERNEL when the kernel's are kept; the knob when a ratio knob holds them) and the
    note that says what and why."""
    thr, bg = dirty_thresholds_bytes()
    if o.dirty_knob:
        kname, kvalue = o.dirty_knob
        held: int | str = int(kvalue) if kname == "sysctl:vm.dirty_bytes" else f"{kname}={kvalue}"
        return held, f"dirty limits as --set {kname}={kvalue} holds them ({fmt_bytes(thr)} in force)"
    if o.dirty == KERNEL:
        return KERNEL, (
            f"the kernel's dirty limits kept (--set dirty_bytes=kernel): {fmt_bytes(thr)}, "
            f"background {fmt_bytes(bg)}; the bed may run short of room before writers meet them"
        )
    want = o.dirty if isinstance(o.dirty, int) else (o.size // DIRTY_SHARE) >> 20 << 20
    for name, value in (("vm.dirty_bytes", want), ("vm.dirty_background_bytes", want // 2)):
        knob = parse_knob(f"sysctl:{name}")
        session.knobs[str(knob)] = ks.set(knob, value)
    why = (
        f"1/{DIRTY_SHARE} of the bed" if o.dirty is None else "--set dirty_bytes"
    ) + f"; the kernel's were {fmt_bytes(thr)} and {fmt_bytes(bg)}"
    return want, (
        f"vm.dirty_bytes {fmt_bytes(want)}, vm.dirty_background_bytes {fmt_bytes(want // 2)} "
        f"for the run ({why}; restored afterwards): XFS's delayed allocation holds about "
        f"{HELD_PER_DIRTY} times a dirty small file's data, so under limits sized for memory "
        "the bed runs out of room before writers meet them and every create waits in the "
        "filesystem's ENOSPC flush; each stream stops at the room the bed has left"
    )


def _stream_points(runs: Sequence[Run]) -> list[Point]:
    """The stream points (kind ``smallfiles``) of ``runs``, each once, in the order first run."""
    out: list[Point] = []
    for r in runs:
        if r.point.params["kind"] == "smallfiles" and r.point not in out:
            out.append(r.point)
    return out


def _table(cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """Per variant and thread count: files/s, the device's write IOPS, the ceiling, files/s
    as a share of it, the flusher's busy share, the pages written back per second of its CPU
    and the writers' throttled time."""
    ceil_pt = next(r.point for r in runs if r.point.params["kind"] == "dio-ceiling")
    stream_pts = _stream_points(runs)

    def share(lab: str, p: Point) -> Value:
        f, c = cols.median(p, lab, "files_per_s"), cols.median(ceil_pt, lab, "write_iops")
        return Value(f / c if f is not None and c else None, "share")

    def cleaned(lab: str, p: Point) -> Value:
        """Pages written back per second of the flusher's CPU (``FLUSHER_FLOOR``)."""
        w, f = cols.median(p, lab, "vm_nr_written_per_s"), cols.median(p, lab, "flusher_cpu_share")
        return Value(w / f if w is not None and f is not None and f >= FLUSHER_FLOOR else None, "pages/CPU-s")

    def row(p: Point) -> LabelRow:
        return LabelRow(
            (str(p.params["variant"]), str(p.params["threads"])),
            (
                cols.cells(p, "files_per_s", "files/s"),
                cols.cells(p, "disk_write_iops", "ops_per_s"),
                cols.cells(ceil_pt, "write_iops", "IO/s"),
                per_label(cols, lambda lab: share(lab, p)),
                cols.cells(p, "flusher_cpu_share", "percent"),
                per_label(cols, lambda lab: cleaned(lab, p)),
                cols.cells(p, "throttle_pause_s", "s"),
            ),
        )

    return LabelTable(
        ("Variant", "Threads"),
        ("Files/s", "Write IOPS", "DIO IOPS", "Share", "Flusher", "Pages/CPU-s", "Throttled"),
        tuple(row(p) for p in stream_pts),
        left=2,
    )


#: the flusher busy at least this share of a CPU with the stream near its rate: the wall
FLUSHER_BOUND = 0.85


def _flusher_notes(cols: Columns, runs: Sequence[Run], label: str) -> list[str]:
    """Per stream point of ``label``: where one flusher thread would hold the stream (the pages
    it cleaned per second of its CPU) against the files/s the creators made, and whether the
    flusher was the wall (busy ``FLUSHER_BOUND`` of a CPU) or not."""
    out: list[str] = []
    for p in _stream_points(runs):
        rate = cols.median(p, label, "files_per_s")
        busy = cols.median(p, label, "flusher_cpu_share")
        w = cols.median(p, label, "vm_nr_written_per_s")
        if not rate or busy is None or busy < FLUSHER_FLOOR or not w:
            continue
        per = w / busy
        who = f"{p.params['variant']}, {plural(int(p.params['threads']), 'thread')}"
        head = (
            f"{who}: the flusher cleaned {per / 1e3:.1f}k pages per second of its CPU ({busy:.0%} of a "
            f"CPU busy), so one flusher thread would hold the stream near {per / 1e3:.1f}k files/s"
        )
        if busy >= FLUSHER_BOUND:
            out.append(f"{head}: it was busy {busy:.0%} of a CPU, so the flusher is this point's wall")
        else:
            out.append(
                f"{head}, {per / rate:.1f}x the {rate / 1e3:.1f}k files/s the creators made: the flusher "
                "is not this point's wall (the Why below says what is)"
            )
    return out


def _under_threshold(runs: Sequence[Run], thr: int) -> list[str]:
    """The note that writers were never throttled, when no point wrote the dirty threshold
    ``thr`` (the kernel's figure while the run's limits were in force)."""
    most = max((r.metric("files") or 0.0 for r in runs), default=0.0) * 4096
    if thr and most < thr:
        return [
            f"at most {fmt_bytes(most)} of files were written per point, under the "
            f"dirty threshold ({fmt_bytes(thr)}): writers were not throttled; "
            "--set seconds= longer (or a lower --set dirty_bytes=) to reach the wall"
        ]
    return []


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    notes = _notes(o)
    session = opts.session(store, progress, NAME)
    with provision(o.spec, fs="xfs", size_bytes=o.size) as bed, KnobSession(bed) as ks:
        session.use_beds(bed)
        dirty, note = _dirty_limits(o, session, ks)
        notes.append(note)
        thr, _ = dirty_thresholds_bytes()
        runs = session.execute(_tasks(o, session, bed, dirty), o.repeat)
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs)}, interleaved; medians")
    cols = columns(store, NAME, runs, o.label)
    table = _table(cols, runs)
    notes += _under_threshold(runs, thr)
    notes += _flusher_notes(cols, runs, o.label)
    notes += sorted({n for r in runs for n in r.notes if n.startswith("stopped at the bed's room")})[:1]
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
