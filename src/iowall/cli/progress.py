"""The progress bar every long command shows: a rich bar with ETA on a terminal, one line per
step otherwise (logs, CI)."""

from __future__ import annotations

import sys
from typing import Any

from ..progress import Progress as ProgressProtocol


class RichProgress(ProgressProtocol):
    """A progress bar with ETA on stderr; silent when stderr is not a terminal."""

    def __init__(self, title: str) -> None:
        # rich (30 ms) only once a bar is made: `import` of a small bundle shows none
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.title = title
        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
            disable=not sys.stderr.isatty(),
        )
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
