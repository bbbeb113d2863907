"""Pure: the cgroup limits a run recorded (``env["cgroup"]``, from ``cgroups.limits``) as one
short text, the form `show` prints and `compare` lists among what else differs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...vocab.units import fmt_bytes, fmt_rate

#: How each io.max / blkio.throttle key reads: bytes per second or I/Os per second.
IO_UNITS = {"rbps": "B/s", "wbps": "B/s", "riops": "IO/s", "wiops": "IO/s"}


def _io_text(lim: Mapping[str, Any]) -> str:
    parts = [
        f"{k} {fmt_rate(v)}" if IO_UNITS[k] == "B/s" else f"{k} {v}/s"
        for k in IO_UNITS
        if isinstance(v := lim.get(k), int)
    ]
    return f"io {lim.get('dev', '?')} " + " ".join(parts) if parts else ""


def limits_text(doc: Mapping[str, Any] | None) -> str:
    """``cpu 1.5 CPUs, memory 300.0 MiB (high 256.0 MiB), io 7:0 rbps 10MiB/s``: the limits
    set (on the group or an ancestor), "" when none is (or nothing was recorded)."""
    if not isinstance(doc, Mapping):
        return ""
    out = []
    cpus = doc.get("cpu_quota_cpus")
    if isinstance(cpus, (int, float)):
        out.append(f"cpu {cpus:.3g} CPUs (period {doc.get('cpu_period_us')} us)")
    mem, high = doc.get("mem_limit_bytes"), doc.get("mem_high_bytes")
    if isinstance(mem, int) or isinstance(high, int):
        text = f"memory {fmt_bytes(mem)}" if isinstance(mem, int) else "memory"
        out.append(text + (f" (high {fmt_bytes(high)})" if isinstance(high, int) else ""))
    out += [t for lim in doc.get("io_limits") or [] if isinstance(lim, Mapping) and (t := _io_text(lim))]
    return ", ".join(out)


def paths_text(doc: Mapping[str, Any] | None) -> str:
    """``cpu /x  memory /y  unified /``: where the run's process was in each hierarchy."""
    paths = doc.get("paths") if isinstance(doc, Mapping) else None
    if not isinstance(paths, Mapping):
        return ""
    return "  ".join(f"{k} {v}" for k, v in paths.items())
