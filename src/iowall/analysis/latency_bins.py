"""Latency percentiles from fio's ``json+`` histogram bins, so they can be recomputed over
several jobs or runs: percentiles themselves never combine, bin counts add exactly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

#: A histogram: a bin's value (ns, fio's ``plat_idx_to_val``: the middle of its range) → count.
Bins = Mapping[int, int]


def merge_bins(histograms: Iterable[Mapping[str, int] | Mapping[int, int]]) -> dict[int, int]:
    """The sum of several histograms (fio's ``clat_ns.bins`` objects, keys as text or int)."""
    out: dict[int, int] = {}
    for h in histograms:
        for k, n in h.items():
            v = int(k)
            out[v] = out.get(v, 0) + int(n)
    return out


def percentiles(bins: Bins, points: Sequence[float]) -> dict[float, int]:
    """fio's own percentile rule (``calc_clat_percentiles`` in stat.c): the value of the first
    bin, in increasing order, at which the running count reaches ``p/100`` of all samples.
    On one job's bins this gives exactly the percentiles fio printed; empty bins give {}."""
    total = sum(bins.values())
    if total <= 0:
        return {}
    want = sorted(points)
    out: dict[float, int] = {}
    seen = 0
    j = 0
    for value in sorted(bins):
        seen += bins[value]
        while j < len(want) and seen >= want[j] / 100.0 * total:
            out[want[j]] = value
            j += 1
        if j == len(want):
            break
    return out


def bin_width(value: int) -> int:
    """The width, in ns, of fio's bin whose middle is ``value`` (6 bits of precision per power
    of two; exact below 128): how far a recomputed percentile may be from the true one."""
    if value < 128:
        return 1
    return 1 << (value.bit_length() - 7)
