"""Does a plan's run lose anything by touching only what it can allocate? On a VM whose host
takes freed memory back (free page reporting), each round lets reporting run for a while (the
host takes the free memory back), then runs the same buffered plan three ways, in a rotated
order: ``need`` (the default since 2026-12-03: the hold touches ``plan.execute.memory_need``),
``all`` (all free memory touched first, the default before) and ``none`` (reporting held off,
nothing touched: what the touch is for). Prints each arm's write bandwidth (every run) and the
command's wall time, the touch included. Root only; a private store in a temporary directory.

    flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/plan_touch.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iowall.plan import load_plan, memory_need
from iowall.store import RunFilter, Store
from iowall.tuning.guestmem import OFF_ORDER, REPORTING_ORDER, hold_guest_memory, reporting_order
from iowall.tuning.knob_session import KnobSession
from iowall.vocab.units import GIB

PLAN = """\
label = "touch"
repeat = 3
probes = []
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "{size}"
end_fsync = 1
[bed]
kind = "ram"
fs = "xfs"
"""

ARMS = ("need", "all", "none")


def iowall(*args: str) -> float:
    """Run the CLI; its wall seconds."""
    t = time.monotonic()
    subprocess.run([str(Path(sys.executable).parent / "iowall"), *args], check=True, capture_output=True)
    return time.monotonic() - t


def arm(name: str, plan: Path, db: str, settle: float) -> float:
    """Reporting on for ``settle`` s (the host takes the free memory back), then the plan run
    the arm's way; the wall seconds of the run and of any touch made for it."""
    time.sleep(settle)
    label = ["--label", name, "--db", db]
    if name == "need":
        return iowall("run", str(plan), *label)
    with KnobSession() as ks:
        t = time.monotonic()
        if name == "all":
            hold_guest_memory(ks)  # all free memory, recorded: the run's own hold touches nothing
            return time.monotonic() - t + iowall("run", str(plan), *label)
        ks.set(REPORTING_ORDER, OFF_ORDER)
        return iowall("run", str(plan), *label, "--no-hold-memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="2G", help="bytes the plan writes (one job)")
    ap.add_argument("--settle", type=float, default=30.0, help="seconds of reporting before each arm")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("plan_touch.py needs root")
    order = reporting_order()
    if order is None or order == str(OFF_ORDER):
        raise SystemExit(f"needs a VM with free page reporting on (page_reporting_order: {order})")
    with tempfile.TemporaryDirectory() as tmp:
        plan = Path(tmp) / "touch.toml"
        plan.write_text(PLAN.format(size=a.size))
        need = memory_need(load_plan(plan))
        print(
            f"plan: buffered write of {a.size}, 3 runs an invocation; memory_need {(need or 0) / GIB:.1f} GiB"
        )
        db = f"sqlite:///{tmp}/runs.db"
        walls: dict[str, list[float]] = {n: [] for n in ARMS}
        for r in range(a.rounds):
            for name in ARMS[r % 3 :] + ARMS[: r % 3]:
                walls[name].append(arm(name, plan, db, a.settle))
                print(f"  round {r + 1} {name}: {walls[name][-1]:.0f} s", flush=True)
        store = Store(db)
        print(f"\n{'arm':5} {'write MiB/s, every run (3 an invocation)':60} median  wall s")
        for name in ARMS:
            bws = [
                (m or 0) / 2**20
                for m in (x.metric("write_bw_bytes_per_s") for x in store.runs(RunFilter(label=name)))
            ]
            cells = " ".join(f"{b:.0f}" for b in bws)
            print(
                f"{name:5} {cells:60} {statistics.median(bws):6.0f}  "
                + " ".join(f"{w:.0f}" for w in walls[name])
            )


if __name__ == "__main__":
    main()
