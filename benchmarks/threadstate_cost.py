"""The `threadstate` sampler's own CPU: what it costs per second and per look, at each rate.

    .venv/bin/python benchmarks/threadstate_cost.py                     # 4 threads, 8 s each
    .venv/bin/python benchmarks/threadstate_cost.py --threads 2,4,16 --seconds 10

The probe runs in this process and watches a child that keeps ``--threads`` threads busy
changing state (``switching``: each sleeps 1 ms, then spins 1 ms; ``waiting``: sleeps 50
ms); the main thread only waits, so this process's CPU time over the interval (``getrusage``,
exact to the tick, and
``time.process_time``) is the sampler's: wake-ups, stack reads, counter rows, cgroup reads.
Each setting (stack looks per second per thread, counter buckets per second) is measured in
turn, rounds interleaved, and the median printed: the share of one CPU, and microseconds per
stack look (a bucket's counter reads included). Measuring CPU time, not throughput, is what
resolves a cost of 1-2% on a host whose throughput moves 4-6% between identical runs
(docs/benchmarks.md, "What the probes cost").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from iowall.probes import threadstate
from iowall.probes.base import ProbeContext

CHILD = """
import threading, time
def work():
    while True:
        time.sleep({sleep_s})
        t = time.perf_counter() + 0.001
        while time.perf_counter() < t:
            pass
for _ in range({n}):
    threading.Thread(target=work, daemon=True).start()
time.sleep(3600)
"""


#: what the watched threads do: sleep this long, then spin 1 ms. "switching" changes state
#: between any two looks (the worst case: every look reads a stack); "waiting" is mostly
#: asleep, as a thread waiting in fsync, on the device or on a throttle
CHILDREN = {"switching": 0.001, "waiting": 0.05}


def one(
    hz: float, bucket_s: float, seconds: float, threads: int, child: str = "switching"
) -> dict[str, float]:
    """One measured interval at one setting: the probe's CPU share of one CPU and per look."""
    threadstate.HZ, threadstate.BUCKET_S = hz, bucket_s
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(n=threads, sleep_s=CHILDREN[child])])
    try:
        time.sleep(0.5)  # the child's threads are up
        probe = threadstate.ThreadStateProbe(ProbeContext())
        c0 = time.process_time()
        t0 = time.monotonic()
        probe.start()
        time.sleep(seconds)
        res = probe.stop()
        cpu = time.process_time() - c0
        wall = time.monotonic() - t0
    finally:
        child.kill()
        child.wait()
    m = {x.name: x.value for x in res.metrics}
    looks = m["threadstate_ticks"] * threads
    return {
        "cpu_share": cpu / wall,
        "us_per_look": 1e6 * cpu / looks if looks else 0.0,
        "watched": m["threadstate_threads"],
        "inner_share": m["threadstate_probe_cpu_share"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="4", help="comma list of watched thread counts")
    ap.add_argument(
        "--settings",
        default="100:0.1,50:0.25,25:0.25",
        help="comma list of HZ:BUCKET_S (stack looks per second per thread, seconds between counter rows)",
    )
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--child", default="switching,waiting", help=f"comma list of {', '.join(CHILDREN)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the measurements here")
    a = ap.parse_args()
    settings = [(float(h), float(b)) for h, b in (s.split(":") for s in a.settings.split(","))]
    out: list[dict[str, Any]] = []
    print(
        "| threads | they are | looks/s a thread | bucket | probe CPU (share of one CPU) "
        "| us per look | rounds |"
    )
    print("|---|---|---|---|---|---|---|")
    cases = [(int(n), c) for n in a.threads.split(",") for c in a.child.split(",")]
    for n, child in cases:
        got: dict[tuple[float, float], list[dict[str, float]]] = {s: [] for s in settings}
        for _ in range(a.rounds):
            for s in settings:
                got[s].append(one(s[0], s[1], a.seconds, n, child))
        for (hz, b), rs in got.items():
            share = statistics.median(r["cpu_share"] for r in rs)
            per = statistics.median(r["us_per_look"] for r in rs)
            each = ", ".join(f"{100 * r['cpu_share']:.2f}" for r in rs)
            print(
                f"| {n} | {child} | {hz:g} | {b:g} s | {100 * share:.2f}% ({each}) | {per:.0f} | {len(rs)} |"
            )
            out.append({"threads": n, "child": child, "hz": hz, "bucket_s": b, "runs": rs})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
