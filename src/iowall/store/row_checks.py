"""What every backend can hold: a row is checked against its table's columns before it is
inserted, so that a run SQLite would keep but PostgreSQL refuses (text longer than its
VARCHAR, a NUL character, an integer past 32 bits) is refused the same way on both."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Column, Integer, MetaData, String, Table

from ..errors import UserError

#: PostgreSQL's INTEGER, which the schema's Integer columns are there.
INT32 = (-(2**31), 2**31 - 1)


def check_row(table: Table, row: Mapping[str, Any], what: str) -> None:
    """UserError naming ``what`` (e.g. ``run <uuid>``) and the column when a value of ``row``
    does not fit ``table`` on every backend the store supports."""
    limits = _limits(table)
    for name, value in row.items():
        length, integer = limits[name]
        if isinstance(value, str):
            if "\x00" in value or (length is not None and len(value) > length):
                _refuse(f"{what}: {table.name}.{name}", value, length)
        elif integer and isinstance(value, int) and not INT32[0] <= value <= INT32[1]:
            raise UserError(f"{what}: {table.name}.{name} is {value}, past the store's 32-bit integers")


@functools.cache
def _limits(table: Table) -> dict[str, tuple[int | None, bool]]:
    """Each column's length limit (text) and whether it holds 32-bit integers."""
    return {
        c.name: (c.type.length if isinstance(c.type, String) else None, isinstance(c.type, Integer))
        for c in table.columns
    }


def _refuse(where: str, value: str, length: int | None) -> None:
    if "\x00" in value:
        raise UserError(f"{where} holds a NUL character, which PostgreSQL cannot store")
    raise UserError(
        f"{where} is {len(value)} characters long; the store keeps at most {length} ({value[:40]!r}…)"
    )


#: The names a series carries, as the store has always limited them (the ``series`` table of
#: 0001/0002; since 0003 a run's series are one compressed row, its names inside it).
SERIES = Table(
    "series", MetaData(), Column("probe", String(64)), Column("name", String(128)), Column("unit", String(32))
)


#: The metrics table's columns before 0003 split it in two (metric_kinds holds them now).
METRICS = Table(
    "metrics",
    MetaData(),
    Column("name", String(128)),
    Column("unit", String(32)),
    Column("direction", String(8)),
)


def check_series(probe: str, name: str, unit: str, what: str) -> None:
    """UserError when a series' probe, name or unit does not fit (check_row's rules)."""
    check_row(SERIES, {"probe": probe, "name": name, "unit": unit}, what)
