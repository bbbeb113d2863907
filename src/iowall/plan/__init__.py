"""Plans: TOML files (or recipe-built dicts) naming a workload, a bed, axes and repeats.

- ``spec``: the shape of a plan file (pydantic at the edge) and errors naming file, line, key;
- ``axes``: axes and ``--set``; ``model``: the Plan and its points; ``load``: reading plans;
- ``execute``: running a plan through a Session; ``summary``: its Report;
- ``preview``: ``--dry-run``, the points a plan would run, checked, nothing run.

See docs/plans.md for every key and the knob syntax.
"""

from ..vocab.errors import PlanError
from ..workloads.jobfile import build_job
from .axes import Axis, check_axis, parse_set
from .execute import PlanResult, auto_bed_size, interleave, memory_need, rounds, run_plan
from .load import load_jobfile, load_plan, plan_from_doc
from .model import BedShape, Plan, PlanPoint, Workload
from .preview import preview
from .spec import BED_AXES, WORKLOAD_PARAMS, Where, key_line
from .summary import plan_report, summarise, table_json

__all__ = [
    "BED_AXES",
    "WORKLOAD_PARAMS",
    "Axis",
    "BedShape",
    "Plan",
    "PlanError",
    "PlanPoint",
    "PlanResult",
    "Where",
    "Workload",
    "auto_bed_size",
    "build_job",
    "check_axis",
    "interleave",
    "memory_need",
    "key_line",
    "load_jobfile",
    "load_plan",
    "parse_set",
    "plan_from_doc",
    "plan_report",
    "preview",
    "rounds",
    "run_plan",
    "summarise",
    "table_json",
]
