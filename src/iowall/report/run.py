"""Runs as a reader wants them: one run whole (`show`), a list of runs (`runs`), a report with
its runs (`run --format json`), runs imported (`import-fio`), and why a run is where it is
(`explain`); text, JSON and CSV. Values are shown in the unit a kernel list
reads them in: bandwidth in MiB/s, latency in ms/us, shares in percent."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.fiogroups import fio_groups, group_values
from ..model import Run, primary_metric
from ..vocab.units import MIB, fmt_bytes, fmt_rate, plural
from .byte_prefix import RATE_UNITS, SIZE_UNITS, binary_scale
from .cgroup import cgroup_lines
from .emit import Format, json_text, renders
from .table import text_table

SPARK = "▁▂▃▄▅▆▇█"
#: Units that are a fraction of one, shown as percent.
SHARE_UNITS = ("share",)


def sparkline(values: list[float], width: int = 40) -> str:
    """A compact text sparkline of a series (resampled to ``width``)."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [values[int(i * step)] for i in range(width)]
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(SPARK[min(7, int((v - lo) / span * 7.999))] for v in values)


def unit_scale(unit: str, peak: float) -> tuple[float, str]:
    """Factor and unit label to show values of ``unit`` up to ``peak``: bytes with a binary
    prefix (MiB/s, GiB), seconds as s/ms/us, shares as %, ``_per_s`` as ``/s``."""
    peak = abs(peak)
    if unit in RATE_UNITS or unit in SIZE_UNITS:
        div, label = binary_scale(unit, peak)
        return 1.0 / div, label
    if unit in SHARE_UNITS:
        return 100.0, "%"
    if unit == "s":
        if peak >= 1 or peak == 0:
            return 1.0, "s"
        return (1e3, "ms") if peak >= 1e-3 else (1e6, "us")
    return 1.0, unit.replace("_per_s", "/s")


def fmt_value(value: float, unit: str) -> str:
    """One value in its best unit, four significant digits: ``28.7 ms``, ``1077 MiB/s``."""
    factor, label = unit_scale(unit, value)
    return f"{value * factor:.4g} {label}".strip()


def fmt_range(values: Sequence[float], unit: str) -> str:
    """``lo..hi UNIT``, both ends in the unit the larger one is best shown in (an end below
    a thousandth of the other reads 0, not ``3.81e-05``)."""
    lo, hi = min(values), max(values)
    top = max(abs(lo), abs(hi))
    factor, label = unit_scale(unit, top)

    def end(v: float) -> str:
        return "0" if abs(v) < top * 1e-3 else f"{v * factor:.3g}"

    return f"{end(lo)}..{end(hi)} {label}".strip()


