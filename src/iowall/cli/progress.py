"""The progress bar every long command shows: a rich bar with ETA on a terminal, one line per
step otherwise (logs, CI), with the share done, the time so far and the time left."""

from __future__ import annotations

import sys
import time
from typing import Any

from ..vocab.progress import Progress as ProgressProtocol


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
        self._t0 = 0.0
        self._total = 0.0
        self._done = 0.0

    def begin(self, total: float) -> None:
        self._p.start()
        self._task = self._p.add_task(self.title, total=total)
        self._t0, self._total, self._done = time.monotonic(), total, 0.0

    def step(self, description: str) -> None:
        self._p.update(self._task, description=f"{self.title}: {description}")
        if not sys.stderr.isatty():
            where = where_we_are(self._done, self._total, time.monotonic() - self._t0)
            print(f"iowall: {self.title}: {description}{where}", file=sys.stderr, flush=True)

    def advance(self, amount: float) -> None:
        self._p.advance(self._task, amount)
        self._done += amount

    def end(self) -> None:
        self._p.stop()


def where_we_are(done: float, total: float, elapsed_s: float) -> str:
    """`` — 12% done, 1 min 40 s in, about 12 min left`` for a step line: the time left is the
    time so far scaled by the share still to do (each task weighed by its expected share), said
    only once there is something to scale (5% done and 10 s in); nothing without a total."""
    if total <= 0:
        return ""
    share = min(1.0, max(0.0, done / total))
    out = f" — {share:.0%} done, {_duration(elapsed_s)} in"
    if share >= 0.05 and elapsed_s >= 10:
        out += f", about {_duration(elapsed_s * (1 - share) / share)} left"
    return out


def _duration(s: float) -> str:
    """``40 s``, ``3 min 10 s``, ``14 min`` (whole minutes past ten), ``1 h 05 min``."""
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f} s"
    if s < 600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
