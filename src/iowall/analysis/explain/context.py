"""Pure: the context `explain` needs for one run, found among the runs of its batch
(throughput, the direct-I/O and memory-copy ceilings measured alongside it, jobs, CPUs)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from ...model import MEASURED_STATUSES, Run
from .phases import write_phases
from .verdict import FIO, STEAL


def explain_context(
    run: Run, batch: Sequence[Run], tp: tuple[str, float] | None, metric: Mapping[str, float]
) -> dict[str, float]:
    """Context keys of ``analysis.explain.rules`` for ``run``; ceilings only when the batch has
    them. ``tp``: the direction and bytes/s of its primary metric and ``metric`` its metrics by
    name, as ``analysis.explain.evidence`` read them (``evidence.read(...).ctx``)."""
    ctx: dict[str, float] = {}
    host = run.env.get("host") or {}
    cpus = int(host.get("cpu_count") or 0)
    if cpus:
        ctx["cpus"] = float(cpus)
    p = run.point.params
    jobs = int(p.get("jobs") or p.get("numjobs") or p.get("threads") or 0)
    if jobs:
        ctx["jobs"] = float(jobs)
    if p.get("kind") == "fio":
        ctx[FIO] = 1.0
    physical = 1.0 if physical_device(str(run.bed.get("device") or "")) else 0.0
    if tp:
        d, v = tp
        ctx["throughput_bytes_per_s"] = v
        rt = metric.get(f"{d}_runtime_s")
        if rt:
            ctx["wall_s"] = rt
        ctx.update(_ceilings(run, batch, d, metric, min(jobs, cpus) if jobs and cpus else 0))
        ctx.update(phase_context(run, metric))  # last: it leaves for analysis.explain.phases
    else:
        wall = run.finished_at - run.started_at
        if wall > 0:
            ctx["wall_s"] = wall
    ctx["device_physical"] = physical
    if (steal := metric.get(STEAL)) is not None:
        ctx[STEAL] = steal
    return ctx


def _ceilings(
    run: Run, batch: Sequence[Run], d: str, metric: Mapping[str, float], t: int
) -> dict[str, float]:
    """What the device moved while fio ran, the direct-I/O ceiling measured by the batch's
    other points, its memory-copy rates (``t`` threads and one) and this machine's one-thread
    copy rate."""
    ctx: dict[str, float] = {}
    p = run.point.params
    rt = metric.get(f"{d}_runtime_s")
    # what the device moved while fio ran (its runtime includes an end_fsync), not
    # diluted by the probes' window (cache drop, start-up)
    dev_bytes = metric.get(f"disk_{d}_bytes")
    if dev_bytes and rt:
        ctx["device_bytes_per_s"] = dev_bytes / rt
    good = [r for r in batch if r.status in MEASURED_STATUSES]
    direct: dict[int, list[float]] = {}
    me = run.point.key()
    for r in good:  # the ceiling comes from other points, never from the run's own
        q = r.point.params
        v2 = r.metric(f"{d}_bw_bytes_per_s")
        same_rw = q.get("rw") == p.get("rw", d) and q.get("fs_block") == p.get("fs_block")
        if q.get("kind", "fio") == "fio" and q.get("direct") and same_rw and v2 and r.point.key() != me:
            direct.setdefault(int(q.get("jobs") or q.get("numjobs") or 0), []).append(v2)
    if direct:
        ctx["direct_ceiling_bytes_per_s"] = max(statistics.median(v) for v in direct.values())
    for key, n in (("memcopy_bytes_per_s", t), ("memcopy_1_bytes_per_s", 1)):
        vals = [
            v
            for r in good
            if r.point.params.get("kind") == "memcopy" and r.point.params.get("threads") == n
            for v in [r.metric("memcopy_bytes_per_s")]
            if v
        ]
        if vals:
            ctx[key] = statistics.median(vals)
    ref = run.env.get("memcopy_ref") or {}
    if isinstance(ref, dict) and ref.get("bytes_per_s"):
        # this machine's one-thread copy rate, measured once per boot (plan runs)
        ctx["memcopy_thread_bytes_per_s"] = float(ref["bytes_per_s"])
    return ctx


def phase_context(run: Run, metric: Mapping[str, float] | None = None) -> dict[str, float]:
    """The copy and writeback phases of a buffered write that ends with fsync
    (``analysis.explain.phases``), as context keys; empty for any other point. ``metric``: the
    run's metrics by name (read from the run when not given)."""
    if metric is None:
        metric = {m.name: m.value for m in reversed(run.metrics)}
    p = run.point.params
    if p.get("rw") != "write" or p.get("direct") or not p.get("end_fsync"):
        return {}
    series = next((s for s in run.series if s.probe in ("fio", "engine") and s.name == "write_bw"), None)
    total, runtime = metric.get("write_io_bytes"), metric.get("write_runtime_s")
    if series is None or not total or not runtime:
        return {}
    ph = write_phases(series.samples, total_bytes=total, runtime_s=runtime)
    if ph is None:
        return {}
    return {
        "copy_s": ph.copy_s,
        "writeback_s": ph.writeback_s,
        "write_bytes": ph.bytes,
        "copy_bytes_per_s": ph.copy_bytes_per_s,
        "writeback_share": ph.writeback_share,
        "phase_resolution_s": ph.resolution_s,
    }


#: Devices whose %util says nothing about saturation: loop, zram, RAM disks, virtual
#: (virtio, Xen, nbd), stacked (dm, md): they complete requests in parallel or in software.
VIRTUAL_DEVICES = ("loop", "zram", "ram", "nullb", "vd", "xvd", "nbd", "dm-", "md", "pmem")


def physical_device(device: str) -> bool:
    """Whether ``/dev/X`` is a physical device, on which a high %util can mean saturation."""
    name = device.rsplit("/", 1)[-1]
    return bool(name) and not name.startswith(VIRTUAL_DEVICES)


def representative(runs: Sequence[Run], metric: str) -> Run | None:
    """The run whose ``metric`` is the median of the group (lower middle for even counts)."""
    have = sorted((r for r in runs if r.metric(metric) is not None), key=lambda r: r.metric(metric) or 0.0)
    return have[(len(have) - 1) // 2] if have else None
