"""What every backend can hold: a row is checked against its table's columns before it is
inserted, so that a run SQLite would keep but PostgreSQL refuses (text longer than its
VARCHAR, a NUL character, an integer past 32 bits) is refused the same way on both."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..vocab.errors import UserError

#: PostgreSQL's INTEGER, which the schema's Integer columns are there.
INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Columns:
    """What each column of a table can hold: its text length limit (None: any) and whether it
    is a 32-bit integer. Plain data rather than the SQLAlchemy table, so that checking a
    bundle's runs on the import's workers needs no SQLAlchemy (0.15 s of every import's
    start); tests/unit/test_row_checks.py holds each equal to store/schema.py's table."""

    name: str
    limits: Mapping[str, tuple[int | None, bool]]


def _text(length: int | None = None) -> tuple[int | None, bool]:
    return (length, False)


_INT = (None, True)
_OTHER = (None, False)  # a float or bytes: nothing to check

RUNS = Columns(
    "runs",
    {
        "id": _INT,
        "uuid": _text(36),
        "batch": _text(36),
        "recipe": _text(64),
        "label": _text(128),
        "status": _text(16),
        "point_key": _text(),
        "point_json": _text(),
        "fingerprint": _text(32),
        "repeat_index": _INT,
        "started_at": _OTHER,
        "finished_at": _OTHER,
        "host": _text(255),
        "kernel": _text(255),
        "env_json": _text(),
        "bed_json": _text(),
        "error": _text(),
        "notes_json": _text(),
        "env_ref": _text(32),
        "bed_ref": _text(32),
    },
)

ARTIFACTS = Columns(
    "artifacts",
    {
        "run_id": _INT,
        "name": _text(128),
        "content_type": _text(64),
        "body": _text(),
        "encoding": _text(16),
        "data": _OTHER,
    },
)

#: The names a series carries, as the store has always limited them (the ``series`` table of
#: 0001/0002; since 0003 a run's series are one compressed row, its names inside it).
SERIES = Columns("series", {"probe": _text(64), "name": _text(128), "unit": _text(32)})

#: The metrics table's columns before 0003 split it in two (metric_kinds holds them now).
METRICS = Columns("metrics", {"name": _text(128), "unit": _text(32), "direction": _text(8)})


def check_row(table: Columns, row: Mapping[str, Any], what: str) -> None:
    """UserError naming ``what`` (e.g. ``run <uuid>``) and the column when a value of ``row``
    does not fit ``table`` on every backend the store supports."""
    limits = table.limits
    for name, value in row.items():
        length, integer = limits[name]
        if isinstance(value, str):
            if "\x00" in value or (length is not None and len(value) > length):
                _refuse(f"{what}: {table.name}.{name}", value, length)
        elif integer and isinstance(value, int) and not INT32[0] <= value <= INT32[1]:
            raise UserError(f"{what}: {table.name}.{name} is {value}, past the store's 32-bit integers")


def _refuse(where: str, value: str, length: int | None) -> None:
    if "\x00" in value:
        raise UserError(f"{where} holds a NUL character, which PostgreSQL cannot store")
    raise UserError(
        f"{where} is {len(value)} characters long; the store keeps at most {length} ({value[:40]!r}…)"
    )


def check_series(probe: str, name: str, unit: str, what: str) -> None:
    """UserError when a series' probe, name or unit does not fit (check_row's rules)."""
    check_row(SERIES, {"probe": probe, "name": name, "unit": unit}, what)


def check_parts(
    what: str,
    names: Sequence[str],
    kinds: Iterable[tuple[str, str, str]],
    artifacts: Iterable[tuple[str, str, str]],
    series: Iterable[tuple[str, str, str]],
    seen: set[tuple[str, ...]],
) -> None:
    """UserError naming ``what`` when a run's parts cannot be stored, the last step of packing
    any run (its ``runs`` row was checked as it was made, ``store.packing.run_row``): its
    metric ``names`` repeat (a packed run's were looked at as its metrics were read back:
    none given), or a metric kind (name, unit, direction), an artifact (name, content type,
    body) or a series' names (probe, name, unit) do not fit (``check_row``). A kind, an
    artifact's names and a series' names are checked once for all the runs that share
    ``seen`` (a batch shares a few hundred), an artifact's body every time."""
    if len(set(names)) != len(names):
        dup = next(n for i, n in enumerate(names) if n in names[:i])
        raise UserError(f"{what}: metric {dup!r} appears twice")
    for kind in kinds:
        if ("metric", *kind) not in seen:
            check_row(METRICS, dict(zip(("name", "unit", "direction"), kind, strict=True)), what)
            seen.add(("metric", *kind))
    for name, content_type, body in artifacts:
        if ("artifact", name, content_type) not in seen:
            check_row(ARTIFACTS, {"name": name, "content_type": content_type}, what)
            seen.add(("artifact", name, content_type))
        if body:
            check_row(ARTIFACTS, {"body": body}, what)
    for probe, name, unit in series:
        if ("series", probe, name, unit) not in seen:
            check_series(probe, name, unit, what)
            seen.add(("series", probe, name, unit))
