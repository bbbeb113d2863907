"""fio's JSON from elsewhere as iowall runs: one run per reporting group (per host for
``fio --client`` output), the job options as its point, fio's figures as its metrics (the
same names and units as iowall's own fio runs), fio's JSON and ``json+`` bins kept."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Artifact, Point, Run
from ..vocab.errors import UserError
from .fio_json import FioDoc, read_fio_json
from .fio_metrics import DIRECTIONS, parse_metrics

#: The recipe name of every imported run.
RECIPE = "fio-import"
#: The artifact with a run's latency histograms (``json+``): direction → one bins object per
#: fio entry of the group, as fio wrote them (kept raw, as fio's JSON is).
BINS_ARTIFACT = "fio-clat-bins.json"


@dataclass(frozen=True)
class Group:
    """The entries of one reporting group of one host, in fio's order."""

    hostname: str
    port: int | None
    groupid: int
    jobs: tuple[Mapping[str, Any], ...]


def groups_of(doc: FioDoc, hostname: str = "") -> list[Group]:
    """``doc``'s groups in order of first appearance: by host and ``groupid`` for client
    output, by ``groupid`` otherwise (all attributed to ``hostname``, possibly unknown)."""
    out: dict[tuple[str, int | None, int], list[Mapping[str, Any]]] = {}
    for j in doc.jobs:
        key = (j["hostname"], j["port"], j["groupid"]) if doc.client else (hostname, None, j["groupid"])
        out.setdefault(key, []).append(j)
    return [Group(h, p, g, tuple(js)) for (h, p, g), js in out.items()]


def read_runs(data: bytes, name: str, *, label: str, hostname: str = "") -> list[Run]:
    """Every group of every fio document in a file's bytes as a run (UserError if the file
    is not fio's JSON). The uuid comes from the file's content, host and group, so importing
    the same file again adds nothing."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"{name}: not UTF-8 text (byte {e.start})") from None
    sha = hashlib.sha256(data).hexdigest()
    runs = []
    for i, doc in enumerate(read_fio_json(text, name)):
        groups = groups_of(doc, hostname)
        hosts = {(g.hostname, g.port) for g in groups}
        for g in groups:
            runs.append(
                group_run(
                    doc,
                    g,
                    label=label,
                    shared_global=len(hosts) == 1,
                    source={
                        "file": name,
                        "sha256": sha,
                        "document": i,
                        "format": "json+" if doc.plus else "json",
                    },
                )
            )
    return runs


def point_params(
    global_options: Mapping[str, str], jobs: Sequence[Mapping[str, Any]], groupid: int
) -> dict[str, Any]:
    """The group's options: [global], then each job's own; an option whose value differs
    between the group's jobs is the list of their values (None where a job lacks it)."""
    merged: dict[str, Any] = dict(global_options)
    names = list(dict.fromkeys(k for j in jobs for k in j["job options"]))
    for k in names:
        vals = [j["job options"].get(k, global_options.get(k)) for j in jobs]
        merged[k] = vals[0] if all(v == vals[0] for v in vals) else vals
    merged["groupid"] = groupid
    merged["jobname"] = ",".join(dict.fromkeys(j["jobname"] for j in jobs))
    return merged


def group_run(
    doc: FioDoc, g: Group, *, label: str, source: Mapping[str, Any], shared_global: bool = True
) -> Run:
    """One group as a stored run: status failed if a job reported an error. fio --client
    output of several hosts has one ``global options`` for all (one client's): it is then
    kept in the environment, not in the point (``shared_global`` False)."""
    metrics = tuple(parse_metrics({"jobs": list(g.jobs)}))
    ends = [float(j[d]["runtime"]) for j in g.jobs for d in DIRECTIONS if d in j]
    finished = doc.timestamp_s if doc.timestamp_s is not None else 0.0
    started = finished - max(ends, default=0.0) / 1000.0
    host: dict[str, Any] = {"hostname": g.hostname} if g.hostname else {}
    if g.port is not None:
        host["port"] = g.port
    notes = list(doc.notes)
    notes.append(
        "imported from fio's JSON: the host's CPU and memory, the kernel and the "
        "bed are not in it, so they are unknown"
    )
    if doc.timestamp_s is None:
        notes.append("fio's JSON has no timestamp: times are unknown (0)")
    elif "timestamp_ms" not in doc.raw:
        notes.append("start time is fio's timestamp (whole seconds) minus the group's runtime")
    env: dict[str, Any] = {"host": host, "fio_version": doc.version, "source": dict(source)}
    if not shared_global:
        env["fio_global_options"] = dict(doc.global_options)
        notes.append(
            "fio --client output of several hosts holds one [global] section (one "
            "client's): it is in the environment, the point has the job's own options"
        )
    errors = [int(j["error"]) for j in g.jobs if j["error"]]
    key = f"iowall-fio-import:{source['sha256']}:{source['document']}:{g.hostname}:{g.port}:{g.groupid}"
    artifacts = [Artifact("fio.json", "application/json", json.dumps(doc.raw))]
    bins = {
        d: [
            j[d]["clat_ns"]["bins"]
            for j in g.jobs
            if isinstance(j.get(d), dict) and "bins" in j[d].get("clat_ns", {})
        ]
        for d in DIRECTIONS
    }
    if any(bins.values()):
        artifacts.append(
            Artifact(BINS_ARTIFACT, "application/json", json.dumps({d: b for d, b in bins.items() if b}))
        )
    options = doc.global_options if shared_global else {}
    return Run(
        point=Point(RECIPE, point_params(options, g.jobs, g.groupid)),
        label=label,
        status="failed" if errors else "ok",
        started_at=started,
        finished_at=finished,
        metrics=metrics,
        env=env,
        artifacts=tuple(artifacts),
        batch=str(uuid.uuid5(uuid.NAMESPACE_OID, source["sha256"])),
        error=f"fio reported error {errors[0]} in group {g.groupid}" if errors else "",
        notes=tuple(notes),
        uuid=str(uuid.uuid5(uuid.NAMESPACE_OID, key)),
    )
