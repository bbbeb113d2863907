"""Persistence of runs (SQLite or PostgreSQL)."""

from .db import RunFilter, Store

__all__ = ["RunFilter", "Store"]
