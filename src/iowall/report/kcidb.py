"""Runs as KernelCI's KCIDB speaks (schema v5.3, docs/kernelci.md): a checkout per kernel (its
commit when the run carries one, else its release), a build per kernel and architecture
(iowall builds nothing: the build is the kernel the runs booted), and a test per run and
metric with its ``number``; with a gate's verdicts, a test per gated point and metric whose
status is the verdict. Ids carry the ``iowall:`` origin prefix and are made from what they
name (the kernel, the run's uuid, the point's key), so exporting twice gives the same ids."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..analysis.regress.gate import GateResult, Verdict
from ..model import MEASURED_STATUSES, Run, run_uuid
from .gate import point_name

ORIGIN = "iowall"
SCHEMA = {"major": 5, "minor": 3}

#: The gate's verdicts as KCIDB test statuses: a regression fails, an inconclusive row could
#: not be judged (SKIP: not run to a decision), everything else passes.
VERDICT_STATUS = {
    "regression": "FAIL",
    "inconclusive": "SKIP",
    "improvement": "PASS",
    "same": "PASS",
    "accepted": "PASS",
    "changed": "PASS",
}

#: iowall's units as KCIDB's ``number.unit`` and ``prefix`` (binary: B/s shown as MiB/s)
UNITS: Mapping[str, tuple[str, str | None]] = {
    "B/s": ("B/s", "binary"),
    "bytes_per_s": ("B/s", "binary"),
    "B": ("B", "binary"),
    "bytes": ("B", "binary"),
    "s": ("s", "metric"),
    "IO/s": ("IOPS", "metric"),
}

#: host facts a test's environment carries
HOST_KEYS = ("hostname", "cpu_model", "cpu_count", "mem_total_bytes", "arch")

_SHA1 = re.compile(r"^[0-9a-f]{40}$")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def _slug(text: str) -> str:
    """A path element KCIDB accepts (letters, digits, _ and -)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "_"


def kernel_of(run: Run) -> tuple[str, str]:
    """(commit, release) of the kernel a run measured: ``--commit`` when given, its release."""
    return str(run.env.get("commit") or ""), str(run.env.get("kernel") or "unknown")


def checkout_id(run: Run) -> str:
    commit, release = kernel_of(run)
    return f"{ORIGIN}:{commit or 'release-' + _slug(release)}"


def build_id(run: Run) -> str:
    arch = str((run.env.get("host") or {}).get("arch") or "unknown")
    _, release = kernel_of(run)
    return f"{checkout_id(run)}:{_slug(release)}:{_slug(arch)}"


def _number(value: float, unit: str) -> dict[str, Any]:
    u, prefix = UNITS.get(unit, (unit, None))
    out: dict[str, Any] = {"value": value}
    if u:
        out["unit"] = u
    if prefix:
        out["prefix"] = prefix
    return out


def _checkout(run: Run, first: float) -> dict[str, Any]:
    commit, release = kernel_of(run)
    doc: dict[str, Any] = {
        "id": checkout_id(run),
        "origin": ORIGIN,
        "start_time": _iso(first),
        "valid": True,
        "comment": f"Linux {release}",
        "misc": {"kernel": release, **({"commit": commit} if commit else {})},
    }
    if _SHA1.match(commit):
        doc["git_commit_hash"] = commit
    return doc


def _build(run: Run) -> dict[str, Any]:
    _, release = kernel_of(run)
    host = run.env.get("host") or {}
    return {
        "id": build_id(run),
        "checkout_id": checkout_id(run),
        "origin": ORIGIN,
        "architecture": str(host.get("arch") or "unknown"),
        "status": "PASS",
        "comment": f"the running kernel {release} (iowall builds nothing; it measures the kernel booted)",
        "misc": {"kernel": release},
    }


def _environment(run: Run) -> dict[str, Any]:
    host = run.env.get("host") or {}
    return {
        "comment": str(host.get("hostname") or ""),
        "misc": {k: host[k] for k in HOST_KEYS if k in host},
    }


def _run_tests(run: Run) -> list[dict[str, Any]]:
    """One test per metric of a measured run; one ERROR test for a run that did not measure."""
    uid = run_uuid(run)
    path = f"iowall.{_slug(run.point.recipe)}"
    common = {
        "build_id": build_id(run),
        "origin": ORIGIN,
        "start_time": _iso(run.started_at),
        "duration": max(0.0, run.finished_at - run.started_at),
        "environment": _environment(run),
    }
    misc = {
        "point": dict(run.point.params),
        "label": run.label,
        "batch": run.batch,
        "run": run.id,
        "uuid": uid,
    }
    if run.status not in MEASURED_STATUSES:
        return [
            {
                **common,
                "id": f"{ORIGIN}:{uid}",
                "path": path,
                "status": "ERROR",
                "log_excerpt": (run.error or run.status)[:16384],
                "misc": {**misc, "status": run.status},
            }
        ]
    return [
        {
            **common,
            "id": f"{ORIGIN}:{uid}:{_slug(m.name)}",
            "path": f"{path}.{_slug(m.name)}",
            "status": "DONE",
            "number": _number(m.value, m.unit),
            "misc": misc,
        }
        for m in run.metrics
        if m.value == m.value and abs(m.value) != float("inf")  # JSON has no NaN or infinity
    ]


