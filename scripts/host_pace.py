"""The host's pace, printed by make test beside each phase's length: the best of five runs of
a fixed pure-Python loop. The same tests take a third longer on some hours of this VM's host
than on others (steal near 0%); this one figure tells such a host from a slower suite."""

from __future__ import annotations

import sys
import time


def loop(n: int = 2_000_000) -> float:
    """Seconds for ``n`` additions in a Python loop (one CPU, no memory to speak of)."""
    t0 = time.perf_counter()
    s = 0
    for i in range(n):
        s += i
    return time.perf_counter() - t0


if __name__ == "__main__":
    when = sys.argv[1] if len(sys.argv) > 1 else "now"
    best = min(loop() for _ in range(5))
    print(f"== host pace ({when}): a 2M-step Python loop in {best:.3f} s, best of 5 ==")
