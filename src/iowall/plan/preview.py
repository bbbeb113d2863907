"""``iowall run PLAN --dry-run``: a plan checked as a run checks it before anything runs (axes,
knobs, bed, workload, every point's fio job), then described as the points it would run, with
their bed and knobs, and the number of runs. No store, no bed, no machine lock, no knob set."""

from __future__ import annotations

from typing import Any

from ..results import Report, Section, Table
from ..vocab.units import fmt_bytes
from .caveats import fio_caveats
from .execute import auto_bed_size, check_points
from .model import BedShape, Plan

#: Where the check points each job (a real run points it at a fresh directory of its bed).
BED_DIR = "/run/iowall/bed/iowall-plan"


def _runs_line(plan: Plan, n_points: int) -> str:
    if plan.repeats.auto:
        return (
            f"{n_points} point{'s' if n_points != 1 else ''}, repeat auto: at most "
            f"{n_points * plan.repeat} runs ({plan.repeat} per point)"
        )
    return (
        f"{n_points} point{'s' if n_points != 1 else ''} x {plan.repeat} "
        f"repeat{'s' if plan.repeat != 1 else ''} = {n_points * plan.repeat} runs"
    )


def preview(plan: Plan) -> Report:
    """The plan's points, checked and described; a UserError (PlanError) for what a run would
    refuse before running anything, except what only the machine can tell (said in the notes)."""
    points = plan.expand()
    check_points(points, plan, trial=False)
    for pp in points:
        plan.job(pp, BED_DIR)
    sizes: dict[BedShape, int] = {
        shape: shape.size or auto_bed_size([pp for pp in points if pp.shape == shape], plan.workload)
        for shape in dict.fromkeys(pp.shape for pp in points)
    }
    names = list(points[0].values) if points else []
    rows = [
        (str(i), *[str(pp.values[n]) for n in names], f"{pp.shape.describe()} ({fmt_bytes(sizes[pp.shape])})")
        for i, pp in enumerate(points, 1)
    ]
    notes = ["dry run: nothing was run, no store opened, no bed made, no knob set"]
    notes.extend(fio_caveats(points, plan.workload))
    if any(pp.fio.get("mode") == "uncached" for pp in points):
        notes.append(
            "not checked: whether fio or iowall-engine generates the mode=uncached "
            "points (known after observing fio once, when the plan runs)"
        )
    if any(pp.shape.fs_block for pp in points):
        notes.append("not checked: the trial mkfs + mount of each fs_block size (when the plan runs)")
    if any(k.needs_bed for pp in points for k, _ in pp.knobs):
        notes.append("not checked: the bed's own attributes (sysfs:ATTR), which exist only once the bed does")
    data: dict[str, Any] = {
        "dry_run": True,
        "plan": plan.describe(),
        "runs": len(points) * plan.repeat,
        "points": [
            {
                "values": dict(pp.values),
                "params": dict(pp.point.params),
                "bed": {"describe": pp.shape.describe(), "size": sizes[pp.shape]},
                "knobs": {str(k): v for k, v in pp.knobs},
            }
            for pp in points
        ],
    }
    return Report(
        kind="plan",
        name=plan.recipe,
        title=f"plan {plan.label}: dry run",
        head=(plan.workload.describe(), _runs_line(plan, len(points))),
        sections=(Section(table=Table.of(("#", *names, "bed"), rows)),),
        notes=tuple(notes),
        label=plan.label,
        data=data,
    )
