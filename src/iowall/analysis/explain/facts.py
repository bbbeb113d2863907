"""What explaining one run found, as frozen facts: the ``Explanation`` that
``explain.run.explain`` returns and every face reads (``iowall explain``, the run's page,
the Why of reports, the gate), with ``to_json`` the one place its JSON form is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .budget import Budget
from .budget_json import to_json as budget_json
from .derived import ClassShare, PathShare
from .device import Device
from .evidence import SkippedProbe
from .rules import Verdict
from .verdict import Wall


@dataclass(frozen=True)
class Cost:
    """The cost of each I/O: the workload's on-CPU seconds and user-space share over the
    window; per read/write call (when those calls moved the bytes), per MiB and per I/O
    (fio's count) where measured, else None."""

    cpu_s: float
    user_share: float
    calls_per_s: float | None = None
    cpu_us_per_call: float | None = None
    bytes_per_call: float | None = None
    cpu_ms_per_mib: float | None = None
    ios_per_s: float | None = None
    cpu_us_per_io: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class Explanation:
    """Why one run is where it is. ``applicable`` False (a memory-copy ceiling) carries its
    reason as the one sentence. ``sentences`` are the verdicts' (the wall first) and the
    wall's notes; ``verdicts`` the wall verdicts then the rules that fired; ``near_misses``
    the rules that nearly did. ``budget`` (the threadstate probe), ``device`` (diskstats and
    the bed's facts), ``cost``, ``attribution`` (tasks) and ``paths`` (profile) are None or
    empty where the run has no such data; ``helpers_cpus`` the CPUs of each class of thread
    working for the point over the budget's window."""

    run: int | None
    point: str
    skipped_probes: tuple[SkippedProbe, ...] = ()
    applicable: bool = True
    sentences: tuple[str, ...] = ()
    fired: bool = False
    verdicts: tuple[Verdict, ...] = ()
    near_misses: tuple[str, ...] = ()
    attribution: tuple[ClassShare, ...] = ()
    paths: tuple[PathShare, ...] = ()
    wall: Wall | None = None
    budget: Budget | None = None
    helpers_cpus: Mapping[str, float] = field(default_factory=dict)
    device: Device | None = None
    cost: Cost | None = None
    throughput_bytes_per_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The form reports keep (their Why section) and ``explain --format json`` starts from."""
        base = {
            "run": self.run,
            "point": self.point,
            "skipped_probes": [skipped_json(s) for s in self.skipped_probes],
        }
        lists = {
            "verdicts": [verdict_json(v) for v in self.verdicts],
            "near_misses": list(self.near_misses),
            "attribution": [class_json(c) for c in self.attribution],
            "paths": [path_json(p) for p in self.paths],
        }
        if not self.applicable:
            return {
                **base,
                "sentences": list(self.sentences),
                "fired": False,
                "applicable": False,
                **lists,
                "wall": None,
                "budget": None,
                "device": None,
                "cost": None,
            }
        return {
            **base,
            "sentences": list(self.sentences),
            "fired": self.fired,
            "applicable": True,
            "wall": wall_json(self.wall) if self.wall else None,
            "device": device_json(self.device) if self.device is not None else None,
            "cost": self.cost.to_json() if self.cost is not None else None,
            "budget": (
                {**budget_json(self.budget), "helpers_cpus": dict(self.helpers_cpus)}
                if self.budget is not None
                else None
            ),
            **lists,
        }


def skipped_json(s: SkippedProbe) -> dict[str, str]:
    return {"probe": s.probe, "reason": s.reason}


def verdict_json(v: Verdict) -> dict[str, Any]:
    return {"rule": v.rule, "sentence": v.sentence, "evidence": dict(v.evidence)}


def class_json(c: ClassShare) -> dict[str, Any]:
    return {"class": c.cls, "title": c.title, "cpu_s": c.cpu_s, "share": c.share}


def path_json(p: PathShare) -> dict[str, Any]:
    return {
        "path": p.path,
        "label": p.label,
        "samples": p.samples,
        "share": p.share,
        "top_functions": [{"function": f.function, "share": f.share} for f in p.top_functions],
    }


def wall_json(w: Wall) -> dict[str, Any]:
    return {"kind": w.kind, "mechanism": w.mechanism, "sentence": w.sentence, "share": round(w.share, 4)}


def device_json(dev: Device) -> dict[str, Any]:
    """The device side as reports keep it: what the device is, the requests it completed
    against the I/Os the workload issued, and the queue limits in force."""
    per = {
        d: {
            "requests_per_s": round(dev.reqs[d], 1),
            "bytes_per_s": round(dev.bytes_per_s.get(d, 0.0)),
            "merges_per_s": round(dev.merges[d], 1) if d in dev.merges else None,
            "request_bytes": round(dev.request_bytes(d) or 0) or None,
        }
        for d in ("read", "write")
        if dev.reqs.get(d)
    }
    return {
        "name": dev.name,
        "kind": dev.kind,
        "what": dev.describe(),
        "util": round(dev.util, 4) if dev.util is not None else None,
        "in_flight": round(dev.queue_depth, 2) if dev.queue_depth is not None else None,
        "await_s": dev.await_s,
        "loop_worker_cpus": round(dev.loop_cpus, 3) if dev.loop_cpus is not None else None,
        "requests": per,
        "workload": {
            "direction": dev.direction,
            "io_bytes": round(dev.io_bytes) if dev.io_bytes else None,
            "bytes_per_s": round(dev.workload_bytes_per_s) if dev.workload_bytes_per_s else None,
            "direct": dev.direct,
            "sequential": dev.sequential,
            "latency_p50_s": dev.io_latency_s,
            "iodepth": dev.iodepth,
        },
        "queue": dict(dev.queue),
        "filesystem": None
        if dev.fs_used is None
        else {
            "used_share_max": round(dev.fs_used, 4),
            "free_bytes_min": round(dev.fs_free_bytes or 0.0),
            "capacity_bytes": round(dev.fs_bytes or 0.0),
            "inodes_used_share_max": round(dev.inodes_used, 4) if dev.inodes_used is not None else None,
        },
    }
