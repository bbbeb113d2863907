"""Parsing and printing of sizes, rates and metric values with explicit binary units (KiB, MiB,
GiB), and numbers made safe for JSON."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .errors import UserError

#: Binary units, the one definition every module uses.
KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

_SUFFIX = {
    "": 1,
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "kib": KIB,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
    "t": TIB,
    "tb": TIB,
    "tib": TIB,
}
_PCT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_size(text: str | int, *, what: str = "size", of_total: int | None = None) -> int:
    """Parse ``4G``, ``512MiB``, ``1048576`` (binary units, as fio does) or ``25%`` of ``of_total``."""
    if isinstance(text, int):
        return text
    m = _PCT.match(text)
    if m and of_total is not None:
        n = float(m.group(1)) / 100.0 * of_total
    else:
        m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$", text)
        if not m or m.group(2).lower() not in _SUFFIX:
            raise UserError(f"{what}: cannot read {text!r} as a size (examples: 4G, 512M, 25%)")
        n = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if not math.isfinite(n):  # "1e400"-long digit strings: int(inf) would raise
        raise UserError(f"{what}: {text[:40]!r}… is too large a size")
    return int(n)


def parse_share(text: str | float) -> float:
    """``2%`` or ``0.02`` → 0.02; NaN when the text is neither (each caller says its range)."""
    t = str(text).strip()
    try:
        return float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        return math.nan


def parse_floor(text: str) -> float:
    """``--floor``: ``2%`` or ``0.02`` → 0.02; a UserError outside [0, 1)."""
    v = parse_share(text)
    if math.isnan(v):
        raise UserError(f"--floor {text!r}: use a share like 2% or 0.02")
    if not 0 <= v < 1:
        raise UserError(f"--floor {text!r}: must be at least 0 and below 100%")
    return v


def fmt_bytes(n: float) -> str:
    """``6.0 GiB`` style, binary prefixes as the seeds use."""
    for unit, scale in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_rate(bps: float) -> str:
    """Bandwidth the way fio prints it: MiB/s up to 9999, then GiB/s (``3125MiB/s``, ``12.3GiB/s``)."""
    mib = bps / MIB
    if mib >= 9999.5:
        return f"{bps / GIB:.1f}GiB/s"
    if mib >= 1:
        return f"{mib:.0f}MiB/s"
    return f"{bps / KIB:.0f}KiB/s"


def fmt_share(x: float, places: int = 0) -> str:
    """A share as a percentage: ``0.284`` → ``28%`` (``places`` decimals); the one way
    sentences and tables write shares."""
    return f"{100 * x:.{places}f}%"


def fmt_duration(s: float) -> str:
    """A short time as sentences give it: ``850 us`` below a millisecond, else ``1.20 ms``
    (tables write seconds compactly through ``fmt_metric``)."""
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def fio_size(n: int) -> str:
    """A byte count in fio job-file syntax, exact (``2m``, ``1536k``, ``1234``)."""
    for suffix, scale in (("g", GIB), ("m", MIB), ("k", KIB)):
        if n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def json_number(x: float | None) -> float | None:
    """A number for JSON, which has no infinity or NaN: non-finite becomes null."""
    return x if x is not None and math.isfinite(x) else None


def fmt_metric(value: float, unit: str, *, precise: bool = False) -> str:
    """A metric in its unit: rates and sizes with binary prefixes (fio's MiB/s); the rest
    compact for tables (k/M for rates, ms/us for times) or, ``precise``, to 6 digits."""
    if unit in ("B/s", "bytes_per_s"):
        return fmt_rate(value)
    if unit in ("B", "bytes"):
        return fmt_bytes(value)
    if precise:
        return f"{value:.6g} {unit}".strip()
    if unit == "s":
        if value == 0:  # none at all (a writer never throttled), not "0.0us"
            return "0s"
        if value >= 1:
            return f"{value:.2f}s"
        if value >= 1e-3:
            return f"{value * 1e3:.2f}ms"
        return f"{value * 1e6:.1f}us"
    if unit in ("IO/s", "files/s", "ops_per_s", "ops/s", "pages/CPU-s"):
        if value >= 1e6:
            return f"{value / 1e6:.2f}M"
        if value >= 1e4:
            return f"{value / 1e3:.1f}k"
        return f"{value:.0f}"
    if unit == "share":
        return f"{value * 100:.1f}%"
    return f"{value:.4g}"


#: Units ``fmt_metric`` writes itself (with a prefix or suffix of its own).
FORMATTED_UNITS = (
    *("B/s", "bytes_per_s", "B", "bytes", "s", "IO/s", "files/s", "ops_per_s", "ops/s", "share"),
    "pages/CPU-s",
)


def fmt_value(value: float, unit: str) -> str:
    """``fmt_metric``, with any other unit (one a user gave: ``ms``, ``MB/s``) written after."""
    text = fmt_metric(value, unit)
    return f"{text} {unit}" if unit and unit not in FORMATTED_UNITS else text


def plural(n: int, word: str) -> str:
    """``1 run``, ``2 runs``: a count with its noun (an English plural in -s)."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def id_ranges(ids: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` → ``1-3, 7``."""
    out: list[str] = []
    xs = sorted(set(ids))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ", ".join(out)
