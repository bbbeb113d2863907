"""Persistence of runs (SQLite or PostgreSQL)."""

from .db import Store
from .rows import RunFilter

__all__ = ["RunFilter", "Store"]