def render_run(r: Run) -> str:
    """Everything about a run, in the order a reviewer asks for it."""
    started = dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M:%S")
    host = r.env.get("host", {})
    out = [
        f"run {r.id}  {r.status}  label {r.label}  recipe {r.point.recipe}",
        f"point     {r.point.describe()}",
        f"started   {started}  ({r.finished_at - r.started_at:.1f} s)  batch {r.batch}"
        f"  repeat {r.repeat_index + 1}",
        f"host      {host.get('hostname')}  kernel {r.env.get('kernel')}  "
        f"{host.get('cpu_count')} CPUs  {fmt_bytes(host.get('mem_total_bytes', 0))}",
        f"bed       {r.bed.get('kind')} {r.bed.get('fs', '')} {r.bed.get('device', '')} "
        f"mount {r.bed.get('mount_opts', '')}",
        f"fingerprint {r.fingerprint()}",
    ]
    if r.env.get("emulated"):
        out.insert(
            0,
            "EMULATED: measured in a guest without KVM (software emulation); its "
            "timings say nothing about the kernel",
        )
    if r.error:
        out.append(f"error     {r.error}")
    sysctls = r.env.get("sysctls", {})
    if sysctls:
        out.append(
            "sysctls   "
            + " ".join(f"{k.removeprefix('vm.')}={v}" for k, v in sysctls.items() if v not in ("", "0"))
        )
    out += cgroup_lines(r.env)
    grouped = {
        f"g{g}.{k}" for g, vals in group_values({m.name: m.value for m in r.metrics}).items() for k in vals
    }
    out += [
        "",
        "metrics",
        text_table(
            ["name", "value"],
            [[m.name, fmt_value(m.value, m.unit)] for m in r.metrics if m.name not in grouped],
        ),
    ]
    if grouped:
        out += [
            "",
            "groups (fio's own figures per group; un-prefixed: the average rate over "
            "the groups that did the direction)",
            groups_table(r),
        ]
    if r.series:
        out += ["", "series"]
        rows = []
        for s in r.series:
            vals = [v for _, v in s.samples]
            rows.append([f"{s.probe}.{s.name}", sparkline(vals), fmt_range(vals, s.unit) if vals else ""])
        out.append(text_table(["series", "", "range"], rows, left=2))
    if r.notes:
        out += ["", "notes"] + [f"  - {n}" for n in r.notes]
    if r.artifacts:
        out += ["", "raw (iowall show RUN --raw NAME)"] + [
            f"  {a.name}  {a.content_type}  {len(a.body)} bytes" for a in r.artifacts
        ]
    return "\n".join(out) + "\n"


def groups_table(r: Run) -> str:
    """One row per fio group (and direction it did) of a multi-group run: bandwidth, IOPS,
    bytes, runtime and p99 completion latency, each as fio reported it for the group."""
    cols = (
        ("bw_bytes_per_s", "B/s"),
        ("iops", "IO/s"),
        ("io_bytes", "B"),
        ("runtime_s", "s"),
        ("clat_p99_s", "s"),
    )
    rows = [
        [g.title, d]
        + [fmt_value(g.values[f"{d}_{k}"], u) if f"{d}_{k}" in g.values else "-" for k, u in cols]
        for g in fio_groups(r)
        for d in ("read", "write", "trim")
        if f"{d}_bw_bytes_per_s" in g.values
    ]
    return text_table(["group", "dir", "bw", "IOPS", "bytes", "runtime", "p99"], rows, left=2)


def run_json(r: Run, *, full: bool = False) -> dict[str, Any]:
    """A run as JSON (the shape `runs --format json` and `show --format json` print)."""
    doc: dict[str, Any] = {
        "id": r.id,
        "label": r.label,
        "recipe": r.point.recipe,
        "point": dict(r.point.params),
        "status": r.status,
        "batch": r.batch,
        "repeat_index": r.repeat_index,
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "kernel": r.env.get("kernel"),
        "host": (r.env.get("host") or {}).get("hostname"),
        "fingerprint": r.fingerprint(),
        "metrics": {m.name: {"value": m.value, "unit": m.unit, "direction": m.direction} for m in r.metrics},
        "error": r.error,
        "notes": list(r.notes),
    }
    if full:
        doc.update(
            env=dict(r.env),
            bed=dict(r.bed),
            artifacts=[
                {"name": a.name, "content_type": a.content_type, "bytes": len(a.body)} for a in r.artifacts
            ],
            series=[
                {"probe": s.probe, "name": s.name, "unit": s.unit, "samples": len(s.samples)}
                for s in r.series
            ],
        )
    return doc


@renders(Run, Format.text)
def _run_text(r: Run) -> str:
    return render_run(r)


@renders(Run, Format.json)
def _run_json(r: Run) -> str:
    return json_text(run_json(r, full=True))


# ------------------------------------------------------------------------------ runs


@dataclass(frozen=True)
class RunList:
    """Stored runs, oldest first, each with the one-line result `runs` shows for it."""

    runs: tuple[Run, ...]
    results: tuple[str, ...]

    @staticmethod
    def of(runs: Sequence[Run]) -> RunList:
        """The runs, each with its ``result_line``."""
        return RunList(tuple(runs), tuple(result_line(r) for r in runs))


