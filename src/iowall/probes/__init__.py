"""Probes: what is watched during a run. ``resolve`` names them, ``ProbeSet`` runs a set.

Each probe is a small class in its own module (see docs/probes.md for metrics and units).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType

from ..machine.signals import shielded
from ..vocab.errors import Interrupted, UserError
from .base import Probe, ProbeContext, ProbeResult
from .cpu import CpuProbe
from .df import DfProbe
from .diskstats import DiskstatsProbe
from .flusher import FlusherProbe
from .locks import LocksProbe
from .meminfo import MeminfoProbe
from .profile import ProfileProbe
from .psi import PsiProbe
from .reclaim import ReclaimProbe
from .tasks import TasksProbe
from .threadstate import ThreadStateProbe
from .throttle import ThrottleProbe
from .vmstat import VmstatProbe

__all__ = ["DEFAULT_PROBES", "REGISTRY", "Probe", "ProbeContext", "ProbeResult", "ProbeSet", "resolve"]

REGISTRY: dict[str, type[Probe]] = {
    c.name: c
    for c in (
        CpuProbe,
        VmstatProbe,
        MeminfoProbe,
        DiskstatsProbe,
        PsiProbe,
        FlusherProbe,
        ThrottleProbe,
        ReclaimProbe,
        TasksProbe,
        LocksProbe,
        ProfileProbe,
        ThreadStateProbe,
        DfProbe,
    )
}
#: Cheap enough to run always (docs/benchmarks.md, "What the probes cost"); ``locks`` is not.
#: ``profile`` (perf at 99 Hz) reports itself skipped where perf is missing or refuses.
DEFAULT_PROBES: tuple[str, ...] = (
    "cpu",
    "vmstat",
    "meminfo",
    "diskstats",
    "psi",
    "flusher",
    "throttle",
    "reclaim",
    "tasks",
    "profile",
    "threadstate",
    "df",
)


def resolve(spec: str) -> list[type[Probe]]:
    """``default``, ``all``, ``none`` or a comma list (``cpu,locks``; ``default,locks``)."""
    out: list[type[Probe]] = []
    for word in (w.strip() for w in spec.split(",")):
        if word in ("", "none"):
            names: Sequence[str] = ()
        elif word == "default":
            names = DEFAULT_PROBES
        elif word == "all":
            names = tuple(REGISTRY)
        elif word in REGISTRY:
            names = (word,)
        else:
            raise UserError(
                f"unknown probe {word!r}: use default, all, none or a comma list of {', '.join(REGISTRY)}"
            )
        out += [REGISTRY[n] for n in names if REGISTRY[n] not in out]
    return out


class ProbeSet:
    """Starts a set of probes together and stops them together.

    A probe that says it cannot run here (``unavailable()``) or fails to start is reported as
    skipped with the reason; a probe that fails when stopping loses only its own data.
    ``stop()`` is idempotent and safe in teardown paths (after an exception or a signal): it
    stops only the probes that started, shielded from SIGINT/SIGTERM.
    """

    def __init__(self, classes: Sequence[type[Probe]], ctx: ProbeContext) -> None:
        self.ctx = ctx
        # innermost probes start last and stop first (the others' start-up, stop and folding
        # then fall outside their window), the rest in the order given
        self.probes: list[Probe] = [c(ctx) for c in sorted(classes, key=lambda c: c.innermost)]
        self._running: list[Probe] = []
        self._results: dict[str, ProbeResult] = {}
        self._stopped: list[ProbeResult] | None = None
        #: wall-clock time (``time.time()``) of the probes' common time origin, once started:
        #: what other series (fio's logs, stamped in Unix time) are placed against
        self.origin_s: float | None = None

    def start(self) -> None:
        """Start every available probe; never raises for a probe's own failure. An interrupt
        (Ctrl-C, SIGTERM) while starting stops the probes already running, then propagates."""
        try:
            self._start_all()
        except (Interrupted, KeyboardInterrupt):
            self.stop()
            raise

    def _start_all(self) -> None:
        t0 = time.monotonic()
        self.origin_s = time.time() - (time.monotonic() - t0)
        for p in self.probes:
            try:
                reason = p.unavailable()
            except Exception as e:
                reason = f"availability check failed: {e}"
            if reason:
                self._results[p.name] = ProbeResult(p.name, skipped=reason)
                continue
            if hasattr(p, "t0"):
                p.t0 = t0  # a common time origin: the probes' series line up
            try:
                p.start()
            except Interrupted:
                raise
            except Exception as e:
                self._results[p.name] = ProbeResult(p.name, skipped=f"failed to start: {e}")
                continue
            self._running.append(p)

    def stop(self) -> list[ProbeResult]:
        """Stop the running probes (in reverse order) and return every probe's result."""
        if self._stopped is not None:
            return self._stopped
        with shielded():
            while self._running:
                p = self._running.pop()
                try:
                    self._results[p.name] = p.stop()
                except Exception as e:
                    self._results[p.name] = ProbeResult(p.name, skipped=f"failed: {e}")
        self._stopped = [
            self._results.get(p.name, ProbeResult(p.name, skipped="not started")) for p in self.probes
        ]
        return self._stopped

    def __enter__(self) -> ProbeSet:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
