"""One run as text: what ran, where, what it measured, what raw data is kept."""

from __future__ import annotations

import datetime as dt

from ..model import Run
from ..units import fmt_bytes, fmt_metric
from .table import text_table

SPARK = "▁▂▃▄▅▆▇█"


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


def render_run(r: Run) -> str:
    """Everything about a run, in the order a reviewer asks for it."""
    started = dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M:%S")
    host = r.env.get("host", {})
    out = [f"run {r.id}  {r.status}  label {r.label}  recipe {r.point.recipe}",
           f"point     {r.point.describe()}",
           f"started   {started}  ({r.finished_at - r.started_at:.1f} s)  batch {r.batch}"
           f"  repeat {r.repeat_index + 1}",
           f"host      {host.get('hostname')}  kernel {r.env.get('kernel')}  "
           f"{host.get('cpu_count')} CPUs  {fmt_bytes(host.get('mem_total_bytes', 0))}",
           f"bed       {r.bed.get('kind')} {r.bed.get('fs', '')} {r.bed.get('device', '')} "
           f"mount {r.bed.get('mount_opts', '')}",
           f"fingerprint {r.fingerprint()}"]
    if r.error:
        out.append(f"error     {r.error}")
    sysctls = r.env.get("sysctls", {})
    if sysctls:
        out.append("sysctls   " + " ".join(f"{k.removeprefix('vm.')}={v}"
                                           for k, v in sysctls.items() if v not in ("", "0")))
    out += ["", "metrics", text_table(["name", "value"], [
        [m.name, fmt_metric(m.value, m.unit, precise=True)] for m in r.metrics])]
    if r.series:
        out += ["", "series"]
        rows = []
        for s in r.series:
            vals = [v for _, v in s.samples]
            rows.append([f"{s.probe}.{s.name}", sparkline(vals),
                         f"{min(vals):.3g}..{max(vals):.3g} {s.unit}" if vals else ""])
        out.append(text_table(["series", "", "range"], rows, left=2))
    if r.notes:
        out += ["", "notes"] + [f"  - {n}" for n in r.notes]
    if r.artifacts:
        out += ["", "raw (iowall show RUN --raw NAME)"] + [
            f"  {a.name}  {a.content_type}  {len(a.body)} bytes" for a in r.artifacts]
    return "\n".join(out) + "\n"
