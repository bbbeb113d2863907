"""Pure: a moving level under a series' noise, so that a level that wanders is not read as steps.

The model, on log values: y = steps + level + white noise, the level an AR(1) process (phi
< 1: it wanders and pulls back, a host's cycle, correlated runs) or a random walk (phi = 1:
a local-level state-space model), its innovations r times the white noise's variance. phi
and r are fitted by maximum likelihood on a grid (``PHIS`` x ``RATIOS``, the steps' sizes
and the white variance profiled out by generalised least squares); one eigendecomposition of
the level's covariance per length and phi serves every r. Before fitting, a result far from
its neighbours (beyond ``CLIP`` robust SDs of a running median) is pulled in to that bound: a
dropout or a stall is one result, not a move of the level, and the Gaussian likelihood would
otherwise read it as one.

- ``wanders``: whether such a level is beyond chance with the given steps in (likelihood
  ratio of the fitted level against none: a 50:50 mixture of chi2 with 1 and 2 df, the
  boundary case of a variance at zero).
- ``beyond_wander``: the change points a moving level does not explain. While the level
  wanders beyond chance (at ``WANDER_P``), each change point is kept when a step there
  beats the moving level fitted without it (likelihood ratio, chi2 with 1 df, Bonferroni
  over the cuts allowed between its neighbours, at ``STEP_P``); the weakest failing one is
  dropped and the rest tested again.
- ``recent_window``: how many of the newest results the level of now is read from: the span
  of the steady-state Kalman filter of a random-walk level with the fitted r (2/K - 1 for a
  gain K), or None when the level does not wander beyond chance.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: AR(1) coefficients of the level tried (1: a random walk).
PHIS = (0.5, 0.7, 0.85, 0.93, 1.0)
#: Ratios of the level's innovation variance to the white noise's tried.
RATIOS = tuple(float(v) for v in np.geomspace(0.002, 4.0, 24))
_RATIOS = np.asarray(RATIOS)
#: Level at which the moving level counts as beyond chance (a screen: the step test decides).
WANDER_P = 0.2
#: Level of each step's test against the moving level, after Bonferroni over its cuts.
STEP_P = 0.05
#: A result further than this many robust SDs from the running median is pulled in to it.
CLIP = 3.0
#: Width of that running median.
WIDTH = 9
#: Fewest results for the model; most (the eigendecomposition grows as the cube).
MIN_RUNS = 12
MAX_RUNS = 600


@dataclass(frozen=True)
class Level:
    """The fitted moving level: phi, r (0: none) and the p-value of no moving level."""

    phi: float
    ratio: float
    p_value: float


#: Bytes of eigendecompositions kept (least recently used dropped first). By bytes, not
#: entries: a replay walks every prefix length of many short series, each length with every
#: phi (60 runs: 29 KB an entry), where 64 entries held under three lengths and the
#: eigendecomposition was 43% of its time; one entry of 600 runs is 2.9 MB.
EIG_BYTES = 64 << 20


class _EigCache:
    """Eigendecompositions by (runs, phi), the least recently used dropped beyond
    ``EIG_BYTES``; under a lock, as the dashboard's pages run in threads (an entry computed
    twice at once is kept once: the lock is never held across an eigh)."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[int, float], tuple[FloatArray, FloatArray]] = OrderedDict()
        self.held = 0  # bytes in entries
        self.lock = threading.Lock()

    def get(self, key: tuple[int, float]) -> tuple[FloatArray, FloatArray] | None:
        with self.lock:
            got = self.entries.get(key)
            if got is not None:
                self.entries.move_to_end(key)
            return got

    def put(self, key: tuple[int, float], value: tuple[FloatArray, FloatArray]) -> None:
        with self.lock:
            if key not in self.entries:
                self.entries[key] = value
                self.held += value[0].nbytes + value[1].nbytes
            while self.held > EIG_BYTES and len(self.entries) > 1:
                a, b = self.entries.popitem(last=False)[1]
                self.held -= a.nbytes + b.nbytes

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.held = 0


_EIGS = _EigCache()


def _eig(m: int, phi: float) -> tuple[FloatArray, FloatArray]:
    """Eigenvalues and vectors of the level's covariance (innovation variance 1) over m runs."""
    got = _EIGS.get((m, phi))
    if got is not None:
        return got
    i = np.arange(1, m + 1, dtype=np.float64)
    if phi >= 1.0:
        cov = np.minimum.outer(i, i)
    else:
        cov = phi ** np.abs(np.subtract.outer(i, i)) / (1.0 - phi * phi)
    lam, vec = np.linalg.eigh(cov)
    _EIGS.put((m, phi), (lam, vec))
    return lam, vec


def _design(m: int, cuts: Sequence[int]) -> FloatArray:
    x = np.ones((m, 1 + len(cuts)))
    for j, c in enumerate(cuts):
        x[:c, j + 1] = 0.0
    return x


