"""Another system's series (``series,index,value`` rows in a CSV or JSON file) as `history
--series` and `gate --series` read them, and the options that go with them."""

from __future__ import annotations

import csv
import io
import json

from ..analysis.regress.history import SeriesRow
from ..vocab.errors import UserError

DIRECTIONS = ("higher", "lower")


def _row(path: str, i: int, r: object) -> SeriesRow:
    """One row of the file, or a UserError naming it."""
    try:
        if not isinstance(r, dict):
            raise ValueError
        index = str(r["index"]).strip()
        row = SeriesRow(
            str(r["series"]),
            index,
            float(str(r["value"])),
            str(r.get("direction") or "").strip(),
            str(r.get("unit") or "").strip(),
        )
    except (KeyError, ValueError):
        raise UserError(f"--series {path}: row {i} is not series,index,value: {r!r}") from None
    if not index:
        raise UserError(f"--series {path}: row {i} has an empty index")
    if row.direction and row.direction not in DIRECTIONS:
        raise UserError(f"--series {path}: row {i}: direction {row.direction!r} is not higher or lower")
    return row


def read_series(path: str) -> list[SeriesRow]:
    """``series,index,value`` rows (and optionally ``direction``, ``unit``) from a CSV file
    with that header or a JSON list of objects with those keys; the index is kept as written
    (a number, a date, a commit id or a build name); a UserError naming the row for anything
    else."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise UserError(f"--series {path}: {e.strerror}") from None
    rows: list[object]
    if text.lstrip().startswith(("[", "{")):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(f"--series {path}: not JSON ({e.msg} at line {e.lineno})") from None
        rows = doc if isinstance(doc, list) else doc.get("rows", []) if isinstance(doc, dict) else []
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
    out = [_row(path, i, r) for i, r in enumerate(rows, 1)]
    if not out:
        raise UserError(f"--series {path}: no rows (expected series,index,value)")
    return out


def check_series_options(direction: str, alpha: float | None) -> None:
    """``--direction`` and ``--alpha`` as the analysis takes them, or a UserError."""
    if direction not in DIRECTIONS:
        raise UserError(f"--direction {direction}: use higher or lower (which is better)")
    if alpha is not None and not 0.0 < alpha < 1.0:
        raise UserError(f"--alpha {alpha:g}: give a level between 0 and 1, e.g. 0.001")
