"""fio's bandwidth logs as series a person can read: logged finely, jobs summed, resampled to
at least 20 points a run (at most 100 ms apart), zeros where no I/O completed (the
``end_fsync`` tail, the gaps between stonewalled groups) up to the run's end."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model import Series

DIRECTIONS = ("read", "write", "trim")
#: The coarsest step of a resampled series, ms, and the fewest points a run should get.
MAX_STEP_MS = 100
MIN_POINTS = 20


def series_step_ms(span_ms: float, log_ms: float) -> float:
    """The resampled series' step: ``min(MAX_STEP_MS, span / MIN_POINTS)`` rounded down to a
    whole number of log windows, and never below one window."""
    if log_ms <= 0:
        return log_ms
    want = min(float(MAX_STEP_MS), span_ms / MIN_POINTS)
    return max(1, math.floor(want / log_ms)) * log_ms


def _rows(logs: Sequence[str]) -> list[tuple[int, float, int, float]]:
    """``(job, t_ms, direction, KiB/s)`` of every well-formed log line."""
    rows = []
    for job, text in enumerate(logs):
        for line in text.splitlines():
            parts = line.split(",")
            if len(parts) < 3:
                continue
            try:
                t, v, d = float(parts[0]), float(parts[1]), int(parts[2])
            except ValueError:
                continue
            if 0 <= d < len(DIRECTIONS):
                rows.append((job, t, d, v))
    return rows


def _fine(
    rows: Sequence[tuple[int, float, int, float]], base: float, interval_ms: float
) -> dict[int, dict[int, float]]:
    """Per direction, window index → B/s summed over jobs on a grid of ``interval_ms`` from
    ``base`` (a job's samples in one window averaged); a last window fewer jobs logged than
    the one before is dropped (fio logs the window a job ends in for some jobs only)."""
    per_job: dict[tuple[int, int, int], list[float]] = {}
    for job, t, d, v in rows:
        k = math.floor((t - base) / interval_ms + 0.5)
        per_job.setdefault((d, k, job), []).append(v)
    total: dict[int, dict[int, float]] = {}
    jobs: dict[tuple[int, int], int] = {}
    for (d, k, _job), vals in per_job.items():
        total.setdefault(d, {})[k] = total.get(d, {}).get(k, 0.0) + sum(vals) / len(vals) * 1024
        jobs[(d, k)] = jobs.get((d, k), 0) + 1
    for d, pts in total.items():
        ks = sorted(pts)
        if len(ks) >= 2 and jobs[(d, ks[-1])] < jobs[(d, ks[-2])]:
            del pts[ks[-1]]
    return total


def bw_series(
    logs: Sequence[str],
    *,
    interval_ms: float,
    origin_ms: float,
    step_ms: float | None = None,
    end_ms: float | None = None,
) -> tuple[Series, ...]:
    """Series ``read_bw``/``write_bw``/``trim_bw`` (B/s) from fio bandwidth logs, one text per job.

    A log line is ``time_ms, KiB/s, direction (0 read, 1 write, 2 trim), bs, offset[, prio]``,
    each an average over the ``interval_ms`` window that ends at ``time_ms`` (fio stamps a
    window at its end). Samples go to the nearest window of a grid anchored one interval
    before the first sample, so jobs that started a few ms apart share windows; a job's
    samples in one window are averaged, the jobs summed. The fine windows are then averaged
    into steps of ``step_ms`` (default: one window), every step from a direction's first to
    its last window present, a window fio did not log counting as zero (fio logs nothing for
    a window in which no I/O completed); a last step only partly covered is averaged over the
    part covered. With ``end_ms`` (the run's end) zero steps follow up to the step holding it,
    leaving one window after the last one logged (fio may not log the window a job ends in):
    no I/O completed there (an ``end_fsync`` running, another direction's group). Times are seconds from
    ``origin_ms`` (same clock as the log: fio's ``log_unix_epoch``), at the step's end.
    """
    rows = _rows(logs)
    if not rows or interval_ms <= 0:
        return ()
    base = min(r[1] for r in rows) - interval_ms
    m = max(1, round((step_ms or interval_ms) / interval_ms))
    step = m * interval_ms
    fine = _fine(rows, base, interval_ms)
    out = []
    for d, name in enumerate(DIRECTIONS):
        pts = fine.get(d)
        if not pts:
            continue
        first, last = (min(pts) - 1) // m, (max(pts) - 1) // m
        samples = []
        for c in range(first, last + 1):
            ks = range(c * m + 1, (c + 1) * m + 1)
            covered = m if c < last else max(pts) - c * m
            samples.append(
                (base + (c * m + covered) * interval_ms, sum(pts.get(k, 0.0) for k in ks) / covered)
            )
        if end_ms is not None:
            t = samples[-1][0]
            while t + step <= end_ms + step / 2 - interval_ms:  # fio may not log the last window
                t += step
                samples.append((t, 0.0))
        out.append(
            Series(
                "fio", f"{name}_bw", "B/s", tuple((round((t - origin_ms) / 1000.0, 3), v) for t, v in samples)
            )
        )
    return tuple(out)