def _logliks(yv: FloatArray, xv: FloatArray, lam: FloatArray, ratios: FloatArray) -> FloatArray:
    """Profile log-likelihood at each ratio, in the covariance's eigenbasis (GLS, the white
    variance profiled), all ratios at once."""
    w = 1.0 / (1.0 + np.outer(ratios, lam))
    a = np.einsum("rm,mp,mq->rpq", w, xv, xv)
    beta = np.linalg.solve(a, np.einsum("rm,mp,m->rp", w, xv, yv)[:, :, None])[:, :, 0]
    res = yv[None, :] - beta @ xv.T
    rss = np.maximum(np.sum(w * res * res, axis=1) / yv.size, 1e-300)
    return np.asarray(-0.5 * (yv.size * np.log(rss) + np.sum(np.log1p(np.outer(ratios, lam)), axis=1)))


def _fit(y: FloatArray, cuts: Sequence[int]) -> tuple[float, float, float, float]:
    """Best (log-likelihood, phi, r) of a moving level with steps at ``cuts``, and the
    log-likelihood of none."""
    x = _design(y.size, cuts)
    flat = float(_logliks(y, x, np.zeros(y.size), np.zeros(1))[0])
    best = (flat, 0.0, 0.0)
    for phi in PHIS:
        lam, vec = _eig(y.size, phi)
        ll = _logliks(vec.T @ y, vec.T @ x, lam, _RATIOS)
        i = int(np.argmax(ll))
        if ll[i] > best[0]:
            best = (float(ll[i]), phi, float(_RATIOS[i]))
    return (*best, flat)


def clean(y: FloatArray) -> FloatArray:
    """Each value pulled in to within ``CLIP`` robust SDs (MAD) of a running median of ``WIDTH``."""
    h = WIDTH // 2
    pad = np.concatenate((np.full(h, y[0]), y, np.full(h, y[-1])))
    med = np.median(np.lib.stride_tricks.sliding_window_view(pad, WIDTH), axis=1)
    dev = y - med
    s = 1.4826 * float(np.median(np.abs(dev - np.median(dev))))
    return med + np.clip(dev, -CLIP * s, CLIP * s) if s > 0.0 else y


def _logs(values: Sequence[float] | FloatArray) -> FloatArray | None:
    x = np.asarray(values, dtype=np.float64)
    if not MIN_RUNS <= x.size <= MAX_RUNS or not np.all(np.isfinite(x) & (x > 0)):
        return None
    return clean(np.log(x))


def _mixture_p(lr: float) -> float:
    """Tail of a 50:50 mixture of chi2(1) and chi2(2) at ``lr``."""
    return 1.0 if lr <= 0.0 else 0.5 * math.erfc(math.sqrt(lr / 2.0)) + 0.5 * math.exp(-lr / 2.0)


def wanders(values: Sequence[float] | FloatArray, cuts: Sequence[int] = ()) -> Level | None:
    """The moving level fitted with steps at ``cuts`` (module docstring), or None when the
    series is too short or too long for the model, not all positive, or one value throughout
    (no noise to fit a level to: every likelihood is degenerate)."""
    y = _logs(values)
    if y is None or float(np.ptp(y)) == 0.0:
        return None
    ll, phi, r, flat = _fit(y, sorted(cuts))
    return Level(phi, r, _mixture_p(2.0 * (ll - flat)))


def beyond_wander(values: Sequence[float] | FloatArray, cuts: Sequence[int], min_size: int) -> list[int]:
    """The change points (first runs after them) a moving level does not explain (module
    docstring); all of them when the model does not apply."""
    y = _logs(values)
    kept = sorted(cuts)
    while y is not None and kept:
        ll, _, _, flat = _fit(y, kept)
        if _mixture_p(2.0 * (ll - flat)) > WANDER_P:
            break
        ps = []
        for i in range(len(kept)):
            lo = kept[i - 1] if i else 0
            hi = kept[i + 1] if i + 1 < len(kept) else y.size
            without = _fit(y, kept[:i] + kept[i + 1 :])[0]
            lr = max(0.0, 2.0 * (ll - without))
            ps.append(math.erfc(math.sqrt(lr / 2.0)) * max(1, hi - lo - 2 * min_size + 1))
        worst = int(np.argmax(ps))
        if ps[worst] <= STEP_P:
            break
        del kept[worst]
    return kept


def recent_window(values: Sequence[float] | FloatArray, cuts: Sequence[int] = ()) -> int | None:
    """How many of the newest results estimate the level now (module docstring), or None."""
    fit = wanders(values, cuts)
    if fit is None or fit.p_value > WANDER_P or fit.ratio <= 0.0:
        return None
    r = fit.ratio
    p = (-r + math.sqrt(r * r + 4.0 * r)) / 2.0
    gain = (p + r) / (p + r + 1.0)
    return max(1, round(2.0 / gain - 1.0))
