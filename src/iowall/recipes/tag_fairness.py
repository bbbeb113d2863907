"""`tag-fairness` (seed 001): direct 1M random writes, psync, one region per job
(``offset_increment``), numjobs 1, 2, 4 … on the raw loop device of a ``loop`` bed (an
image on disk, no filesystem) or the device of ``--bed device:/dev/X``, with the queue's
``max_sectors_kb`` lowered to 128 (knob ``sysfs:queue/max_sectors_kb``, restored
afterwards) so that every 1M write is split and competes for blk-mq tags — the seed's incantation:

    fio -filename=/dev/$dev -name=test -ioengine=psync -group_reporting -direct=1 \
        -offset_increment=1g -rw=randwrite -bs=1024k -numjobs=N -runtime=110 -ramp_time=10
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..beds import Bed, BedSpec
from ..beds.blockdev import kernel_name, size_bytes
from ..beds.device import check_count, raw_devices
from ..beds.loop import disk_image
from ..machine.sysinfo import cpu_count
from ..measure.repeat import RepeatPolicy
from ..measure.runner import Task
from ..measure.session import Session
from ..model import Point, Run
from ..results import Report
from ..store import Store
from ..tuning.knob_session import KnobSession
from ..vocab.errors import UserError
from ..vocab.knob import parse_knob
from ..vocab.progress import Progress
from ..vocab.units import GIB, MIB, fio_size, fmt_bytes
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, counts, one, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, recipe_report
from .tasks import fio_task

NAME = "tag-fairness"


@contextlib.contextmanager
def raw_loop(size: int) -> Iterator[Bed]:
    """A loop device (dio on) over a preallocated image in the data directory, no
    filesystem; journaled, detached and deleted on any exit."""
    if os.geteuid() != 0:
        raise UserError("tag-fairness needs root (losetup): run as root")
    bed = Bed(BedSpec("loop"))
    try:
        image, dev = disk_image(bed, size, preallocate=True, what="an image", fix="--set image_size= smaller")
        bed.record_device(dev)
        bed.path = os.path.dirname(image)
        bed.facts.update(
            image=image, image_bytes=size, backing=f"disk:{bed.path}", fs="none (raw)", preallocated=True
        )
        yield bed
    finally:
        bed.teardown()


@dataclass(frozen=True)
class _Options:
    """What the user asked of tag-fairness, checked and scaled to the machine."""

    cpus: int
    cap: int
    jobs: tuple[int, ...]
    runtime: int
    ramp: int
    max_sectors_kb: int
    size: int
    region: int
    repeat: RepeatPolicy
    label: str
    spec: BedSpec


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("numjobs", "runtime", "ramp_time", "image_size", "max_sectors_kb"))
    cpus = cpu_count()
    cap = 16 if opts.quick else 32 * cpus
    default = []
    n = 1
    while n <= cap:
        default.append(n)
        n *= 2
    jobs = counts(opts, "numjobs", default)
    runtime = int(one(opts, "runtime", 5 if opts.quick else 20))
    ramp = int(one(opts, "ramp_time", 1 if opts.quick else 5))
    msk = int(one(opts, "max_sectors_kb", 128))
    size = size_opt(opts, "image_size", 2 * GIB if opts.quick else 8 * GIB)
    spec = BedSpec.parse(opts.bed) if opts.bed else BedSpec("loop")
    check_count(spec, 1, NAME)
    if spec.kind == "device":  # the whole device, unless --set image_size= bounds it
        given = spec.paths[0] if len(spec.paths) == 1 else ""
        have = size_bytes(kernel_name(given) or "") if given else 0
        size = min(size, have) if opts.values("image_size") and have else have or size
    region = size // max(jobs) // MIB * MIB
    if region < 16 * MIB:
        raise UserError(
            f"{fmt_bytes(size)} gives {max(jobs)} jobs less than 16 MiB "
            "each: --set image_size= larger (or a larger device) or fewer numjobs"
        )
    return _Options(
        cpus=cpus,
        cap=cap,
        jobs=tuple(jobs),
        runtime=runtime,
        ramp=ramp,
        max_sectors_kb=msk,
        size=size,
        region=region,
        repeat=opts.repeats(quick_default=1, default=3),
        label=opts.label or NAME,
        spec=spec,
    )


def _notes(o: _Options, quick: bool) -> list[str]:
    where = (
        f"raw device {o.spec.path} (guarded), no filesystem; {fmt_bytes(o.size)} used"
        if o.spec.kind == "device"
        else f"raw loop device (direct-io on) over a preallocated {fmt_bytes(o.size)} image on "
        "disk, no filesystem"
    )
    return [
        f"numjobs {', '.join(map(str, o.jobs))}: capped at {o.cap} on this machine "
        f"({o.cpus} CPUs{', --quick' if quick else ', 32 x nproc'}; the seed went to "
        "512 on 96 cores)",
        f"{where}; offset_increment {fio_size(o.region)} (size / max numjobs)",
        f"psync, direct=1, randwrite, bs 1M, time_based runtime {o.runtime} s after "
        f"ramp_time {o.ramp} s, group_reporting",
    ]


def _lower_max_sectors(o: _Options, session: Session, bed: Bed, ks: KnobSession) -> str:
    """Set the bed's queue/max_sectors_kb for the whole run (restored with ``ks``); the note
    that says so."""
    old = (bed.facts.get("queue") or {}).get("max_sectors_kb", "?")
    knob = parse_knob("sysfs:queue/max_sectors_kb")
    now = ks.set(knob, o.max_sectors_kb)
    session.knobs[str(knob)] = now
    bed.facts["queue"] = dict(bed.facts.get("queue") or {}, max_sectors_kb=now)
    return (
        f"queue/max_sectors_kb of {os.path.basename(bed.device or '')} set to {now} "
        f"(was {old}; restored afterwards)"
    )


def _tasks(o: _Options, dev: str) -> list[Task]:
    """One fio point per numjobs, each job writing its own region of ``dev``."""
    tasks = []
    for j in o.jobs:
        pt = Point(
            NAME,
            {
                "rw": "randwrite",
                "bs": "1m",
                "ioengine": "psync",
                "direct": 1,
                "numjobs": j,
                "offset_increment": o.region,
                "runtime": o.runtime,
                "ramp_time": o.ramp,
                "max_sectors_kb": o.max_sectors_kb,
            },
        )
        g = {
            "filename": dev,
            "ioengine": "psync",
            "allow_mounted_write": 0,
            "group_reporting": 1,
            "direct": 1,
            "offset_increment": fio_size(o.region),
            "size": fio_size(o.region),
            "rw": "randwrite",
            "bs": "1024k",
            "numjobs": j,
            "time_based": 1,
            "runtime": o.runtime,
            "ramp_time": o.ramp,
        }
        tasks.append(fio_task(pt, _job(g), title=f"randwrite 1M numjobs={j}", weight=o.runtime + o.ramp))
    return tasks


def _job(g: dict[str, object]) -> Callable[[], JobFile]:
    return lambda: JobFile(g, [JobSection("test", {})])


def _table(cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """Write bandwidth per numjobs."""
    pts = sorted({r.point.key(): r.point for r in runs}.values(), key=lambda p: int(p.params["numjobs"]))
    return LabelTable(
        ("numjobs",),
        ("Bandwidth",),
        tuple(
            LabelRow(
                (str(p.params["numjobs"]),),
                (cols.cells(p, "write_bw_bytes_per_s", "B/s"),),
            )
            for p in pts
        ),
        left=0,
    )


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    notes = _notes(o, opts.quick)
    session = opts.session(store, progress, NAME)
    bed_ctx = (
        raw_devices(o.spec, need_bytes=o.size, count=1, recipe=NAME)
        if o.spec.kind == "device"
        else raw_loop(o.size)
    )
    with bed_ctx as bed, KnobSession(bed) as ks:
        session.use_beds(bed)
        notes.append(_lower_max_sectors(o, session, bed, ks))
        runs = session.execute(_tasks(o, bed.device or ""), o.repeat)
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs)}, interleaved; medians")
    cols = columns(store, NAME, runs, o.label)
    title = f"tag-fairness (seed 001): direct 1M randwrite, max_sectors_kb {o.max_sectors_kb}"
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
        seed="001",
        description="direct 1M randwrite, psync, numjobs 1.. on a raw loop device "
        "with queue max_sectors_kb lowered to 128",
        execute=_execute,
        check=_options,
        module=__name__,
    )
)
