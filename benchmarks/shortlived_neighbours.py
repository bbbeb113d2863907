"""Whether the ``tasks`` probe counts short-lived neighbours: a storm of child processes, each
about 50 ms (shorter than one of the probe's intervals, so no look sees most of them), beside
a 15 s buffered read on a ram bed, then nothing beside it. Prints what the probe attributed to
``neighbours`` and ``unattributed`` against the storm's own CPU over the probe's window (the
storm's children's CPU, from its own ``getrusage(RUSAGE_CHILDREN)``, at its mean rate), and the quiet
run's neighbours as the control.

    .venv/bin/python benchmarks/shortlived_neighbours.py            # 2 stormy runs, 1 quiet
    .venv/bin/python benchmarks/shortlived_neighbours.py --runs 3 --against /tmp/old/src

Run it with nothing else on the machine: every other process is a neighbour too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAN = """# A read from the page cache of a ram bed, 15 s, beside whatever else runs.
label = "shortlived"
repeat = 1
probes = ["tasks", "cpu"]
[workload]
kind = "fio"
rw = "read"
bs = "4k"
size = "256M"
direct = 0
runtime = "15s"
time_based = 1
[bed]
kind = "ram"
fs = "xfs"
size = "512M"
[axes]
jobs = [1]
"""

#: One child: a shell loop of about 50 ms of CPU here.
CHILD = ["sh", "-c", "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done"]


def storm(stop: Path) -> None:
    """Children one after another until ``stop`` exists, then prints their CPU-seconds and
    the seconds it ran (in a process of its own: ``RUSAGE_CHILDREN`` holds its children only)."""
    t0 = time.monotonic()
    while not stop.exists():
        subprocess.run(CHILD, check=False)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(r.ru_utime + r.ru_stime, time.monotonic() - t0)


def beside_storm(
    iowall: str, plan: Path, db: str, label: str, src: str | None
) -> tuple[dict[str, float], float]:
    """``run`` with a storm beside it: its metrics and the storm's CPUs (CPU-seconds a second)."""
    stop = plan.with_name("stop")
    stop.unlink(missing_ok=True)
    p = subprocess.Popen([sys.executable, __file__, "--storm", str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        m = run(iowall, plan, db, label, src)
    finally:
        stop.touch()
        out, _ = p.communicate()
    cpu, secs = (float(x) for x in out.split())
    return m, cpu / secs


def run(iowall: str, plan: Path, db: str, label: str, src: str | None = None) -> dict[str, float]:
    """``iowall run`` of the plan (with another tree's ``src`` first on the path when given),
    then the stored run's tasks metrics."""
    env = {**os.environ, "IOWALL_DB": db}
    if src:
        env["PYTHONPATH"] = src
    subprocess.run([iowall, "run", str(plan), "--label", label], env=env, check=True, capture_output=True)
    doc = json.loads(
        subprocess.run(
            [iowall, "runs", "--label", label, "--format", "json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    shown = json.loads(
        subprocess.run(
            [iowall, "show", str(doc["runs"][-1]["id"]), "--format", "json"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    return {k: v["value"] for k, v in shown["metrics"].items() if k.startswith("tasks_")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs beside the storm (default 2)")
    ap.add_argument("--against", metavar="SRC", help="another tree's src directory, run alternately")
    ap.add_argument("--storm", metavar="STOP", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.storm:
        storm(Path(args.storm))
        return 0
    iowall = str(Path(sys.executable).with_name("iowall"))
    with tempfile.TemporaryDirectory(prefix="iowall-shortlived-") as d:
        plan, db = Path(d) / "plan.toml", str(Path(d) / "s.db")
        plan.write_text(PLAN)
        run(iowall, plan, db, "warm")  # the first run of a session touches free memory first
        head = ("run", "storm CPUs", "expected s", "neighbours s", "unattributed s", "window s", "ratio")
        print(
            f"{head[0]:<14} {head[1]:>10} {head[2]:>10} {head[3]:>12} {head[4]:>14} {head[5]:>8} {head[6]:>6}"
        )
        trees = [("this", None)] + ([("against", args.against)] if args.against else [])
        for i in range(args.runs):
            for name, src in trees:
                m, rate = beside_storm(iowall, plan, db, f"{name}-{i}", src)
                w, nb = m["tasks_window_s"], m["tasks_neighbours_cpu_s"]
                print(
                    f"{name + '-' + str(i):<14} {rate:>10.2f} {rate * w:>10.2f} {nb:>12.2f} "
                    f"{m['tasks_unattributed_cpu_s']:>14.2f} {w:>8.2f} {nb / (rate * w):>6.2f}"
                )
        for name, src in trees:
            m = run(iowall, plan, db, f"quiet-{name}", src)
            print(
                f"{'quiet-' + name:<14} {'':>10} {0.0:>10.2f} {m['tasks_neighbours_cpu_s']:>12.2f} "
                f"{m['tasks_unattributed_cpu_s']:>14.2f} {m['tasks_window_s']:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
