"""Where the time of a `limits` run goes: the run made in-process with its phases wrapped and
timed (guest-memory hold, bed, read pool, every probe's start and stop, cache drops, fio and
engine points, storing, the report), printed heaviest first with their count and mean. A
private store in a temporary directory; root only, under the suite's lock when measuring.

    flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/limits_phases.py --quick --jobs 2 --repeat 1
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import iowall.beds as beds
import iowall.measure.runner as runner
import iowall.measure.session as session
import iowall.recipes.limits.run as limits_run
import iowall.recipes.limits.tasks as limits_tasks
from iowall.probes import REGISTRY, ProbeSet
from iowall.recipes.limits.options import limits_options
from iowall.store.db import Store
from iowall.vocab.progress import Progress

took: dict[str, list[float]] = collections.defaultdict(list)


def timed(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` with a wrapper that adds each call's seconds to ``took[label]``."""
    f: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(f)
    def wrapper(*a: Any, **k: Any) -> Any:
        t = time.monotonic()
        try:
            return f(*a, **k)
        finally:
            took[label].append(time.monotonic() - t)

    setattr(owner, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", default=None, help="job counts, e.g. 2 or 1,2,4")
    ap.add_argument("--repeat", type=int, default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("limits_phases.py needs root")
    for n, c in REGISTRY.items():
        timed(c, "start", f"probe {n}: start")
        timed(c, "stop", f"probe {n}: stop")
    timed(ProbeSet, "start", "probes: start (all)")
    timed(ProbeSet, "stop", "probes: stop (all)")
    timed(session.Session, "drop_caches", "cache drop")
    timed(limits_tasks, "warm_generator", "generator warm-up")
    timed(limits_tasks, "run_fio", "fio (points and the read pool's layout)")
    timed(limits_tasks, "run_stream", "engine point")
    timed(runner.Schedule, "_store", "storing a run")
    timed(limits_run, "hold_memory_step", "guest-memory hold")
    timed(limits_run, "layout_read_pool", "read pool layout")
    timed(beds, "provision_ram", "ram bed: provision")
    timed(beds.Bed, "teardown", "bed: teardown")
    timed(limits_run, "why_limits", "report: why")
    timed(limits_run, "limits_report", "report: layout")
    opts = limits_options(quick=a.quick, jobs=a.jobs, repeat=a.repeat)
    with tempfile.TemporaryDirectory() as d:
        store = Store(os.path.join(d, "phases.db"))
        t = time.monotonic()
        limits_run.run_limits(opts, store, Progress())
        total = time.monotonic() - t
        store.close()
    what = f"{'--quick ' if a.quick else ''}jobs={a.jobs or 'default'} repeat={a.repeat or 'default'}"
    print(f"limits {what}: {total:.1f} s")
    for k, v in sorted(took.items(), key=lambda kv: -sum(kv[1])):
        if sum(v) >= 0.05:
            print(f"  {k:42s} n={len(v):3d}  total {sum(v):6.1f} s  mean {sum(v) / len(v):.3f} s")


if __name__ == "__main__":
    main()
