"""Pure: the slowdowns (and speed-ups) a history has had and come back from, so that the gate
can say a fall the series has shown before is not yet a regression.

A lab's history holds episodes the same kernel shows again: a clocksource that falls back to
HPET until a cold boot, a drive's patrol scan, heat, a neighbour for a few nights. A fall of
two or three results at a depth such an episode reached is, from the results alone, that
episode again or a regression; the early test, whose noise model reads single results and
their lag correlation, calls it a regression. Here the history is read as windows, the way
the early test reads the newest results (``early._moved``): each result's deviation from the
level around it (``deviations``), and of the history's windows of k results, those as far out
as the newest window's that the series came back from (``shown``). The gate turns a
regression into "inconclusive" when the history shows one (``series_gate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .predictive import FAR_OUT, shamos

FloatArray = npt.NDArray[np.float64]

#: A segment between change points is an episode the series came back from when the levels
#: either side of it are nearer each other than this share of its own distance from them.
RETURN = 0.5
#: Episodes longer than this many results are levels of their own, not episodes.
LONGEST = 24
#: A window of the history is as far out as the newest when it is within this many noise
#: scales of it (1.96 x sqrt 2: the 95% band of the difference of two results), so that an
#: episode of the same depth counts whichever of the two the noise made deeper.
SAME_DEPTH = 2.77


def deviations(
    logs: FloatArray, changes: Sequence[int], end: int, *, least: int, most: int, back: bool = True
) -> FloatArray:
    """Each result's deviation before ``end`` from the level around it, in time order (the
    newest ``most``): its own segment's median (segments between ``changes``, of at least
    ``least`` results), except, with ``back``, in an episode (a segment of at most ``LONGEST``
    results, of any length, with segments of at least ``least`` either side whose medians are
    nearer each other than ``RETURN`` of its distance from them), measured from the level it
    left and came back to. Without ``back``: the early test's noise, segments of their own."""
    bounds = sorted({0, end, *(c for c in changes if 0 < c < end)})
    segs = list(zip(bounds, bounds[1:], strict=False))
    meds = [float(np.median(logs[a:z])) for a, z in segs]
    parts = []
    for i, (a, z) in enumerate(segs):
        around = _around(meds, segs, i, least) if back else None
        if around is not None:
            parts.append(logs[a:z] - around)
        elif z - a >= least:
            parts.append(logs[a:z] - meds[i])
    return np.concatenate(parts)[-most:] if parts else np.zeros(0)


def _around(meds: Sequence[float], segs: Sequence[tuple[int, int]], i: int, least: int) -> float | None:
    """The level segment ``i`` left and came back to, when it is an episode (``deviations``):
    its neighbours the nearest segments of at least ``least`` results either side."""
    if segs[i][1] - segs[i][0] > LONGEST:
        return None
    long = [j for j, (a, z) in enumerate(segs) if z - a >= least]
    left, right = [j for j in long if j < i], [j for j in long if j > i]
    if not left or not right:
        return None
    before, here, after = meds[left[-1]], meds[i], meds[right[0]]
    if abs(before - after) >= RETURN * min(abs(here - before), abs(here - after)):
        return None
    return (before + after) / 2.0


def _stats(r: FloatArray, k: int, fall: bool) -> FloatArray:
    """Each window of ``k`` consecutive values of ``r`` read as the early test reads the newest:
    the value itself; the nearer of two; the nearer of the newest and the three's median."""
    if k == 1:
        return r
    w = np.lib.stride_tricks.sliding_window_view(r, k)
    pick = np.max if fall else np.min
    if k == 2:
        return np.asarray(pick(w, axis=1))
    return np.asarray(pick(np.stack((w[:, -1], np.median(w, axis=1))), axis=0))


@dataclass(frozen=True)
class Shown:
    """How often the history showed a window as far out: ``count`` of its ``windows`` windows
    of ``k`` results, each followed by a result that was not (the series came back), in
    ``episodes`` runs of neighbouring windows."""

    count: int
    windows: int
    k: int
    episodes: int = 0


def shown(r: FloatArray, d: float, k: int, fall: bool) -> Shown:
    """Of the windows of ``k`` results of deviations ``r`` (time order), those whose statistic
    is as far out as ``d`` (below it for a ``fall``, within ``SAME_DEPTH`` noise scales, by
    Shamos' estimator) and beyond ``FAR_OUT`` of them (a move the noise does not make: two
    results in a row at two scales are the noise's, now and then), and that some later result
    was not: an episode still going at the end of ``r`` is the newest results' own, not one
    the series came back from."""
    if r.size < k:
        return Shown(0, 0, k)
    s, scale = _stats(r, k, fall), shamos(r)
    if fall:  # as deep as the newest within the noise, and beyond what the noise makes
        edge = min(d + SAME_DEPTH * scale, -FAR_OUT * scale)
    else:
        edge = max(d - SAME_DEPTH * scale, FAR_OUT * scale)
    far = s <= edge if fall else s >= edge
    back = np.flatnonzero(r > edge if fall else r < edge)
    if not back.size:
        return Shown(0, int(s.size), k)
    ends = np.arange(s.size) + k - 1  # each window's last result
    hit = far & (ends < back[-1])
    starts = int(np.count_nonzero(hit[1:] & ~hit[:-1])) + int(hit[0])
    return Shown(int(np.count_nonzero(hit)), int(s.size), k, starts)
