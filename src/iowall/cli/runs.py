"""`iowall runs` (list stored runs) and `iowall show RUN` (one run, whole)."""

from __future__ import annotations

import datetime as dt

import typer

from ..model import Run
from ..report.table import text_table
from ..store import RunFilter
from ..units import fmt_rate
from .common import check_format, open_store, print_json


def _headline(r: Run) -> str:
    """The one number that best describes a run."""
    for name in ("write_bw_bytes_per_s", "read_bw_bytes_per_s", "memcopy_bytes_per_s"):
        v = r.metric(name)
        if v is not None:
            return f"{name.split('_')[0]} {fmt_rate(v)}"
    return ""


def run_json(r: Run, *, full: bool = False) -> dict[str, object]:
    """A run as JSON (the shape `runs --format json` and `show --format json` print)."""
    doc: dict[str, object] = {
        "id": r.id, "label": r.label, "recipe": r.point.recipe, "point": dict(r.point.params),
        "status": r.status, "batch": r.batch, "repeat_index": r.repeat_index,
        "started_at": r.started_at, "finished_at": r.finished_at,
        "kernel": r.env.get("kernel"), "host": (r.env.get("host") or {}).get("hostname"),
        "fingerprint": r.fingerprint(),
        "metrics": {m.name: {"value": m.value, "unit": m.unit, "direction": m.direction}
                    for m in r.metrics},
        "error": r.error, "notes": list(r.notes),
    }
    if full:
        doc.update(env=dict(r.env), bed=dict(r.bed),
                   artifacts=[{"name": a.name, "content_type": a.content_type,
                               "bytes": len(a.body)} for a in r.artifacts],
                   series=[{"probe": s.probe, "name": s.name, "unit": s.unit,
                            "samples": len(s.samples)} for s in r.series])
    return doc


def runs(
    label: str | None = typer.Option(None, help="only this label"),
    recipe: str | None = typer.Option(None, help="only this recipe"),
    batch: str | None = typer.Option(None, help="only this batch (one invocation)"),
    status: str | None = typer.Option(None, help="ok, failed, interrupted or filled"),
    host: str | None = typer.Option(None, help="only this host"),
    kernel: str | None = typer.Option(None, help="only this kernel release"),
    last: int | None = typer.Option(None, help="only the last N runs"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """List stored runs."""
    check_format(fmt, ("text", "json"))
    if status is not None and status not in ("ok", "failed", "interrupted", "filled"):
        from ..errors import UserError

        raise UserError(f"--status {status!r}: use ok, failed, interrupted or filled")
    found = open_store(db).runs(RunFilter(label=label, recipe=recipe, batch=batch, status=status,
                                          host=host, kernel=kernel, limit=last))
    if fmt == "json":
        print_json([run_json(r) for r in found])
        return
    rows = [[str(r.id), dt.datetime.fromtimestamp(r.started_at).strftime("%Y-%m-%d %H:%M:%S"),
             r.label, r.point.recipe, r.status, r.point.describe(), _headline(r)] for r in found]
    typer.echo(text_table(["id", "started", "label", "recipe", "status", "point", "result"],
                          rows, left=6, indent=0))


def show(
    run_id: int = typer.Argument(..., metavar="RUN", help="run id"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
    raw: str | None = typer.Option(None, help="print one raw artifact (e.g. fio.json)"),
    db: str | None = typer.Option(None, envvar="IOWALL_DB", help="store URL"),
) -> None:
    """Show one run: point, metrics, environment, bed, raw artifacts and series."""
    check_format(fmt, ("text", "json"))
    store = open_store(db)
    r = store.get_run(run_id)
    if raw is not None:
        a = next((a for a in r.artifacts if a.name == raw), None)
        if a is None:
            from ..errors import UserError

            names = ", ".join(a.name for a in r.artifacts) or "none"
            raise UserError(f"run {run_id} has no artifact {raw!r} (it has: {names})")
        typer.echo(a.body)
        return
    if fmt == "json":
        print_json(run_json(r, full=True))
        return
    from ..report.run import render_run

    typer.echo(render_run(r), nl=False)
