"""The gate when whole invocations differ: runs counted as independent against runs counted by
their invocation, on the same simulated runs, side by side.

Synthetic data: each invocation (one ``iowall run``, one gate round) of a point has its own
level, log-normal around the true one with spread TAU (the machine's state of that minute:
a neighbour, the host's memory, a CPU's frequency), and its runs scatter around that level
with spread SIGMA (3%). The baseline is K stored invocations of 3 runs; the new side is the
gate's first round (one invocation of 3 runs), and up to two confirmation rounds of 3 more
while a row is suspected, as ``iowall gate`` runs a plan. Each run carries bandwidth, IOPS
(the same figure), a p99 latency (CV 15%) and ten probe metrics that cannot fail the gate.

For each TAU the table gives, per method, the share of gates that fail (exit 1) and that do
not pass (exit 1 or 3): with no change (false alarms) and with the new side 10% and 20%
slower (power). "runs" hides the batches (every run independent: the gate before invocations
were counted, and today's with a one-invocation baseline); "invocations" is the gate as it is.

Run:  .venv/bin/python benchmarks/gate_invocations.py [--cases 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections.abc import Callable

sys.path.insert(0, "src")

from iowall.analysis.regress.compare import Side, compare  # noqa: E402
from iowall.analysis.regress.gate import (  # noqa: E402
    EXIT_PASS,
    EXIT_REGRESSION,
    GateResult,
    confirm,
    decide,
)
from iowall.model import Metric, Point, Run  # noqa: E402

SIGMA = 0.03
TAUS = (0.0, 0.02, 0.04, 0.08)
SHIFTS = (0.0, 0.10, 0.20)


def _runs(rng: random.Random, batch: str, level: float, n: int = 3) -> list[Run]:
    out = []
    for _ in range(n):
        bw = level * rng.lognormvariate(0, SIGMA)
        out.append(
            Run(
                point=Point("plan:g", {"rw": "write"}),
                label=batch,
                status="ok",
                started_at=0.0,
                finished_at=1.0,
                batch=batch,
                metrics=(
                    Metric("write_bw_bytes_per_s", bw, "B/s"),
                    Metric("write_iops", bw / 1000, "IOPS"),
                    Metric("write_clat_p99_s", 1e-3 * rng.lognormvariate(0, 0.15), "s", "lower"),
                    *(Metric(f"vm_x{k}", rng.lognormvariate(0, 0.1), "1") for k in range(10)),
                ),
            )
        )
    return out


def _hide(runs: list[Run]) -> list[Run]:
    return [dataclasses.replace(r, batch="") for r in runs]


def one_gate(rng: random.Random, k: int, tau: float, shift: float) -> tuple[int, int]:
    """Exit codes of one gate, (runs, invocations), on the same simulated runs."""
    base = [r for i in range(k) for r in _runs(rng, f"b{i}", 1000 * rng.lognormvariate(0, tau))]
    drawn = [_runs(rng, f"n{i}", 1000 * (1 - shift) * rng.lognormvariate(0, tau)) for i in range(3)]
    rounds: list[list[Run]] = []

    def more() -> None:
        rounds.append(drawn[len(rounds)])

    def gate(view: Callable[[list[Run]], list[Run]]) -> Callable[[], GateResult]:
        def now() -> GateResult:
            new = [r for rs in rounds for r in rs]
            # as `iowall gate` does: its rows by their runs, invocations tested by ``decide``
            res = compare(
                Side("base", view(base)), [Side("new", view(new))], metrics=["all"], by_invocation=False
            )
            return decide(res)

        return now

    out = []
    for view in (_hide, list):
        rounds.clear()
        more()
        res, _ = confirm(gate(view), more, 2)
        out.append(res.exit_code)
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baseline", type=int, default=4, help="invocations in the baseline")
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(
        f"baseline {a.baseline} invocations x 3 runs; new 1-3 invocations x 3 runs; "
        f"within-invocation CV {SIGMA:.0%}; {a.cases} gates a cell, seed {a.seed}"
    )
    print(
        f"{'tau':>5} {'slower':>6} | {'runs: fail':>10} {'not pass':>8} | "
        f"{'invocations: fail':>17} {'not pass':>8}"
    )
    for tau in TAUS:
        for shift in SHIFTS:
            rng = random.Random(a.seed * 1000 + int(tau * 100) * 10 + int(shift * 100))
            fail = [0, 0]
            notpass = [0, 0]
            for _ in range(a.cases):
                codes = one_gate(rng, a.baseline, tau, shift)
                for i, c in enumerate(codes):
                    fail[i] += c == EXIT_REGRESSION
                    notpass[i] += c != EXIT_PASS
            n = a.cases
            print(
                f"{tau:5.0%} {shift:6.0%} | {fail[0] / n:10.1%} {notpass[0] / n:8.1%} | "
                f"{fail[1] / n:17.1%} {notpass[1] / n:8.1%}",
                flush=True,
            )
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
