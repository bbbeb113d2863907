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
from collections.abc import Callable, Iterator

from ..beds import Bed, BedSpec
from ..beds.blockdev import kernel_name, size_bytes
from ..beds.device import raw_devices
from ..beds.loop import disk_image
from ..errors import UserError
from ..knob import parse_knob
from ..knobs import KnobSession
from ..model import Point
from ..results import Report
from ..runner import Progress
from ..store import Store
from ..sysinfo import cpu_count
from ..units import GIB, MIB, fio_size, fmt_bytes
from ..workloads.fio import JobFile, JobSection
from .options import RecipeOptions, counts, one, size_opt
from .registry import Recipe, register
from .tables import columns, head, recipe_report
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
        image, dev = disk_image(bed, size, preallocate=True, what="an image",
                                fix="--set image_size= smaller")
        bed.record_device(dev)
        bed.path = os.path.dirname(image)
        bed.facts.update(image=image, image_bytes=size, backing=f"disk:{bed.path}",
                         fs="none (raw)",
                         preallocated=True)
        yield bed
    finally:
        bed.teardown()


def _job(g: dict[str, object]) -> Callable[[], JobFile]:
    return lambda: JobFile(g, [JobSection("test", {})])


def _check(opts: RecipeOptions) -> None:
    opts.check_sets(NAME, ("numjobs", "runtime", "ramp_time", "image_size", "max_sectors_kb"))


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
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
    if spec.kind == "device":  # the whole device, unless --set image_size= bounds it
        given = spec.paths[0] if len(spec.paths) == 1 else ""
        have = size_bytes(kernel_name(given) or "") if given else 0
        size = min(size, have) if opts.values("image_size") and have else have or size
    region = size // max(jobs) // MIB * MIB
    if region < 16 * MIB:
        raise UserError(f"{fmt_bytes(size)} gives {max(jobs)} jobs less than 16 MiB "
                        "each: --set image_size= larger (or a larger device) or fewer numjobs")
    repeat = opts.repeats(quick_default=1, default=3)
    label = opts.label or NAME
    where = (f"raw device {spec.path} (guarded), no filesystem; {fmt_bytes(size)} used"
             if spec.kind == "device" else
             f"raw loop device (direct-io on) over a preallocated {fmt_bytes(size)} image on "
             "disk, no filesystem")
    notes = [f"numjobs {', '.join(map(str, jobs))}: capped at {cap} on this machine "
             f"({cpus} CPUs{', --quick' if opts.quick else ', 32 x nproc'}; the seed went to "
             "512 on 96 cores)",
             f"{where}; offset_increment {fio_size(region)} (size / max numjobs)",
             f"psync, direct=1, randwrite, bs 1M, time_based runtime {runtime} s after "
             f"ramp_time {ramp} s, group_reporting"]
    session = opts.session(store, progress, NAME)
    bed_ctx = (raw_devices(spec, need_bytes=size, count=1, recipe=NAME)
               if spec.kind == "device" else raw_loop(size))
    with bed_ctx as bed, KnobSession(bed) as ks:
        session.use_beds(bed)
        dev = bed.device or ""
        old = (bed.facts.get("queue") or {}).get("max_sectors_kb", "?")
        knob = parse_knob("sysfs:queue/max_sectors_kb")
        now = ks.set(knob, msk)
        session.knobs[str(knob)] = now
        bed.facts["queue"] = dict(bed.facts.get("queue") or {}, max_sectors_kb=now)
        notes.append(f"queue/max_sectors_kb of {os.path.basename(dev)} set to {now} "
                     f"(was {old}; restored afterwards)")
        tasks = []
        for j in jobs:
            pt = Point(NAME, {"rw": "randwrite", "bs": "1m", "ioengine": "psync", "direct": 1,
                              "numjobs": j, "offset_increment": region, "runtime": runtime,
                              "ramp_time": ramp, "max_sectors_kb": msk})
            g = {"filename": dev, "ioengine": "psync", "allow_mounted_write": 0,
                 "group_reporting": 1, "direct": 1, "offset_increment": fio_size(region),
                 "size": fio_size(region), "rw": "randwrite", "bs": "1024k", "numjobs": j,
                 "time_based": 1, "runtime": runtime, "ramp_time": ramp}
            tasks.append(fio_task(pt, _job(g),
                                  title=f"randwrite 1M numjobs={j}", weight=runtime + ramp))
        runs = session.execute(tasks, repeat)
    notes += session.notes
    notes.append(f"{repeat.summarise(runs)}, interleaved; medians")
    cols = columns(store, NAME, runs, label)
    pts = sorted({r.point.key(): r.point for r in runs}.values(),
                 key=lambda p: int(p.params["numjobs"]))
    headers = ["numjobs"] + head("MiB/s", cols.labels)
    rows = []
    for p in pts:
        row = [str(p.params["numjobs"])]
        for lab in cols.labels:
            v = cols.median(p, lab, "write_bw_bytes_per_s")
            row.append("-" if v is None else f"{v / MIB:.1f}")
        rows.append(row)
    title = f"tag-fairness (seed 001): direct 1M randwrite, max_sectors_kb {msk}"
    return recipe_report(NAME, title, label=label, batch=session.batch, cols=cols,
                         headers=headers,
                  rows=rows, notes=notes, runs=runs, left=0)


register(Recipe(name=NAME, seed="001",
                description="direct 1M randwrite, psync, numjobs 1.. on a raw loop device "
                            "with queue max_sectors_kb lowered to 128",
                execute=_execute, check=_check, module=__name__))
