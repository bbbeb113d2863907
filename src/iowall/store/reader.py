"""The store's reads: SQL text with ``:name`` parameters, written once and run on the DB-API
connection of either backend: a SQLite file through the standard library's ``sqlite3``,
PostgreSQL through psycopg, neither through SQLAlchemy (whose import, 0.15-0.25 s, was most
of what ``iowall runs`` and ``iowall show`` cost). Writes and migrations stay SQLAlchemy Core
and Alembic (``store.write``); a process that has made the engine reads from its pool."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

#: ``:name`` parameters, as psycopg spells them (``%(name)s``); ``::`` casts are left alone.
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Reader:
    """Read queries on one open DB-API connection of a ``dialect`` (``sqlite`` or
    ``postgresql``)."""

    def __init__(self, dbapi: Any, dialect: str) -> None:
        self.dbapi = dbapi
        self.dialect = dialect

    def _cursor(self, sql: str, params: Mapping[str, Any] | None) -> Any:
        if self.dialect == "postgresql":
            sql = _NAMED.sub(r"%(\1)s", sql)
        cur = self.dbapi.cursor()
        cur.execute(sql, dict(params or {}))
        return cur

    def all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Every row of ``sql``, as tuples."""
        cur = self._cursor(sql, params)
        try:
            return [tuple(r) for r in cur.fetchall()]
        finally:
            cur.close()

    def maps(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every row of ``sql``, as dicts by column name."""
        cur = self._cursor(sql, params)
        try:
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        finally:
            cur.close()

    def where_in(self, column: str, name: str, values: Iterable[Any], params: dict[str, Any]) -> str:
        """``column IN (…)`` of ``values`` (``in_list``); on PostgreSQL ``column = ANY(:name)``
        of one array: psycopg parses a statement's placeholders in Python, and a list of 500
        is too long for its cache of parsed statements."""
        if self.dialect == "postgresql":
            params[name] = list(values)
            return f"{column} = ANY(:{name})"
        return f"{column} IN " + in_list(name, values, params)

    def scalar(self, sql: str, params: Mapping[str, Any] | None = None) -> Any:
        """The first column of the first row of ``sql`` (None when there is no row)."""
        rows = self.all(sql, params)
        return rows[0][0] if rows else None


def in_list(name: str, values: Iterable[Any], params: dict[str, Any]) -> str:
    """``(:name_0, :name_1, …)`` for ``values``, the values added to ``params``; ``(NULL)``
    (which matches nothing) for no values."""
    keys = []
    for i, v in enumerate(values):
        params[f"{name}_{i}"] = v
        keys.append(f":{name}_{i}")
    return f"({', '.join(keys)})" if keys else "(NULL)"


def sqlite_file(url: str) -> str | None:
    """The file a ``sqlite:///`` URL names; None for anything else (PostgreSQL, a database in
    memory, a URL with options), which is read through the store's engine instead."""
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    path = url.removeprefix("sqlite:///")
    return None if path in ("", ":memory:") else path


def connect_pg(url: str) -> Any:
    """A psycopg connection to read a PostgreSQL store (libpq reads the store's URL as it
    is; 10 s to connect, as the engine allows), in autocommit: a read holds no transaction."""
    import psycopg  # only for a PostgreSQL store

    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql://" + url[len(prefix) :]
    return psycopg.connect(url, connect_timeout=10, autocommit=True)


def connect_sqlite(path: str) -> sqlite3.Connection:
    """A connection to read a SQLite store: waits up to 30 s for a writer (as the engine's
    busy timeout does); nothing begins a transaction for a SELECT."""
    return sqlite3.connect(path, timeout=30)
