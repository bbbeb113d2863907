"""What the probes add to a run's wall time (not its throughput: probe_overhead.py): the time
every `iowall run` of a point spends starting and stopping its probes, which a suite or a
sweep of many short points pays once a point.

    .venv/bin/python benchmarks/probe_wall.py               # 7 rounds
    .venv/bin/python benchmarks/probe_wall.py --rounds 11

Two measurements, each interleaved (one of each per round, the order turning every round):

1. ``perf record`` as the profile probe runs it (system-wide, call graphs, 99 Hz), with and
   without ``-B --no-bpf-event``: seconds from its start to its header (when the probe starts
   the point) and from SIGINT to its exit (what the probe waits for at stop).
2. `iowall run` of a one-point plan (8 MiB written on a tmpfs bed, one run) with
   ``--probes none``, ``profile`` and ``default``: the whole command's wall seconds.

Medians and ranges; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAN = """\
label = "probe-wall"
repeat = 1
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "8M"
[bed]
kind = "tmpfs"
size = "256M"
"""

PERF = ["perf", "record", "-e", "cpu-clock", "-F", "99", "-a", "-g", "-N"]
FLAGS = {"before (-N)": [], "now (-N -B --no-bpf-event)": ["-B", "--no-bpf-event"]}
PROBES = ("none", "profile", "default")


def perf_times(extra: list[str], tmp: Path, hold_s: float = 0.7) -> tuple[float, float]:
    """(seconds to the header, seconds from SIGINT to exit) of one perf record."""
    data = tmp / "perf.data"
    data.unlink(missing_ok=True)
    t0 = time.monotonic()
    p = subprocess.Popen(
        [*PERF, *extra, "-o", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while not (data.exists() and data.stat().st_size > 0):
        if p.poll() is not None:
            raise SystemExit(f"perf record exited ({p.returncode}) with {extra}")
        time.sleep(0.005)
    t1 = time.monotonic()
    time.sleep(hold_s)
    t2 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait()
    return t1 - t0, time.monotonic() - t2


def run_seconds(probes: str, plan: Path, env: dict[str, str]) -> float:
    """Wall seconds of one `iowall run PLAN --probes PROBES`."""
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    t0 = time.monotonic()
    cp = subprocess.run([exe, "run", str(plan), "--probes", probes], env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    if cp.returncode != 0:
        raise SystemExit(f"iowall run --probes {probes} failed: {cp.stderr.strip()[-300:]}")
    return took


def _line(name: str, xs: list[float], base: float | None = None) -> str:
    med = statistics.median(xs)
    extra = f"  {med - base:+.2f} s against none" if base is not None else ""
    return f"  {name:36} median {med:5.2f} s  range {min(xs):.2f}-{max(xs):.2f}{extra}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (perf record -a, beds)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="iowall-probe-wall-") as d:
        tmp = Path(d)
        plan = tmp / "plan.toml"
        plan.write_text(PLAN)
        env = dict(
            os.environ,
            IOWALL_DB=f"sqlite:///{tmp / 'db.sqlite'}",
            XDG_DATA_HOME=str(tmp / "data"),
            XDG_STATE_HOME=str(tmp / "state"),
        )
        start: dict[str, list[float]] = {k: [] for k in FLAGS}
        stop: dict[str, list[float]] = {k: [] for k in FLAGS}
        runs: dict[str, list[float]] = {k: [] for k in PROBES}
        for i in range(a.rounds):
            order = list(FLAGS) if i % 2 == 0 else list(reversed(FLAGS))
            for k in order:
                s, e = perf_times(FLAGS[k], tmp)
                start[k].append(s)
                stop[k].append(e)
            for k in PROBES if i % 2 == 0 else tuple(reversed(PROBES)):
                runs[k].append(run_seconds(k, plan, env))
            print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
    print(f"perf record {' '.join(PERF[2:])}, {a.rounds} of each, interleaved")
    for k in FLAGS:
        print(_line(f"{k}: to header", start[k]))
        print(_line(f"{k}: SIGINT to exit", stop[k]))
    print(f"iowall run of a one-point plan (8 MiB on tmpfs), {a.rounds} of each, interleaved")
    base = statistics.median(runs["none"])
    for k in PROBES:
        print(_line(f"--probes {k}", runs[k], None if k == "none" else base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
