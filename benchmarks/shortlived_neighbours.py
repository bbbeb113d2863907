"""Whether the ``tasks`` probe counts short-lived neighbours: a storm of child processes, each
about 50 ms (shorter than one of the probe's intervals, so no look sees most of them), beside
a 15 s buffered read on a ram bed, then nothing beside it. Prints what the probe attributed to
``neighbours`` and ``unattributed`` against the storm's own CPU over the probe's window (the
storm's children's CPU, from its own ``getrusage(RUSAGE_CHILDREN)``, at its mean rate; and
each child's CPU spread over its life and cut to the run's span, from the run's start for the
probe's window: "in span"), and the quiet run's neighbours as the control.

    .venv/bin/python benchmarks/shortlived_neighbours.py            # 2 stormy runs, 1 quiet
    .venv/bin/python benchmarks/shortlived_neighbours.py --runs 3 --against /tmp/old/src
    .venv/bin/python benchmarks/shortlived_neighbours.py --threaded --against /tmp/old/src

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
#: One child of ``--threaded``: a thread spins 1.5 s of CPU and exits, then the process spins
#: 1 s more: a look sees the thread, which is gone before its process is reaped.
THREADED = [
    sys.executable,
    "-c",
    "import threading, time\n"
    "def spin(s):\n"
    "    t = time.thread_time() + s\n"
    "    while time.thread_time() < t: pass\n"
    "th = threading.Thread(target=spin, args=(1.5,)); th.start(); th.join(); spin(1.0)",
]


def storm(stop: Path, child: list[str]) -> None:
    """Children one after another until ``stop`` exists, then prints (JSON) their CPU-seconds,
    the seconds it ran and each child's (start, end, CPU-seconds), wall-clock epoch (in a
    process of its own: ``RUSAGE_CHILDREN`` holds its children only)."""
    t0, kids = time.monotonic(), []
    while not stop.exists():
        c0, w0 = _children_cpu(), time.time()
        subprocess.run(child, check=False)
        kids.append((w0, time.time(), _children_cpu() - c0))
    print(json.dumps({"cpu": _children_cpu(), "secs": time.monotonic() - t0, "children": kids}))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def in_window(kids: list[list[float]], start: float, end: float) -> float:
    """The children's CPU-seconds within [start, end], each child's spread evenly over its life."""
    return sum(c * max(0.0, min(b, end) - max(a, start)) / (b - a) for a, b, c in kids if b > a)


def beside_storm(
    iowall: str, plan: Path, db: str, label: str, src: str | None, threaded: bool = False
) -> tuple[dict[str, float], float, float]:
    """``run`` with a storm beside it: its metrics, the storm's CPUs (CPU-seconds a second)
    and its children's CPU-seconds within the run's span (``in_window``)."""
    stop = plan.with_name("stop")
    stop.unlink(missing_ok=True)
    argv = [sys.executable, __file__, "--storm", str(stop)] + (["--threaded"] if threaded else [])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        m = run(iowall, plan, db, label, src)
    finally:
        stop.touch()
        out, _ = p.communicate()
    doc = json.loads(out)
    span = in_window(doc["children"], m["started_at"], m["started_at"] + m["tasks_window_s"])
    return m, doc["cpu"] / doc["secs"], span


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
    out = {k: v["value"] for k, v in shown["metrics"].items() if k.startswith("tasks_")}
    return {**out, "started_at": shown["started_at"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs beside the storm (default 2)")
    ap.add_argument("--against", metavar="SRC", help="another tree's src directory, run alternately")
    ap.add_argument(
        "--threaded",
        action="store_true",
        help="children of about 2.5 s whose one thread exits before them (else 50 ms sh loops)",
    )
    ap.add_argument("--storm", metavar="STOP", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.storm:
        storm(Path(args.storm), THREADED if args.threaded else CHILD)
        return 0
    iowall = str(Path(sys.executable).with_name("iowall"))
    with tempfile.TemporaryDirectory(prefix="iowall-shortlived-") as d:
        plan, db = Path(d) / "plan.toml", str(Path(d) / "s.db")
        plan.write_text(PLAN)
        run(iowall, plan, db, "warm")  # the first run of a session touches free memory first
        head = ("run", "storm CPUs", "expected s", "in span s", "neighbours s", "unattributed s", "window s")
        print(
            f"{head[0]:<14} {head[1]:>10} {head[2]:>10} {head[3]:>9} {head[4]:>12} {head[5]:>14} "
            f"{head[6]:>8} {'ratio':>6} {'/span':>6}"
        )
        trees = [("this", None)] + ([("against", args.against)] if args.against else [])
        for i in range(args.runs):
            for name, src in trees:
                m, rate, span = beside_storm(iowall, plan, db, f"{name}-{i}", src, args.threaded)
                w, nb = m["tasks_window_s"], m["tasks_neighbours_cpu_s"]
                print(
                    f"{name + '-' + str(i):<14} {rate:>10.2f} {rate * w:>10.2f} {span:>9.2f} {nb:>12.2f} "
                    f"{m['tasks_unattributed_cpu_s']:>14.2f} {w:>8.2f} {nb / (rate * w):>6.2f} "
                    f"{nb / span:>6.2f}"
                )
        for name, src in trees:
            m = run(iowall, plan, db, f"quiet-{name}", src)
            print(
                f"{'quiet-' + name:<14} {'':>10} {0.0:>10.2f} {0.0:>9.2f} "
                f"{m['tasks_neighbours_cpu_s']:>12.2f} "
                f"{m['tasks_unattributed_cpu_s']:>14.2f} {m['tasks_window_s']:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
