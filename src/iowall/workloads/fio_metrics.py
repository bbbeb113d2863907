"""fio's JSON as metrics: one set per reporting group when a job file has several (stonewall,
new_group), since bandwidths of groups that ran one after another never add up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model import Metric

DIRECTIONS = ("read", "write", "trim")
#: fio's completion-latency percentiles kept as metrics.
PERCENTILES = (("50.000000", "p50"), ("99.000000", "p99"))


def group_prefix(groupid: int) -> str:
    """The prefix of a group's own metrics: ``g2.`` as in ``g2.read_bw_bytes_per_s``."""
    return f"g{groupid}."


def groups(raw: Mapping[str, Any]) -> dict[int, list[Mapping[str, Any]]]:
    """fio's reported jobs by ``groupid`` (one entry per group with group_reporting, one per
    job without), in fio's order."""
    out: dict[int, list[Mapping[str, Any]]] = {}
    for j in raw.get("jobs", []):
        out.setdefault(int(j.get("groupid", 0)), []).append(j)
    return out


def _parts(jobs: Sequence[Mapping[str, Any]], d: str) -> list[Mapping[str, Any]]:
    return [j[d] for j in jobs if d in j and j[d].get("io_bytes", 0) > 0]


def _latency(parts: Sequence[Mapping[str, Any]], name: str) -> list[Metric]:
    """Percentiles of a single reported entry (they cannot be combined across entries)."""
    if len(parts) != 1:
        return []
    pct = parts[0].get("clat_ns", {}).get("percentile", {})
    return [Metric(f"{name}_clat_{p}_s", pct[k] / 1e9, "s", "lower") for k, p in PERCENTILES if k in pct]


def _group_metrics(gid: int, jobs: Sequence[Mapping[str, Any]]) -> list[Metric]:
    """One group's figures as fio computes its group aggregate: bytes of all its jobs over
    the longest job's runtime (fio's ``bw_bytes`` of the entry with group_reporting, and the
    ``Run status group`` line's bandwidth without it: integer B/s, as fio rounds)."""
    out: list[Metric] = []
    pre = group_prefix(gid)
    for d in DIRECTIONS:
        parts = _parts(jobs, d)
        if not parts:
            continue
        io = sum(int(p["io_bytes"]) for p in parts)
        rt = max(int(p["runtime"]) for p in parts)
        if len(parts) == 1:
            bw, iops = float(parts[0]["bw_bytes"]), float(parts[0]["iops"])
        else:
            bw = float(1000 * io // rt) if rt else 0.0
            ios = sum(int(p.get("total_ios", 0)) for p in parts)
            iops = 1000.0 * ios / rt if rt else 0.0
        out += [
            Metric(f"{pre}{d}_bw_bytes_per_s", bw, "B/s"),
            Metric(f"{pre}{d}_iops", iops, "IO/s"),
            Metric(f"{pre}{d}_io_bytes", float(io), "B"),
            Metric(f"{pre}{d}_runtime_s", rt / 1000.0, "s", "lower"),
            *_latency(parts, f"{pre}{d}"),
        ]
    return out


def _run_rates(by_group: Mapping[int, Sequence[Mapping[str, Any]]]) -> list[Metric]:
    """The un-prefixed figures of a run with several groups: per direction, all its bytes
    (and IOs) over the summed runtimes of the groups that did that direction, i.e. the average
    rate over the time spent doing it. Never a sum of rates: groups ran one after another, and
    a sum would report a bandwidth no phase reached (fio's tiobench example: 718 MiB/s of
    reads summed while no phase read faster than 368). It is kept because one number per
    direction decides ``--repeat auto`` and compares runs; the groups' own rows are the
    figures to read."""
    out: list[Metric] = []
    for d in DIRECTIONS:
        io = ios = rt = 0
        for jobs in by_group.values():
            parts = _parts(jobs, d)
            if parts:
                io += sum(int(p["io_bytes"]) for p in parts)
                ios += sum(int(p.get("total_ios", 0)) for p in parts)
                rt += max(int(p["runtime"]) for p in parts)
        if io and rt:
            out += [
                Metric(f"{d}_bw_bytes_per_s", 1000.0 * io / rt, "B/s"),
                Metric(f"{d}_iops", 1000.0 * ios / rt, "IO/s"),
                Metric(f"{d}_io_bytes", float(io), "B"),
                Metric(f"{d}_runtime_s", rt / 1000.0, "s", "lower"),
            ]
    return out


def _single_group(jobs: Sequence[Mapping[str, Any]]) -> list[Metric]:
    """One group: its jobs ran together, so their bandwidths and IOPS add up."""
    out: list[Metric] = []
    for d in DIRECTIONS:
        parts = _parts(jobs, d)
        if not parts:
            continue
        out += [
            Metric(f"{d}_bw_bytes_per_s", float(sum(p["bw_bytes"] for p in parts)), "B/s"),
            Metric(f"{d}_iops", float(sum(p["iops"] for p in parts)), "IO/s"),
            Metric(f"{d}_io_bytes", float(sum(p["io_bytes"] for p in parts)), "B"),
            Metric(f"{d}_runtime_s", max(p["runtime"] for p in parts) / 1000.0, "s", "lower"),
            *_latency(parts, d),
        ]
    return out


def parse_metrics(raw: Mapping[str, Any]) -> list[Metric]:
    """Metrics from fio's JSON: per direction bandwidth, IOPS, bytes, runtime and
    completion-latency percentiles (of a single reported entry), and fio's own CPU accounting.

    One group (the jobs ran together): bandwidth and IOPS summed over fio's entries, exactly
    as fio reports them. Several groups: each group's own figures under ``g{groupid}.``
    (``_group_metrics``), and un-prefixed the average rate over the run (``_run_rates``).
    """
    jobs = list(raw.get("jobs", []))
    if not jobs:
        return []
    by_group = groups(raw)
    if len(by_group) == 1:
        out = _single_group(jobs)
    else:
        out = _run_rates(by_group)
        for gid, members in by_group.items():
            out += _group_metrics(gid, members)
    out.append(Metric("fio_usr_cpu_pct", float(sum(j.get("usr_cpu", 0.0) for j in jobs)), "%", "lower"))
    out.append(Metric("fio_sys_cpu_pct", float(sum(j.get("sys_cpu", 0.0) for j in jobs)), "%", "lower"))
    errors = [j.get("error", 0) for j in jobs if j.get("error", 0)]
    if errors:
        out.append(Metric("fio_error", float(errors[0]), "errno", "lower"))
    return out
