"""The probe protocol: a small object started before a workload and stopped after it.

A probe samples something the kernel exposes (procfs, sysfs, tracefs, perf) and returns
series (raw samples, kept with the run) plus summary metrics (stored as the run's metrics).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from ..model import Artifact, Metric, Series


@dataclass(frozen=True)
class ProbeContext:
    """What a probe needs to know about the run it watches."""

    interval_s: float = 1.0
    #: kernel names of the bed's block devices (``loop3``) and their ``MAJ:MIN``.
    devices: tuple[str, ...] = ()
    devnos: tuple[str, ...] = ()
    #: the bed's mount points (or directories), for the filesystems' free space (``df``)
    mounts: tuple[str, ...] = ()
    #: a private scratch directory for the probe's own files (perf.data …).
    workdir: str = "/tmp"


@dataclass(frozen=True)
class ProbeResult:
    """What a probe hands back: series, summary metrics, raw artifacts, or why it was skipped."""

    probe: str
    series: tuple[Series, ...] = ()
    metrics: tuple[Metric, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    skipped: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class Probe(ABC):
    """Base class: ``unavailable()`` says why it cannot run; ``start``/``stop`` bracket the work."""

    name: ClassVar[str]
    #: started last and stopped first: a probe that accounts for the others' cost (``tasks``)
    innermost: ClassVar[bool] = False

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx

    def unavailable(self) -> str | None:
        """A one-line reason this probe cannot run here (no root, no tracefs, no perf), or None."""
        return None

    @abstractmethod
    def start(self) -> None:
        """Begin watching; must return quickly (sampling happens in a thread or child)."""

    @abstractmethod
    def stop(self) -> ProbeResult:
        """Stop watching and return the result; must clean up everything it set up."""
