"""Helpers the seed recipes share: reading --set values, running a list of tasks on a bed
with the default probes, and tables with one column per stored label."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..model import MEASURED_STATUSES, Point, Run
from ..repeat import KeyMetric, RepeatPolicy, primary_metric
from ..report.table import md_table, text_table
from ..runner import Outcome, Partial, Task
from ..sysinfo import drop_caches
from ..units import fmt_rate, parse_size
from ..workloads.fio import FioFailure, JobFile, run_fio
from .registry import RecipeOptions, RecipeResult

if TYPE_CHECKING:
    from ..analysis.compare import CompareResult
    from ..beds import Bed
    from ..runner import Progress
    from ..store import Store

MIB = 1 << 20
GIB = 1 << 30



def one(opts: RecipeOptions, name: str, default: Any = None) -> Any:
    """The single ``--set`` value of an axis that takes one value, or ``default``."""
    v = opts.values(name)
    if v is None:
        return default
    if len(v) != 1:
        raise UserError(f"--set {name}= takes one value here")
    return v[0]


def counts(opts: RecipeOptions, name: str, default: Sequence[int]) -> list[int]:
    """Whole positive numbers of an axis (``--set threads=1,2``), or ``default``."""
    v = opts.values(name)
    if v is None:
        return list(default)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v):
        raise UserError(f"--set {name}=…: whole numbers, at least 1")
    return sorted(set(int(x) for x in v))


def powers(top: int) -> list[int]:
    """1, 2, 4 … up to and including ``top``."""
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= 2
    return out + [top]


def size_opt(opts: RecipeOptions, name: str, default: int) -> int:
    v = one(opts, name)
    return parse_size(v, what=f"--set {name}") if v is not None else default


def run_tasks(store: Store, progress: Progress, *, label: str, bed: Bed | None,
              tasks: Sequence[Task], repeat: RepeatPolicy | int, probes: str = "default",
              extra: dict[str, Any] | None = None, devices: Sequence[str] = (),
              bed_facts: Callable[[], dict[str, Any]] | None = None,
              key_metric: KeyMetric = primary_metric) -> tuple[list[Run], str]:
    """Run tasks interleaved with probes on the bed's device(s); every run is stored.
    ``bed_facts`` overrides the facts stored with each run (several beds in one schedule);
    ``repeat`` is fixed rounds or ``auto``, decided on ``key_metric`` (iowall.repeat)."""
    from ..probes import ProbeContext
    from ..probes import resolve as resolve_probes
    from ..runner import Schedule
    from ..sysinfo import environment
    from ..workloads.fio import fio_version

    ex = {"fio_version": ".".join(map(str, fio_version())), **(extra or {})}
    devs = tuple(devices) or (tuple(bed.devices) if bed else ())
    devnos = []
    for d in devs:
        try:
            st = os.stat(f"/dev/{d}")
            devnos.append(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
        except OSError:
            pass
    workdir = bed.private_dir("probe-") if (bed is not None and os.geteuid() == 0) else "/tmp"
    sched = Schedule(store=store, label=label, env=lambda: environment(ex),
                     bed=bed_facts or (lambda: dict(bed.facts) if bed else {}),
                     progress=progress,
                     probes=resolve_probes(probes),
                     probe_ctx=ProbeContext(devices=devs, devnos=tuple(devnos),
                                            workdir=workdir),
                     key_metric=key_metric)
    runs = sched.execute(tasks, repeat)
    return runs, sched.batch


@dataclass(frozen=True)
class Columns:
    """Stored samples of the current points, one column per label (earlier labels first)."""

    labels: tuple[str, ...]
    samples: dict[tuple[str, str], list[Run]]

    def runs(self, point: Point, label: str) -> list[Run]:
        return self.samples.get((point.key(), label), [])

    def median(self, point: Point, label: str, metric: str | Callable[[Run], float | None]
               ) -> float | None:
        vals = []
        for r in self.runs(point, label):
            v = metric(r) if callable(metric) else r.metric(metric)
            if v is not None:
                vals.append(v)
        return statistics.median(vals) if vals else None


def columns(store: Store, recipe: str, runs: Sequence[Run], label: str) -> Columns:
    """Every stored measured run of the same points and fingerprints as ``runs``, grouped by
    label: the current label last, others in the order they were first stored. Medians side
    by side (no significance is claimed here: ``iowall compare`` does that)."""
    from ..store import RunFilter

    keys = {r.point.key() for r in runs}
    fps = {r.fingerprint() for r in runs}
    samples: dict[tuple[str, str], list[Run]] = {}
    order: list[str] = []
    for r in store.runs(RunFilter(recipe=recipe)):
        if r.status not in MEASURED_STATUSES or r.point.key() not in keys:
            continue
        if r.fingerprint() not in fps:
            continue
        if r.label not in order:
            order.append(r.label)
        samples.setdefault((r.point.key(), r.label), []).append(r)
    if label in order:
        order.remove(label)
    order.append(label)
    return Columns(tuple(order), samples)


def head(name: str, labels: Sequence[str]) -> list[str]:
    """A column header per label (just ``name`` when one label is stored)."""
    return [name] if len(labels) == 1 else [f"{name} [{lab}]" for lab in labels]


def render(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]],
           notes: Iterable[str], *, left: int = 1, markdown: bool = False) -> str:
    """Title, table, then the notes (what was scaled, how) as ``- `` lines."""
    if markdown:
        body = md_table(headers, rows, left=left)
        return f"**{title}**\n\n{body}\n\n" + "".join(f"- {n}\n" for n in notes)
    body = text_table(headers, rows, left=left)
    return f"{title}\n\n{body}\n\n" + "".join(f"  - {n}\n" for n in notes)


def result(name: str, title: str, *, label: str, batch: str, cols: Columns,
           headers: Sequence[str], rows: Sequence[Sequence[str]], notes: list[str],
           runs: Sequence[Run], left: int = 1, extra: dict[str, Any] | None = None,
           metrics: Sequence[str] | None = None) -> RecipeResult:
    """A recipe's result: its table in text and Markdown, run statuses and the first failures
    in the notes, the Why section (explain on each point's median run) and, when other labels
    share the points, ``iowall compare`` of every label against the first on ``metrics``."""
    from ..analysis.why import why_points
    from ..report.why import why_lines

    notes.append("statuses: " + ", ".join(f"{s} {sum(r.status == s for r in runs)}"
                                           for s in sorted({r.status for r in runs})))
    notes += [f"run {r.id} failed: {r.error}" for r in runs if r.status == "failed"][:3]
    why = why_points(runs)
    cmp = compare_labels(cols, metrics)
    doc = {"recipe": name, "label": label, "batch": batch, **(extra or {}),
           "labels": list(cols.labels), "notes": notes,
           "table": {"headers": list(headers), "rows": [list(r) for r in rows]},
           "explain": why}
    if cmp is not None:
        from ..report.compare import render_json

        doc["compare"] = render_json(cmp)

    def text(markdown: bool) -> str:
        out = render(title, headers, rows, notes, left=left, markdown=markdown)
        tail = why_lines(why, markdown=markdown)
        if cmp is not None:
            from ..report.compare import render_md, render_text

            tail += ["", (render_md if markdown else render_text)(cmp).rstrip("\n")]
        return out + ("\n".join(tail) + "\n" if tail else "")

    return RecipeResult(tuple(runs), lambda: text(False), lambda: text(True), doc)


def compare_labels(cols: Columns, metrics: Sequence[str] | None = None) -> CompareResult | None:
    """Every stored label of the same points against the first, or None with one label."""
    if len(cols.labels) < 2:
        return None
    from ..analysis.compare import Side, compare

    by_label: dict[str, list[Run]] = {lab: [] for lab in cols.labels}
    for (_, lab), rs in cols.samples.items():
        by_label[lab].extend(rs)
    sides = [Side(lab, by_label[lab]) for lab in cols.labels]
    res = compare(sides[0], sides[1:], metrics=metrics)
    return res if res.rows else None


def fmt_mib(bps: float | None) -> str:
    return "-" if bps is None else fmt_rate(bps)


def fio_task(point: Point, job: Callable[[], JobFile], *, title: str, weight: float = 1.0,
             prepare: Callable[[], None] | None = None,
             cleanup: Callable[[], None] | None = None, drop: bool = True,
             expect_enospc: bool = False) -> Task:
    """A task that prepares, drops caches and runs one fio job; ENOSPC ends a fill point as
    ``filled`` with fio's partial numbers."""

    def execute(partial: Partial) -> Outcome:
        if prepare:
            prepare()
        if drop:
            drop_caches()
        try:
            res = run_fio(job())
        except FioFailure as e:
            if expect_enospc and (e.result.metrics and _enospc(e)):
                if cleanup:
                    cleanup()
                return Outcome(status="filled", metrics=e.result.metrics,
                               artifacts=e.result.artifacts(), series=e.result.series,
                               notes=("fio stopped on ENOSPC (the fill's expected end)",))
            partial.artifacts.extend(e.result.artifacts())
            raise
        if cleanup:
            cleanup()
        return Outcome(metrics=res.metrics, artifacts=res.artifacts(), series=res.series)

    return Task(point, execute, weight=weight, title=title)


def _enospc(e: FioFailure) -> bool:
    text = f"{e} {e.result.stderr}".lower()
    errs = {int(j.get("error", 0)) for j in e.result.raw.get("jobs", [])}
    return 28 in errs or "no space" in text or "enospc" in text


# ------------------------------------------------------------------------------------------
# The recipe
