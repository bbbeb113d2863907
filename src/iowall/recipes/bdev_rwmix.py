"""`bdev-rwmix` (seed 000): four fio instances at once, one per "partition" of one device,
buffered I/O on the block device nodes, bs 64k, sync engine, read-only and rwmixwrite
10/30/50 — the seed's incantation per instance:

    fio -filename=/dev/nvme2n1pN -direct=0 -thread -size=… -rw=rw -rwmixwrite=M \
        --norandommap --randrepeat=0 -ioengine=sync -bs=64k -numjobs=… -runtime=… \
        --time_based -group_reporting

This machine has no partition-table parser (``losetup -P`` shows no partitions), so the four
"partitions" are four loop devices over consecutive quarters of one image
(``losetup --offset --sizelimit``); the output says so. With ``--bed device:P1,P2,P3,P4`` the
four given devices (real partitions, each guarded) are used instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ..beds import Bed, BedSpec
from ..beds.blockdev import kernel_name, size_bytes
from ..beds.device import check_count, raw_devices
from ..beds.ram import make_image
from ..machine.sysinfo import cpu_count
from ..measure.repeat import RepeatPolicy
from ..measure.runner import Outcome, Partial, Task
from ..measure.session import Session
from ..model import Artifact, Metric, Point, Run, Series
from ..results import Report, Value
from ..store import Store
from ..vocab.errors import UserError
from ..vocab.progress import Progress
from ..vocab.units import GIB, MIB, fio_size, fmt_bytes
from ..workloads.fio import FioResult, JobFile, JobSection, run_fio
from .options import RecipeOptions, counts, one, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, recipe_report

NAME = "bdev-rwmix"
PARTS = 4
MIXES = (0, 10, 30, 50)


@contextlib.contextmanager
def quarters(size: int) -> Iterator[tuple[Bed, list[str], int]]:
    """One preallocated image in /dev/shm and four loop devices over its quarters."""
    if os.geteuid() != 0:
        raise UserError("bdev-rwmix needs root (losetup): run as root")
    sv = os.statvfs("/dev/shm")
    if size > sv.f_bavail * sv.f_frsize * 0.9:
        raise UserError(f"an image of {fmt_bytes(size)} does not fit in /dev/shm: --set image_size= smaller")
    bed = Bed(BedSpec("ram"))
    q = size // PARTS // MIB * MIB
    try:
        image = make_image("/dev/shm", size, bed, preallocate=True, zero_fill=True)
        devs = [bed.attach_loop(image, direct_io=False, offset=i * q, sizelimit=q) for i in range(PARTS)]
        bed.record_device(devs[0])
        bed.devices = [os.path.basename(d) for d in devs]
        bed.facts.update(
            image=image,
            image_bytes=size,
            backing="tmpfs:/dev/shm",
            fs="none (raw block devices)",
            partitions=devs,
            partition_form=f"{PARTS} loop devices over consecutive quarters of "
            "one image (losetup --offset --sizelimit)",
        )
        yield bed, devs, q
    finally:
        bed.teardown()


@contextlib.contextmanager
def given_partitions(spec: BedSpec, part: int | None) -> Iterator[tuple[Bed, list[str], int]]:
    """The four devices of ``--bed device:…``, guarded; the size each instance covers is
    ``part`` (``--set image_size=`` / 4) or the smallest device."""
    with raw_devices(spec, need_bytes=part or 64 * MIB, count=PARTS, recipe=NAME) as bed:
        smallest = min(size_bytes(kernel_name(p) or "") for p in spec.paths)
        yield bed, spec.paths, part or smallest // MIB * MIB


def _task(session: Session, devs: list[str], mix: int, jobs: int, runtime: int, part_size: int) -> Task:
    point = Point(
        NAME,
        {
            "rwmixwrite": mix,
            "rw": "read" if mix == 0 else "rw",
            "bs": "64k",
            "ioengine": "sync",
            "direct": 0,
            "numjobs": jobs,
            "runtime": runtime,
            "instances": PARTS,
            "size": part_size,
            "invalidate": 0,
        },
    )

    def job(dev: str) -> JobFile:
        g: dict[str, object] = {
            "filename": dev,
            "direct": 0,
            "thread": 1,
            "size": fio_size(part_size),
            "rw": "read" if mix == 0 else "rw",
            "norandommap": 1,
            "randrepeat": 0,
            "ioengine": "sync",
            "bs": "64k",
            "numjobs": jobs,
            "runtime": runtime,
            "time_based": 1,
            "group_reporting": 1,
            # fio's default (1) flushes and drops the device's cache at every pass over it: the
            # seed's jobs made 0.2-1.5 passes in their hour, these make many (_notes, docs)
            "invalidate": 0,
        }
        if mix:
            g["rwmixwrite"] = mix
        return JobFile(g, [JobSection("instance", {})])

    def execute(partial: Partial) -> Outcome:
        session.drop_caches(partial)
        with ThreadPoolExecutor(PARTS) as ex:
            results: list[FioResult] = list(
                ex.map(lambda d: run_fio(job(d), origin_s=partial.origin_s), devs)
            )
        metrics: list[Metric] = []
        arts: list[Artifact] = []
        sers: list[Series] = []
        for i, res in enumerate(results, 1):
            for m in res.metrics:
                metrics.append(Metric(f"inst{i}_{m.name}", m.value, m.unit, m.direction))
            arts += [Artifact(f"inst{i}_{a.name}", a.content_type, a.body) for a in res.artifacts()]
            sers += [replace(s, name=f"inst{i}_{s.name}") for s in res.series]
        for d in ("read", "write"):
            tot = sum(m.value for res in results for m in res.metrics if m.name == f"{d}_bw_bytes_per_s")
            if tot:
                metrics.append(Metric(f"{d}_bw_bytes_per_s", tot, "B/s"))
        return Outcome(metrics=tuple(metrics), artifacts=tuple(arts), series=tuple(sers))

    title = "read-only" if mix == 0 else f"rwmixwrite={mix}%"
    return Task(point, execute, weight=runtime, title=f"{PARTS} instances {title}")


@dataclass(frozen=True)
class _Options:
    """What the user asked of bdev-rwmix, checked and scaled to the machine."""

    mixes: tuple[int, ...]
    cpus: int
    jobs: int
    runtime: int
    size: int
    part: int
    repeat: RepeatPolicy
    label: str
    spec: BedSpec


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("rwmixwrite", "numjobs", "runtime", "image_size"))
    mixes = tuple(int(m) for m in (opts.values("rwmixwrite") or MIXES))
    if any(not 0 <= m <= 100 for m in mixes):
        raise UserError("--set rwmixwrite= takes percentages 0..100 (0 = read-only)")
    cpus = cpu_count()
    (jobs,) = counts(opts, "numjobs", (cpus,))[:1]
    runtime = int(one(opts, "runtime", 10 if opts.quick else 60))
    spec = BedSpec.parse(opts.bed) if opts.bed else BedSpec("ram")
    check_count(spec, PARTS, NAME)
    size = size_opt(opts, "image_size", 4 * GIB if opts.quick else 8 * GIB)
    return _Options(
        mixes=mixes,
        cpus=cpus,
        jobs=jobs,
        runtime=runtime,
        size=size,
        part=size // PARTS // MIB * MIB,
        repeat=opts.repeats(quick_default=1, default=3),
        label=opts.label or NAME,
        spec=spec,
    )


def _notes(o: _Options, devs: list[str], part: int) -> list[str]:
    if o.spec.kind == "device":
        where = (
            f"partitions: the {PARTS} devices given ({', '.join(devs)}), raw, "
            f"guarded; each instance covers {fmt_bytes(part)}"
        )
    else:
        where = (
            f"partitions: {PARTS} loop devices over consecutive quarters of one "
            f"{fmt_bytes(o.size)} preallocated image in /dev/shm (losetup --offset "
            "--sizelimit; no partition-table parser here)"
        )
    return [
        where,
        f"{PARTS} fio instances at once, each: buffered (direct=0) on its block device "
        f"node, bs 64k, ioengine=sync, thread, numjobs {o.jobs} (nproc = {o.cpus}; the "
        f"seed used 252), size {fmt_bytes(part)}, norandommap, randrepeat=0, "
        f"time_based {o.runtime} s, group_reporting",
        "read-only is rw=read; the mixes are rw=rw with rwmixwrite; caches dropped before each mix",
        "invalidate=0 (the seed ran fio's default, 1): fio flushes and drops a device's cache "
        "(BLKFLSBUF) at the start of every pass over it; the seed's jobs (800G, 3600 s) made "
        f"0.2-1.5 passes each in their hour, these pass over {fmt_bytes(part)} many times a "
        "run and the flush would be the measurement; the caches are dropped before each mix "
        "instead (docs/recipes.md)",
    ]


def _table(cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """Per mix, a heading row and each instance's read and write bandwidth (write ``-`` in
    the read-only mix)."""
    pts = sorted({r.point.key(): r.point for r in runs}.values(), key=lambda p: int(p.params["rwmixwrite"]))
    rows: list[LabelRow] = []
    for p in pts:
        mix = int(p.params["rwmixwrite"])
        rows.append(LabelRow(("read-only" if mix == 0 else f"rwmixwrite={mix}%",)))
        for i in range(1, PARTS + 1):
            read = cols.cells(p, f"inst{i}_read_bw_bytes_per_s", "B/s")
            write = (
                cols.cells(p, f"inst{i}_write_bw_bytes_per_s", "B/s")
                if mix
                else tuple(Value(None, "B/s") for _ in cols.labels)
            )
            rows.append(LabelRow((f"Instance {i}",), (read, write)))
    return LabelTable(("",), ("Read", "Write"), tuple(rows))


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    if o.spec.kind == "device":
        ctx = given_partitions(o.spec, o.part if opts.values("image_size") else None)
    else:
        ctx = quarters(o.size)
    session = opts.session(store, progress, NAME)
    with ctx as (bed, devs, part):
        notes = _notes(o, devs, part)
        session.use_beds(bed)
        tasks = [_task(session, devs, m, o.jobs, o.runtime, part) for m in o.mixes]
        runs = session.execute(tasks, o.repeat)
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs, per='mix')}, interleaved; medians")
    cols = columns(store, NAME, runs, o.label)
    title = 'bdev-rwmix (seed 000): 4 buffered fio instances on 4 "partitions" of one device'
    return recipe_report(
        NAME,
        title,
        label=o.label,
        batch=session.batch,
        cols=cols,
        table=_table(cols, runs),
        notes=notes,
        runs=runs,
    )


register(
    Recipe(
        name=NAME,
        seed="000",
        description="4 fio instances on 4 partitions of one device, buffered, bs 64k, "
        "sync, read-only and rwmixwrite 10/30/50",
        execute=_execute,
        check=_options,
        module=__name__,
    )
)
