"""Binary prefixes for byte units on an axis or in a column (``MiB/s``, ``GiB``): shared by
the figures and the text tables, apart from the figures so that a table needs no numpy."""

from __future__ import annotations

RATE_UNITS = ("B/s", "bytes_per_s")
SIZE_UNITS = ("B", "bytes")


def binary_scale(unit: str, peak: float) -> tuple[float, str]:
    """Divisor and label that show byte units with a binary prefix (``MiB/s``, ``GiB``) chosen
    from ``peak``; other units unchanged, ``_per_s`` written ``/s``."""
    if unit in RATE_UNITS or unit in SIZE_UNITS:
        suffix = "/s" if unit in RATE_UNITS else ""
        for name, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(peak) >= scale:
                return float(scale), name + suffix
        return 1.0, "B" + suffix
    pretty = {"share": "share (0-1)", "s_per_s": "s/s", "CPUs": "CPUs"}
    return 1.0, pretty.get(unit, unit.replace("_per_s", "/s"))
