"""One way to run points: a Session joins the beds, the probes that watch them, the store, the
label, the progress display, cache drops and the rules for a user who is not root, and hands
the points to a ``runner.Schedule``. Every recipe, plan and ``limits`` runs through one, so
they record the same environment, probe the same way and say the same things.

Rules kept in one place:
- probes watch every device of the beds in use (device numbers from the bed), and work in a
  private directory under /run/iowall as root, in the bed otherwise;
- caches are dropped where a point asks for it: the beds' own (``beds.cache``), or with no
  bed sync; drop_caches=3; without root they cannot be, which the report says once and every
  such run says in its notes;
- the environment stored with a run is read while the run's knobs are in force, and lists
  them (the session's own, held for the whole run, and the point's).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.explain.host import runs_note
from ..analysis.explain.verdict import STEAL
from ..beds import Bed
from ..beds.cache import BED_DROP, MACHINE_DROP, drop_bed_caches
from ..machine.sysinfo import drop_caches, environment
from ..model import Run
from ..probes import ProbeContext
from ..probes import resolve as resolve_probes
from ..store import Store
from ..tuning.guestmem import OFF_ORDER, GuestMemory, hold_guest_memory, nothing_to_hold, reporting_order
from ..tuning.knob_session import KnobSession
from ..vocab.progress import Progress
from ..workloads.fio import BW_LOG_MS, fio_version
from ..workloads.memcopy_ref import reference as memcopy_reference
from .repeat import Decider, KeyMetric, RepeatPolicy
from .runner import Partial, Schedule, Task

NOT_ROOT = (
    "not root: caches are not dropped between points (fio still invalidates the cache "
    "of its own files) and nothing is formatted"
)
NOT_DROPPED = "caches not dropped before the point (needs root)"


#: What a run on a VM that reclaims freed memory risks when nothing holds that off.
RECLAIMS = (
    "this VM hands freed memory back to its host (free page reporting): page cache "
    "allocated after a cache drop may pay host faults and read slower than it is"
)
#: The note of such a run when the user turned the hold off.
HOST_RECLAIMS = (
    f"{RECLAIMS}; holding guest memory (reporting held off and the free memory touched "
    "first, iowall's default) was turned off by --no-hold-memory"
)


@dataclass
class Session:
    """The context every point of one invocation runs in (one batch)."""

    store: Store
    label: str
    progress: Progress = field(default_factory=Progress)
    #: ``default``, ``all``, ``none`` or a comma list of probe names
    probes: str = "default"
    #: extra facts stored in every run's environment (the plan, …)
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: knobs held for the whole session (a recipe's ``--set sysctl:…``), name → value in force
    knobs: dict[str, str] = field(default_factory=dict)
    key_metric: KeyMetric | None = None
    shuffle: int | None = None
    batch: str = field(default_factory=lambda: str(uuid.uuid4()))
    #: what the report should say about how the points ran (``notes`` adds the host's steal)
    told: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.root = os.geteuid() == 0
        self.fio_version = ".".join(map(str, fio_version()))
        self.extra = {"fio_version": self.fio_version, "fio_bw_log_ms": BW_LOG_MS, **self.extra}
        ref = memcopy_reference()  # what explain compares a copying workload with
        if ref is not None:
            self.extra.setdefault("memcopy_ref", ref)
        self._beds: list[Bed] = []
        self._bed_drops = False
        self._facts: Callable[[], dict[str, Any]] | None = None
        self._env: dict[str, Any] | None = None
        self.schedule = Schedule(
            store=self.store,
            label=self.label,
            env=self._env_now,
            bed=self._bed_facts,
            progress=self.progress,
            batch=self.batch,
            shuffle_seed=self.shuffle,
            probes=resolve_probes(self.probes),
        )
        if self.key_metric is not None:
            self.schedule.key_metric = self.key_metric
        if not self.root:
            self.note(NOT_ROOT)

    # -- beds ------------------------------------------------------------------------------
    def use_beds(self, *beds: Bed, facts: Callable[[], dict[str, Any]] | None = None) -> None:
        """Run the next points on ``beds``: the probes watch all their devices; ``facts``
        overrides the bed facts stored with each run (several beds, one schedule)."""
        self._beds = list(beds)
        self._facts = facts
        devices = tuple(d for b in beds for d in b.devices)
        devnos = tuple(b.devno for b in beds if b.devno)
        if beds and self.root:
            workdir = beds[0].private_dir("probe-")
        elif beds:
            workdir = beds[0].path
        else:
            workdir = tempfile.gettempdir()
        mounts = tuple(b.path for b in beds if b.path and os.path.isdir(b.path))
        self.schedule.probe_ctx = ProbeContext(devices=devices, devnos=devnos, workdir=workdir, mounts=mounts)
        for b in beds:
            self.note(*b.notes)

    def _bed_facts(self) -> dict[str, Any]:
        if self._facts is not None:
            return self._facts()
        return dict(self._beds[0].facts) if self._beds else {}

    # -- caches, knobs, environment -------------------------------------------------------
    def drop_caches(self, partial: Partial | None = None) -> bool:
        """Drop the caches before a point: the beds' (``beds.cache.drop_bed_caches``), or
        the machine's with no bed; without root say so in the run's notes."""
        ok = self.root and self._drop()
        if not ok and partial is not None and NOT_DROPPED not in partial.notes:
            partial.notes.append(NOT_DROPPED)
        return ok

    @property
    def drop_words(self) -> str:
        """How caches are dropped before a point, for the report's notes: the beds' own
        once a bed was used, else the machine's."""
        return BED_DROP if self._bed_drops else MACHINE_DROP

    def _drop(self) -> bool:
        if not self._beds:
            return drop_caches()
        paths = [b.path for b in self._beds if b.path]
        devices = {f"/dev/{d}" for b in self._beds for d in b.devices} | {
            b.device for b in self._beds if b.device
        }
        self._bed_drops = True
        try:
            drop_bed_caches(paths, devices)
        except OSError:
            return False
        return True

    def point_environment(self, knobs: Mapping[str, str] | None = None) -> None:
        """Read the environment now, while the point's ``knobs`` are in force; the run in
        flight is stored with it (call from a task, inside its KnobSession)."""
        self._env = environment(dict(self.extra), knobs={**self.knobs, **dict(knobs or {})})

    def _env_now(self) -> dict[str, Any]:
        env, self._env = self._env, None
        return env if env is not None else environment(dict(self.extra), knobs=self.knobs)

    def note(self, *notes: str) -> None:
        """Add report notes, once each."""
        for n in notes:
            if n not in self.told:
                self.told.append(n)

    @property
    def notes(self) -> list[str]:
        """What the report should say: the notes told, then which runs so far the host took
        CPU time from (``host.runs_note``), read from the runs themselves."""
        said = runs_note([x for r in self.runs if (x := r.metric(STEAL)) is not None])
        return [*self.told, said] if said else list(self.told)

    # -- running ---------------------------------------------------------------------------
    def execute(self, tasks: Sequence[Task], repeat: RepeatPolicy | int) -> list[Run]:
        """Run ``tasks`` interleaved by ``repeat`` on the beds in use; every run is stored."""
        return self.schedule.execute(tasks, repeat)

    @property
    def runs(self) -> list[Run]:
        return self.schedule.runs

    @property
    def decider(self) -> Decider | None:
        return self.schedule.decider