def kcidb_doc(runs: Iterable[Run]) -> dict[str, Any]:
    """A KCIDB v5.3 document of ``runs``: checkouts (started at their earliest run), builds
    and a test per run and metric."""
    first: dict[str, Run] = {}
    builds: dict[str, dict[str, Any]] = {}
    tests: list[dict[str, Any]] = []
    for r in runs:
        cid = checkout_id(r)
        if cid not in first or r.started_at < first[cid].started_at:
            first[cid] = r
        builds.setdefault(build_id(r), _build(r))
        tests += _run_tests(r)
    checkouts = [_checkout(r, r.started_at) for r in first.values()]
    return _document(checkouts, list(builds.values()), tests)


def _document(
    checkouts: list[dict[str, Any]], builds: list[dict[str, Any]], tests: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"version": dict(SCHEMA), "checkouts": checkouts, "builds": builds, "tests": tests}


def gate_doc(
    result: GateResult,
    new_runs: Sequence[Run],
    why: Mapping[str, Sequence[str]] | None = None,
    base_runs: Sequence[Run] = (),
) -> dict[str, Any]:
    """The KCIDB document of a gate: the new runs' checkout and build, and a test per gated
    point and metric whose status is the verdict (``VERDICT_STATUS``), its ``number`` the new
    median, the change, interval, q-value and the Why in ``misc``; ``why`` by point name
    (``report.gate.point_name``). A regression's ``misc.bisect_window`` names the kernels
    between which it appeared: the newest baseline run's (last good) and the new runs' (first
    bad), each with its commit when recorded, as ``iowall history`` gives a window."""
    by_id = {r.id: r for r in new_runs}
    base_by_id = {r.id: r for r in base_runs}
    checkouts: dict[str, dict[str, Any]] = {}
    builds: dict[str, dict[str, Any]] = {}
    tests = []
    for v in result.verdicts:
        runs = [by_id[i] for i in v.row.new_runs if i in by_id]
        if not runs:
            continue
        run = runs[0]
        checkouts.setdefault(checkout_id(run), _checkout(run, min(r.started_at for r in runs)))
        builds.setdefault(build_id(run), _build(run))
        test = _verdict_test(v, run, runs, (why or {}).get(point_name(v), ()))
        good = [base_by_id[i] for i in v.row.base_runs if i in base_by_id]
        if v.status == "regression" and good:
            test["misc"]["bisect_window"] = {"last_good": _side(good), "first_bad": _side(runs)}
        tests.append(test)
    return _document(list(checkouts.values()), list(builds.values()), tests)


def _side(runs: Sequence[Run]) -> dict[str, Any]:
    """One end of a bisect window: the newest run's kernel and commit, and the run ids."""
    newest = max(runs, key=lambda r: r.started_at)
    commit, release = kernel_of(newest)
    return {"kernel": release, "commit": commit or None, "runs": [r.id for r in runs]}


def _verdict_test(v: Verdict, run: Run, runs: Sequence[Run], why: Sequence[str]) -> dict[str, Any]:
    key = hashlib.sha256(
        "|".join((checkout_id(run), run.label, repr(sorted(v.row.point.items())), v.row.metric)).encode()
    ).hexdigest()[:16]
    c = v.row.cmp
    ratio = c.ratio if c.ratio == c.ratio else None
    return {
        "id": f"{ORIGIN}:gate:{key}",
        "build_id": build_id(run),
        "origin": ORIGIN,
        "path": f"iowall.gate.{_slug(run.point.recipe)}.{_slug(v.row.metric)}",
        "status": VERDICT_STATUS.get(v.status, "PASS"),
        "start_time": _iso(min(r.started_at for r in runs)),
        "number": _number(float(sorted(v.row.new_samples)[len(v.row.new_samples) // 2]), v.row.unit),
        "environment": _environment(run),
        "misc": {
            "verdict": v.status,
            "reason": v.reason,
            "point": v.row.point_text,
            "change": None if ratio is None else ratio - 1,
            "interval": [c.ci_low - 1, c.ci_high - 1] if 0 < c.ci_low and c.ci_high < float("inf") else None,
            "q_value": v.q_value if v.q_value == v.q_value else None,
            "base_runs": list(v.row.base_runs),
            "new_runs": list(v.row.new_runs),
            "why": list(why),
        },
    }
