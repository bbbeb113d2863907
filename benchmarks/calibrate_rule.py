"""Regenerate the compare rule's calibration table (analysis/regress/calibration.py ``_KAPPA``).

For every pair of grid sizes (m <= n) it runs ``stats.calibrate_kappa`` (the worst case over
normal and t3 noise and spread ratios 1/3, 1, 3) and prints the table rows to paste.
About 13 minutes on one CPU (759 s with --sims 100000); run it under
``flock /tmp/iowall-tests.lock`` on a shared machine.

Run:  .venv/bin/python benchmarks/calibrate_rule.py [--sims 40000] > rows.txt
"""

from __future__ import annotations

import argparse
import sys
import time

from iowall.analysis.regress.calibration import CAL_SIZES
from iowall.analysis.regress.stats import calibrate_kappa


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sims", type=int, default=40000, help="simulated pairs per noise and spread")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    for i, m in enumerate(CAL_SIZES):
        for n in CAL_SIZES[i:]:
            k = calibrate_kappa(m, n, sims=args.sims, seed=m * 100 + n)
            print(f"    ({m}, {n}): ({', '.join(f'{v:.4f}' for v in k)}),", flush=True)
    print(f"# {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
