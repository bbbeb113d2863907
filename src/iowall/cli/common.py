"""What several commands share: output formats, the store option, the progress bar."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..errors import UserError
from ..runner import Progress as ProgressProtocol
from ..store import Store

FORMATS = ("text", "md", "json")


def check_format(fmt: str, allowed: tuple[str, ...] = FORMATS) -> str:
    """A UserError for an unknown --format."""
    if fmt not in allowed:
        raise UserError(f"--format {fmt!r}: use one of {', '.join(allowed)}")
    return fmt


def open_store(db: str | None) -> Store:
    """The store named by --db, IOWALL_DB or the default SQLite file."""
    return Store(db)


def print_json(doc: Any) -> None:
    """JSON on stdout, stable key order."""
    json.dump(doc, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


class RichProgress(ProgressProtocol):
    """A progress bar with ETA on stderr; silent when stderr is not a terminal."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._p = Progress(TextColumn("{task.description}"), BarColumn(),
                           TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
                           TextColumn("eta"), TimeRemainingColumn(), transient=True,
                           redirect_stdout=False, redirect_stderr=False,
                           disable=not sys.stderr.isatty())
        self._task: Any = None

    def begin(self, total: float) -> None:
        self._p.start()
        self._task = self._p.add_task(self.title, total=total)

    def step(self, description: str) -> None:
        self._p.update(self._task, description=f"{self.title}: {description}")
        if not sys.stderr.isatty():
            print(f"iowall: {self.title}: {description}", file=sys.stderr, flush=True)

    def advance(self, amount: float) -> None:
        self._p.advance(self._task, amount)

    def end(self) -> None:
        self._p.stop()
