"""The device side of a point and the cost of each of its I/Os, as ``explain`` prints them:
what the bed's device is, the requests it completed against the I/Os the workload issued,
the queue limits in force, and the workload's CPU per call, per I/O and per MiB."""

from __future__ import annotations

from ..analysis.explain.device import Device, fullness_of
from ..analysis.explain.facts import Cost, device_json
from ..vocab.units import fmt_bytes, fmt_rate

#: queue attributes shown, in this order (the ones that shape requests first)
QUEUE_SHOWN = (
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "max_segments",
    "nr_requests",
    "scheduler",
    "nomerges",
    "read_ahead_kb",
    "wbt_lat_usec",
    "rotational",
)


def _scheduler(v: str) -> str:
    """``none [mq-deadline] kyber`` → ``mq-deadline``."""
    chosen = [x.strip("[]") for x in v.split() if x.startswith("[")]
    return chosen[0] if chosen else v


def device_lines(dev: Device) -> list[str]:
    """The device side: a head naming the device and what it is, the workload's I/Os, the
    device's requests per direction, and the queue's limits. Its numbers are the JSON's
    (``facts.device_json``, rounded there), so that text and JSON never disagree in a digit."""
    d = device_json(dev)
    what = d["what"]
    head = f"  the device side ({d['name'] or 'the bed device'}" + (f": {what}" if what else "") + "):"
    out = [head]
    w = d["workload"]
    if w["direction"]:
        size = f"{fmt_bytes(w['io_bytes'])} per I/O" if w["io_bytes"] else "I/O size unknown"
        rate = f", {fmt_rate(w['bytes_per_s'])}" if w["bytes_per_s"] else ""
        how = ("direct" if w["direct"] else "buffered") + (", sequential" if w["sequential"] else "")
        p50 = w["latency_p50_s"]
        lat = f", {p50 * 1e6:.0f} us each (median, submission to completion)" if p50 else ""
        out.append(f"    workload issued: {w['direction']} {size}{rate} ({how}){lat}")
    for direction, r in d["requests"].items():
        parts = [f"{r['requests_per_s']:,.0f} requests/s"]
        if r["request_bytes"]:
            parts.append(f"{fmt_bytes(r['request_bytes'])} per request")
        parts.append(fmt_rate(r["bytes_per_s"] or 0.0))
        if r["merges_per_s"] is not None:
            parts.append(f"{r['merges_per_s']:,.0f} merges/s")
        out.append(f"    device completed: {direction} " + ", ".join(parts))
    busy = []
    if d["util"] is not None:
        busy.append(f"{100 * d['util']:.0f}% busy")
    if d["in_flight"] is not None:
        busy.append(f"{d['in_flight']:.1f} requests in flight")
    if d["await_s"]:
        busy.append(f"{d['await_s'] * 1e6:.0f} us per request")
    if d["loop_worker_cpus"] is not None:
        busy.append(f"loop worker on a CPU {100 * min(1.0, d['loop_worker_cpus']):.0f}% of the window")
    if busy:
        out.append("    device: " + ", ".join(busy))
    q = d["queue"]
    shown = [
        f"{k} {_scheduler(str(q[k])) if k == 'scheduler' else q[k]}"
        for k in QUEUE_SHOWN
        if q.get(k) not in (None, "")
    ]
    if shown:
        out.append("    queue in force: " + ", ".join(shown))
    fs = d["filesystem"]
    if fs and (
        said := fullness_of(
            fs["used_share_max"], fs["free_bytes_min"], fs["capacity_bytes"], fs["inodes_used_share_max"]
        )
    ):
        out.append(f"    filesystem: {said} (df)")
    return out


def cost_lines(c: Cost) -> list[str]:
    """One line: the workload's CPU per call, per I/O and per MiB, and its calls per second."""
    parts = []
    if c.cpu_us_per_call is not None:
        per = f" of {fmt_bytes(c.bytes_per_call)}" if c.bytes_per_call else ""
        parts.append(f"{c.cpu_us_per_call:.2f} us of CPU per call{per}")
    if c.cpu_us_per_io is not None and c.ios_per_s:
        parts.append(f"{c.cpu_us_per_io:.2f} us per I/O ({c.ios_per_s:,.0f} I/Os/s)")
    if c.cpu_ms_per_mib is not None:
        parts.append(f"{c.cpu_ms_per_mib:.3f} ms per MiB")
    if c.calls_per_s:  # libaio and io_uring submit through calls no counter sees
        parts.append(f"{c.calls_per_s:,.0f} read/write calls/s")
    parts.append(f"{100 * c.user_share:.0f}% of the CPU in user space")
    return ["    cost of each I/O (the workload's threads): " + ", ".join(parts)]
