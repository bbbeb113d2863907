"""The column limits a bundle's runs are checked against (store/row_checks.py, plain data so
that the import's workers need no SQLAlchemy) are the store's own (store/schema.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import Integer, String, Table

from iowall.store import schema
from iowall.store.row_checks import ARTIFACTS, RUNS, Columns, check_row
from iowall.vocab.errors import UserError


def _of(table: Table) -> Columns:
    """What the SQLAlchemy table says each column can hold, as row_checks says it."""
    return Columns(
        table.name,
        {
            c.name: (c.type.length if isinstance(c.type, String) else None, isinstance(c.type, Integer))
            for c in table.columns
        },
    )


@pytest.mark.parametrize(("kept", "table"), [(RUNS, schema.runs), (ARTIFACTS, schema.artifacts)])
def test_limits_are_the_schemas(kept: Columns, table: Table) -> None:
    assert kept == _of(table)


def test_a_row_past_a_limit_is_refused_by_name() -> None:
    check_row(RUNS, {"label": "x" * 128, "repeat_index": 2**31 - 1}, "run u")
    with pytest.raises(
        UserError, match=r"^run u: runs\.label is 129 characters long; the store keeps at most 128"
    ):
        check_row(RUNS, {"label": "x" * 129}, "run u")
    with pytest.raises(UserError, match=r"^run u: runs\.repeat_index is 2147483648, past the store's 32-bit"):
        check_row(RUNS, {"repeat_index": 2**31}, "run u")
    with pytest.raises(UserError, match=r"^run u: artifacts\.body holds a NUL character"):
        check_row(ARTIFACTS, {"body": "a\x00b"}, "run u")