def result_line(r: Run) -> str:
    """The run's primary metric (``model.primary_metric``: what ``--repeat auto`` decides
    on), e.g. ``write 7758MiB/s``, ``memcopy 21.3GiB/s``, ``create 24,310 files/s``."""
    m = primary_metric(r)
    if m is None:
        return ""
    if m.unit == "B/s":
        return f"{m.name.removesuffix('_bytes_per_s').removesuffix('_bw')} {fmt_rate(m.value)}"
    return f"{m.name.removesuffix('_files_per_s').removesuffix('_per_s')} {m.value:,.0f} {m.unit}"


@renders(RunList, Format.text)
def _runs_text(rl: RunList) -> str:
    if not rl.runs:
        return "no runs\n"
    rows = [
        [
            str(r.id),
            dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M:%S"),
            r.label,
            r.point.recipe,
            r.status,
            r.point.describe(),
            res,
        ]
        for r, res in zip(rl.runs, rl.results, strict=True)
    ]
    return (
        text_table(["id", "started", "label", "recipe", "status", "point", "result"], rows, left=6, indent=0)
        + "\n"
    )


@renders(RunList, Format.json)
def _runs_json(rl: RunList) -> str:
    return json_text({"runs": [run_json(r) for r in rl.runs]})


#: The columns of `runs --format csv` before one column per metric.
RUN_CSV_FIELDS = (
    "id",
    "uuid",
    "started_at",
    "finished_at",
    "label",
    "recipe",
    "status",
    "batch",
    "repeat_index",
    "kernel",
    "host",
    "fingerprint",
    "point",
)


@renders(RunList, Format.csv)
def runs_csv(rl: RunList) -> str:
    """A header line, then one line per run: its fields, then every metric any of the runs
    has, one column each (empty where a run lacks it); numbers unformatted."""
    names = list(dict.fromkeys(m.name for r in rl.runs for m in r.metrics))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*RUN_CSV_FIELDS, *names])
    for r in rl.runs:
        w.writerow(csv_row(r, names))
    return buf.getvalue()


def csv_row(r: Run, names: Sequence[str]) -> list[Any]:
    """One run's line of `runs --format csv`, with a column per metric of ``names``."""
    d = run_json(r)
    d.update(uuid=r.uuid, point=r.point.describe())
    mets = {m.name: m.value for m in r.metrics}
    return [
        *("" if d[k] is None else d[k] for k in RUN_CSV_FIELDS),
        *(repr(mets[n]) if n in mets else "" for n in names),
    ]


# ------------------------------------------------------------------------------ run, import


@dataclass(frozen=True)
class Imported:
    """Runs read from other tools' output (`import-fio`) and what the store made of them:
    ``present`` holds the uuids it had already; ``added`` and ``skipped`` are its counts."""

    runs: tuple[Run, ...]
    present: frozenset[str]
    files: int
    added: int
    skipped: int


def _mib(r: Run, d: str) -> str:
    v = r.metric(f"{d}_bw_bytes_per_s")
    return f"{v / MIB:.1f}" if v is not None else "-"


@renders(Imported, Format.text)
def _imported_text(im: Imported) -> str:
    rows = [
        [
            r.label,
            str(r.env["host"].get("hostname", "?")),
            str(r.point.params["groupid"]),
            str(r.point.params["jobname"]),
            _mib(r, "read"),
            _mib(r, "write"),
            r.status,
            "present" if r.uuid in im.present else "added",
        ]
        for r in im.runs
    ]
    table = text_table(
        ["label", "host", "group", "jobs", "read MiB/s", "write MiB/s", "status", ""], rows, left=4, indent=0
    )
    return (
        f"{table}\nimported {plural(im.added, 'run')} from {plural(im.files, 'file')}, "
        f"{im.skipped} already present\n"
    )
