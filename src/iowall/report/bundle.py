"""How `export` and `import` read: what a bundle received, what an import added, and the
table of what an import would do (``--dry-run``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Run
from .emit import Format, renders
from .table import text_table


def count(n: int, word: str) -> str:
    """``1 run``, ``3 runs``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def kernel_of(r: Run) -> str:
    """The kernel a run ran on, ``?`` when its environment does not say."""
    return str(r.env.get("kernel", "")) or "?"


@dataclass(frozen=True)
class Exported:
    """What ``export`` wrote: the file (``-``: stdout), runs, labels and kernels among them."""

    output: str
    runs: int
    labels: int
    kernels: int

    def held(self) -> str:
        return f"{count(self.runs, 'run')} ({count(self.labels, 'label')}, {count(self.kernels, 'kernel')})"


@dataclass(frozen=True)
class Imported:
    """What ``import`` did: runs added, and runs read (the rest were present already)."""

    added: int
    read: int


@dataclass(frozen=True)
class ImportPlan:
    """What ``import`` would do (``--dry-run``): every run of the files in order, whether the
    store has it already, and how many it would add."""

    runs: tuple[Run, ...]
    present: tuple[bool, ...]
    new: int


@renders(Imported, Format.text)
def _imported_text(i: Imported) -> str:
    return f"imported {count(i.added, 'run')}, {i.read - i.added} already present\n"


@renders(ImportPlan, Format.text)
def _plan_text(p: ImportPlan) -> str:
    rows = [
        [
            "present" if there else "import",
            r.uuid[:8],
            str(r.id),
            r.label,
            r.point.recipe,
            r.status,
            kernel_of(r),
            r.point.describe(),
        ]
        for r, there in zip(p.runs, p.present, strict=True)
    ]
    table = text_table(
        ["action", "uuid", "source id", "label", "recipe", "status", "kernel", "point"],
        rows,
        left=8,
        indent=0,
    )
    return f"{table}\nwould import {count(p.new, 'run')}, {sum(p.present)} already present\n"
