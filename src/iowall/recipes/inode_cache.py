"""`inode-cache` (seed 003): Create / Walk / chmod / Unlink wall time with a fixed number of
(empty) files per thread, threads 1, 2, 4 … 2 x nproc, on xfs, ext4, btrfs, and btrfs with
one subvolume per thread (``btrfs-svol``: ``btrfs subvolume create D/tNNN`` before create).

Each phase is its own ``iowall-engine meta`` invocation (per-thread trees D/tNNN/dMMM, all
threads released together); caches are dropped before walk, chmod and unlink so that those
phases pull every inode back into the inode cache, as in the seed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..beds import Bed, BedSpec, provision
from ..machine.proc import need, run
from ..machine.sysinfo import cpu_count
from ..measure.repeat import RepeatPolicy
from ..measure.runner import Outcome, Partial, Task
from ..measure.session import Session
from ..model import Artifact, Metric, Point, Run
from ..results import Report
from ..store import Store
from ..vocab.errors import UserError
from ..vocab.progress import Progress
from ..vocab.units import GIB, fmt_bytes, plural
from ..workloads.engine import PHASES, run_meta
from .options import RecipeOptions, counts, one, powers, size_opt
from .registry import Recipe, register
from .tables import Columns, LabelRow, LabelTable, columns, recipe_report

NAME = "inode-cache"
FILESYSTEMS = ("xfs", "ext4", "btrfs", "btrfs-svol")
#: ext4's default of one inode per 16 KiB runs out long before the space does.
MKFS = {"ext4": "-i 4096"}
TITLES = {"create": "Create", "walk": "Walk", "chmod": "chmod", "unlink": "Unlink"}


def _task(session: Session, bed: Bed, fs: str, threads: int, files: int, current: dict[str, Any]) -> Task:
    point = Point(
        NAME, {"fs": fs, "threads": threads, "files_per_thread": files, "files": threads * files, "size": 0}
    )
    d = os.path.join(bed.path, "ic")

    def execute(partial: Partial) -> Outcome:
        current["bed"] = dict(bed.facts, fs=fs)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        if fs == "btrfs-svol":
            btrfs = need("btrfs", "btrfs-progs")
            for t in range(threads):
                run([btrfs, "subvolume", "create", os.path.join(d, f"t{t:03d}")])
        records = []
        for phase in PHASES:
            if phase != "create":
                session.drop_caches(partial)
            (rec,) = run_meta(d, threads, files, [phase])
            records.append(rec)
            partial.metrics += [
                Metric(f"{phase}_wall_s", float(rec["wall_s"]), "s", "lower"),
                Metric(f"{phase}_files_per_s", float(rec.get("files_per_s", 0.0)), "files/s"),
            ]
        if fs == "btrfs-svol":  # unlink emptied them; remove what is left of the subvolumes
            for t in range(threads):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(d, f"t{t:03d}"))
        shutil.rmtree(d, ignore_errors=True)
        metrics = tuple(partial.metrics)
        partial.metrics.clear()
        return Outcome(
            metrics=metrics, artifacts=(Artifact("engine.json", "application/json", json.dumps(records)),)
        )

    return Task(
        point,
        execute,
        weight=threads * files / 20000,
        title=f"{fs} {plural(threads, 'thread')} x {plural(files, 'file')}",
    )


@dataclass(frozen=True)
class _Options:
    """What the user asked of inode-cache, checked and scaled to the machine."""

    filesystems: tuple[str, ...]
    cpus: int
    threads: tuple[int, ...]
    files: int
    size: int
    repeat: RepeatPolicy
    label: str
    spec: BedSpec


def _options(opts: RecipeOptions) -> _Options:
    opts.check_sets(NAME, ("fs", "threads", "files", "bed_size"))
    fss = tuple(str(v) for v in (opts.values("fs") or FILESYSTEMS))
    bad = [f for f in fss if f not in FILESYSTEMS]
    if bad:
        raise UserError(f"--set fs={bad[0]}: use {', '.join(FILESYSTEMS)}")
    cpus = cpu_count()
    threads = counts(opts, "threads", powers(2 * cpus))
    files = int(one(opts, "files", 20000 if opts.quick else 100000))
    if files < 1:
        raise UserError("--set files= at least 1")
    size = size_opt(opts, "bed_size", max(GIB, (max(threads) * files * 5120) >> 20 << 20))
    return _Options(
        filesystems=fss,
        cpus=cpus,
        threads=tuple(threads),
        files=files,
        size=size,
        repeat=opts.repeats(quick_default=1, default=3),
        label=opts.label or NAME,
        spec=BedSpec.parse(opts.bed or "ram"),
    )


def _notes(o: _Options) -> list[str]:
    return [
        f"threads {', '.join(map(str, o.threads))} (up to 2 x nproc = {2 * o.cpus}), "
        f"{o.files} empty files per thread (the seed: 400000 per thread, 1..32 threads; "
        "scaled to this machine)",
        f"one {o.spec} bed of {fmt_bytes(o.size)} per filesystem"
        + (" (ext4 made with -i 4096 for enough inodes)" if "ext4" in o.filesystems else "")
        + (
            "; btrfs-svol uses the btrfs bed with one subvolume per thread"
            if "btrfs-svol" in o.filesystems
            else ""
        ),
    ]


def _real(fs: str) -> str:
    """The filesystem a bed is made with (btrfs-svol is btrfs with subvolumes)."""
    return "btrfs" if fs == "btrfs-svol" else fs


def _table(o: _Options, cols: Columns, runs: Sequence[Run]) -> LabelTable:
    """Wall seconds of each phase per filesystem and thread count."""
    pts: list[Point] = []
    for r in runs:
        if r.point not in pts:
            pts.append(r.point)
    pts.sort(key=lambda p: (o.filesystems.index(str(p.params["fs"])), int(p.params["threads"])))
    return LabelTable(
        ("Filesystem", "Files", "Threads"),
        tuple(TITLES[ph] for ph in PHASES),
        tuple(
            LabelRow(
                (str(p.params["fs"]), str(p.params["files"]), str(p.params["threads"])),
                tuple(cols.cells(p, f"{ph}_wall_s", "s") for ph in PHASES),
            )
            for p in pts
        ),
    )


def _execute(opts: RecipeOptions, store: Store, progress: Progress) -> Report:
    o = _options(opts)
    notes = _notes(o)
    current: dict[str, Any] = {"bed": {}}
    session = opts.session(store, progress, NAME)
    with contextlib.ExitStack() as stack:
        beds: dict[str, Bed] = {}
        for fs in o.filesystems:
            if _real(fs) not in beds:
                beds[_real(fs)] = stack.enter_context(
                    provision(o.spec, fs=_real(fs), size_bytes=o.size, mkfs_opts=MKFS.get(_real(fs), ""))
                )
        tasks = [
            _task(session, beds[_real(fs)], fs, t, o.files, current)
            for fs in o.filesystems
            for t in o.threads
        ]
        session.use_beds(*beds.values(), facts=lambda: dict(current["bed"]))
        runs = session.execute(tasks, o.repeat)
    notes.append(
        f"each phase is a separate engine run; {session.drop_words} before walk, chmod and "
        "unlink; times are wall seconds of all threads"
    )
    notes += session.notes
    notes.append(f"{o.repeat.summarise(runs)}, interleaved; medians")
    cols = columns(store, NAME, runs, o.label)
    title = "inode-cache (seed 003): wall seconds per phase, fixed files per thread"
    return recipe_report(
        NAME,
        title,
        label=o.label,
        batch=session.batch,
        cols=cols,
        table=_table(o, cols, runs),
        notes=notes,
        runs=runs,
    )


register(
    Recipe(
        name=NAME,
        seed="003",
        description="Create/Walk/chmod/Unlink wall time, fixed files per thread, "
        "threads 1..2xnproc on xfs, ext4, btrfs, btrfs subvolume per thread",
        execute=_execute,
        check=_options,
        module=__name__,
    )
)
