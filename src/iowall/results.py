"""What a recipe, a plan or ``limits`` returns: a plain report object (title, tables, notes,
the Why section, the compare of other labels, JSON-only details), rendered by ``report/``;
and what a fleet run returns, one ``HostState`` per host.

Runners build it and never render; ``report.recipe`` turns it into text, Markdown or JSON; the
store keeps it with its batch (``to_json``/``from_json``) so ``iowall report BATCH`` can print it
again later in any format. The compare section is kept as the run ids of each side and is
recomputed from the stored runs when the report is printed again (``compare_sides``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from .model import MEASURED_STATUSES, Run
from .vocab.units import json_number

if TYPE_CHECKING:
    from .analysis.regress.compare import CompareResult

#: Version of a stored report's JSON; ``from_json`` refuses newer ones. 2: table cells may be
#: numbers with units (``Value``); version 1 (text cells only) is still read.
REPORT_VERSION = 2

Kind = Literal["limits", "recipe", "plan", "history", "gate", "ab", "bisect"]


@dataclass(frozen=True)
class Value:
    """A number in a table with its unit, formatted only by the renderer
    (``report.table.cell_text``): a metric's unit (``B/s``, ``s``, ``IO/s``, …), or ``ratio``,
    ``percent`` (a fraction), ``change`` (a signed relative change), ``bytes_per_byte``.
    ``spread`` is the relative half-range over repeats (``±12%`` after the value); ``upto``
    the end of a range starting at ``value``; ``interval`` a 95% interval of ``value``.
    None or a non-finite number reads ``-``."""

    value: float | None
    unit: str = ""
    spread: float | None = None
    upto: float | None = None
    interval: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"value": json_number(self.value), "unit": self.unit}
        if self.spread is not None:
            doc["spread"] = self.spread
        if self.upto is not None:
            doc["upto"] = json_number(self.upto)
        if self.interval is not None:
            doc["interval"] = [json_number(x) for x in self.interval]
        return doc

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Value:
        def num(x: Any) -> float:  # JSON has no NaN: a missing end was not finite
            return math.nan if x is None else float(x)

        iv = doc.get("interval")
        return Value(
            None if doc.get("value") is None else float(doc["value"]),
            str(doc.get("unit", "")),
            None if doc.get("spread") is None else float(doc["spread"]),
            None if doc.get("upto") is None else float(doc["upto"]),
            None if iv is None else (num(iv[0]), num(iv[1])),
        )


#: A table cell: text (a name, a status), or a number with its unit.
Cell = str | Value


def cell_json(c: Cell) -> str | dict[str, Any]:
    """A cell in JSON: its text, or its number with its unit (``Value.to_json``)."""
    return c if isinstance(c, str) else c.to_json()


@dataclass(frozen=True)
class Table:
    """Headers and cells (text, or numbers with units that the renderer formats); the first
    ``left`` columns are left-aligned (names), the rest right-aligned (numbers).
    ``headless`` tables print without their header line. ``fit_width``, when set, is the
    widest the text may be: where the names in the first column (a recipe's labels) make it
    wider, the text shows them as A, B, … with a legend under the table (Markdown and JSON
    keep the names)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    left: int = 1
    headless: bool = False
    fit_width: int | None = None

    @staticmethod
    def of(
        headers: Sequence[str],
        rows: Sequence[Sequence[Cell]],
        *,
        left: int = 1,
        headless: bool = False,
        fit_width: int | None = None,
    ) -> Table:
        return Table(tuple(headers), tuple(tuple(r) for r in rows), left, headless, fit_width)


#: Exit codes of the commands that measure (`run`, `limits`, `fleet run`), and `gate`'s own.
EXIT_OK = 0
#: some point failed (its workload or bed: fio's "No space left on device") or was
#: interrupted, or a fleet host did not complete: the report says which
EXIT_POINTS_FAILED = 1
#: bad input, refused before anything ran (every UserError)
EXIT_BAD_INPUT = 2
#: the store could not keep a run: the job stopped, the run waits in the spool
EXIT_STORE_FAILED = 4


@dataclass(frozen=True)
class Outcome:
    """How many of a job's runs were measured, failed and interrupted (the JSON report's
    ``data.outcome``), and the exit code that says it to CI."""

    measured: int
    failed: int
    interrupted: int

    @classmethod
    def of(cls, runs: Sequence[Run]) -> Outcome:
        """The runs' statuses counted: measured (``MEASURED_STATUSES``), failed, interrupted."""
        return cls(
            sum(r.status in MEASURED_STATUSES for r in runs),
            sum(r.status == "failed" for r in runs),
            sum(r.status == "interrupted" for r in runs),
        )

    @property
    def exit_code(self) -> int:
        return EXIT_POINTS_FAILED if self.failed or self.interrupted else EXIT_OK

    def to_json(self) -> dict[str, int]:
        return {
            "measured": self.measured,
            "failed": self.failed,
            "interrupted": self.interrupted,
            "exit_code": self.exit_code,
        }

    def sentence(self) -> str | None:
        """``2 of 6 runs did not measure (1 failed, 1 interrupted): exit code 1``, or None
        when every run measured."""
        bad = self.failed + self.interrupted
        if not bad:
            return None
        parts = [f"{self.failed} failed"] if self.failed else []
        parts += [f"{self.interrupted} interrupted"] if self.interrupted else []
        total = self.measured + bad
        runs = f"run{'s' if total != 1 else ''}"
        return f"{bad} of {total} {runs} did not measure ({', '.join(parts)}): exit code {self.exit_code}"


def outcome_of(report: Report) -> Outcome | None:
    """The outcome a report carries (``data.outcome``), None for one stored before it did."""
    o = report.data.get("outcome")
    if not isinstance(o, Mapping):
        return None
    return Outcome(int(o.get("measured", 0)), int(o.get("failed", 0)), int(o.get("interrupted", 0)))


@dataclass(frozen=True)
class Section:
    """A titled part of a report: a table, sentences (bullets), or both."""

    title: str = ""
    table: Table | None = None
    bullets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    """A measurement's report. ``head`` lines follow the title (what ran, where); ``notes``
    say how it was measured and what was scaled; ``why`` holds the explain items of
    ``analysis.explain.run``; ``tail`` the run ids and first failures; ``data`` the JSON-only details
    (limits' ceilings, the plan's table as numbers, repeat decisions)."""

    kind: Kind
    name: str
    title: str
    head: tuple[str, ...] = ()
    sections: tuple[Section, ...] = ()
    notes: tuple[str, ...] = ()
    notes_title: str = "notes"
    why: tuple[Mapping[str, Any], ...] = ()
    tail: tuple[str, ...] = ()
    label: str = ""
    batch: str = ""
    run_ids: tuple[int, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)
    #: the labels compared (base first) and the run ids of each, stored with the report
    compare_sides: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: the compare of those sides; not stored (recomputed from the runs on reprint)
    compare: CompareResult | None = None

    def with_compare(self, cmp: CompareResult | None) -> Report:
        return replace(self, compare=cmp)

    def to_json(self) -> dict[str, Any]:
        """Everything but ``compare`` (which is recomputed from ``compare_sides``)."""
        return {
            "report_version": REPORT_VERSION,
            "kind": self.kind,
            "name": self.name,
            "title": self.title,
            "head": list(self.head),
            "sections": [
                {
                    "title": s.title,
                    "bullets": list(s.bullets),
                    "table": None
                    if s.table is None
                    else {
                        "headers": list(s.table.headers),
                        "rows": [[cell_json(c) for c in r] for r in s.table.rows],
                        "left": s.table.left,
                        "headless": s.table.headless,
                        "fit_width": s.table.fit_width,
                    },
                }
                for s in self.sections
            ],
            "notes": list(self.notes),
            "notes_title": self.notes_title,
            "why": [dict(w) for w in self.why],
            "tail": list(self.tail),
            "label": self.label,
            "batch": self.batch,
            "run_ids": list(self.run_ids),
            "data": dict(self.data),
            "compare_sides": [[lab, list(ids)] for lab, ids in self.compare_sides],
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Report:
        """The inverse of ``to_json``; a ValueError for a newer or malformed document."""
        v = int(doc.get("report_version", 0))
        if v > REPORT_VERSION or v < 1:
            raise ValueError(f"report version {v}: this iowall reads version {REPORT_VERSION}")
        sections = []
        for s in doc.get("sections", []):
            t = s.get("table")
            table = (
                None
                if t is None
                else Table.of(
                    t["headers"],
                    [
                        [Value.from_json(c) if isinstance(c, Mapping) else str(c) for c in r]
                        for r in t["rows"]
                    ],
                    left=int(t["left"]),
                    headless=bool(t.get("headless")),
                    fit_width=None if t.get("fit_width") is None else int(t["fit_width"]),
                )
            )
            sections.append(Section(str(s.get("title", "")), table, tuple(s.get("bullets", []))))
        return Report(
            kind=doc["kind"],
            name=str(doc["name"]),
            title=str(doc["title"]),
            head=tuple(doc.get("head", [])),
            sections=tuple(sections),
            notes=tuple(doc.get("notes", [])),
            notes_title=str(doc.get("notes_title", "notes")),
            why=tuple(doc.get("why", [])),
            tail=tuple(doc.get("tail", [])),
            label=str(doc.get("label", "")),
            batch=str(doc.get("batch", "")),
            run_ids=tuple(int(i) for i in doc.get("run_ids", [])),
            data=dict(doc.get("data", {})),
            compare_sides=tuple(
                (str(lab), tuple(int(i) for i in ids)) for lab, ids in doc.get("compare_sides", [])
            ),
        )


IMPORTED, FAILED = "imported", "failed"


@dataclass(frozen=True)
class HostState:
    """Where one inventory host of a fleet run stands: imported (with its runs and the host
    names they carry) or failed (with the error)."""

    host: str
    status: str
    runs: int = 0
    hostnames: tuple[str, ...] = ()
    error: str = ""
    #: runs of the host's job that failed or were interrupted (imported all the same)
    failed_runs: int = 0