def hold_memory_step(ks: KnobSession, progress: Progress, need: int | None = None) -> GuestMemory | None:
    """``guestmem.hold_guest_memory`` as a step of ``progress`` (it takes seconds: the free
    memory is touched once), for `limits`, `run` and `gate` alike: free page reporting held
    off through ``ks`` (restored with it); what was done, or None (nothing to do). ``need``:
    the bytes the run can allocate, when the caller knows (only they are touched)."""
    # no step line: off a terminal each step is a line on stderr, and one before the run's
    # checks would make their one-line errors two (the report's note says what was done)
    progress.begin(1.0)
    try:
        return hold_guest_memory(ks, need)
    finally:
        progress.end()


def memory_note(hold: bool, gm: GuestMemory | None) -> str | None:
    """The report's line on guest memory, read before the points run: what the hold did
    (``gm``), or why there was nothing to hold; with the hold turned off (``hold`` False,
    --no-hold-memory), the warning where the VM reclaims freed memory, else nothing."""
    if gm is not None:
        return gm.note()
    order = reporting_order()
    reclaims = order is not None and order != str(OFF_ORDER)
    if not hold:
        return HOST_RECLAIMS if reclaims else None
    if order is None:
        return f"guest memory: nothing to hold, {nothing_to_hold()}"
    risk = RECLAIMS if reclaims else "free page reporting is off already, but no free memory was touched"
    return f"guest memory: not held ({nothing_to_hold()}): {risk}"
