"""Crash trials: SIGKILL `iowall run` and `iowall limits` at chosen and random moments (bed
set-up, knob application, probe start, a point, the store write) and check that the next
`iowall recover` (or the next `iowall run`) leaves nothing behind: no mount, loop device,
image, fio scratch directory, ftrace instance or perf/fio process, every knob at its old
value, and the store passing SQLite's integrity_check with every run completed before still
there."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import figure, leftovers, needs_root, reporting_held_off

pytestmark = [needs_root, pytest.mark.slow]

#: Files of knobs a run or limits may change: each must read as before after recovery.
KNOB_FILES = (
    "/proc/sys/vm/dirty_ratio",
    "/proc/sys/vm/dirty_bytes",
    "/proc/sys/vm/dirty_background_ratio",
    "/proc/sys/vm/dirty_background_bytes",
    "/sys/module/page_reporting/parameters/page_reporting_order",
    "/sys/kernel/mm/transparent_hugepage/enabled",
)
INSTANCES = Path("/sys/kernel/tracing/instances")
CHILDREN = ("fio", "perf", "iowall-engine")

PLAN = textwrap.dedent("""\
    label = "crash"
    repeat = 2
    [workload]
    kind = "fio"
    rw = "write"
    bs = "1M"
    size = "48M"
    end_fsync = 1
    [bed]
    kind = "ram"
    size = "512M"
    [axes]
    jobs = [1, 2]
    "sysctl:vm.dirty_ratio" = [11, 19]
    """)
LIMITS = ["limits", "--quick", "--jobs", "1", "--repeat", "1", "--size", "512M"]
#: `run` holds guest memory by default as `limits` does; limits' trials kill at that hold and
#: touch, so `run`'s go without it: its moments stay its own (not 20-30 s of touching first,
#: past their deadlines, where the session's hold is let go)
NO_HOLD = "--no-hold-memory"


def knob_values() -> dict[str, str]:
    out = {}
    for f in KNOB_FILES:
        try:
            out[f] = Path(f).read_text().strip()
        except OSError:
            pass
    return out


def children() -> set[str]:
    """fio, perf and engine processes running now (pid:comm; zombies waiting for init to
    reap them are gone already)."""
    out = set()
    for p in Path("/proc").glob("[0-9]*/stat"):
        try:
            s = p.read_text()
        except OSError:
            continue
        comm, state = s[s.index("(") + 1 : s.rindex(")")], s[s.rindex(")") + 2 :].split()[0]
        if comm in CHILDREN and state != "Z":
            out.add(f"{p.parent.name}:{comm}")
    return out


def instances() -> set[str]:
    return {p.name for p in INSTANCES.glob("iowall-*")} if INSTANCES.is_dir() else set()


def kids_of(pid: int) -> list[str]:
    """Command lines of a process's direct children."""
    out = []
    for p in Path("/proc").glob("[0-9]*/stat"):
        try:
            s = p.read_text()
            if int(s[s.rindex(")") + 2 :].split()[1]) == pid:
                out.append((p.parent / "cmdline").read_text().replace("\0", " "))
        except (OSError, ValueError):
            continue
    return out


@dataclass
class World:
    """Everything a crash could leave, as a snapshot."""

    mounts: set[str] = field(default_factory=set)
    loops: set[str] = field(default_factory=set)
    images: set[str] = field(default_factory=set)
    procs: set[str] = field(default_factory=set)
    traces: set[str] = field(default_factory=set)
    knobs: dict[str, str] = field(default_factory=dict)
    scratch: set[str] = field(default_factory=set)

    @staticmethod
    def now(data: Path) -> World:
        lo = leftovers()
        disk = {str(p) for p in (data / "iowall" / "beds").glob("iowall-*")}
        return World(
            lo["mounts"],
            lo["loops"],
            lo["images"] | disk,
            children(),
            instances(),
            knob_values(),
            lo["scratch"],
        )

    def minus(self, before: World) -> dict[str, object]:
        """What is here now and was not before (knobs: those that differ)."""
        d: dict[str, object] = {
            k: sorted(getattr(self, k) - getattr(before, k))
            for k in ("mounts", "loops", "images", "procs", "traces", "scratch")
        }
        d["knobs"] = {f: v for f, v in self.knobs.items() if before.knobs.get(f) != v}
        return {k: v for k, v in d.items() if v}


class Trial:
    """One iowall process, killed with SIGKILL when ``trigger`` first holds (or at the
    deadline), plus a random delay."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        exe = os.path.join(os.path.dirname(sys.executable), "iowall")
        self.proc = subprocess.Popen(
            [exe, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.t0 = time.monotonic()

    def kill_when(self, trigger: Callable[[int], bool], deadline: float, delay: float) -> float:
        """SIGKILL once ``trigger(pid)`` holds (after ``delay`` more seconds) or at
        ``deadline``; returns when, in seconds from the start."""
        pid = self.proc.pid
        end = self.t0 + deadline
        while time.monotonic() < end and self.proc.poll() is None:
            if trigger(pid):
                time.sleep(delay)
                break
            time.sleep(0.01)
        at = time.monotonic() - self.t0
        if self.proc.poll() is None:
            os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        return at


def journal_has(jdir: Path, kind: str, path_part: str = "") -> Callable[[int], bool]:
    def check(_pid: int) -> bool:
        for p in jdir.glob("*.json"):
            try:
                a = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if a.get("undo") == kind and path_part in str(a.get("path", "")):
                return True
        return False

    return check


def child_running(part: str) -> Callable[[int], bool]:
    """True once a child's command line contains ``part``."""
    return lambda pid: any(part in c for c in kids_of(pid))


#: A point runs: fio with its job file (not ``fio --version``); a probe starts: perf record.
POINT, PROBE = child_running("--output-format=json"), child_running("perf record")


def store_write(db: Path) -> Callable[[int], bool]:
    """True once the store's write-ahead log changes after a point has run: the run is
    being written (the log also changes when the store is opened, before any point)."""
    wal = Path(str(db) + "-wal")
    seen: list[int] = []

    def check(pid: int) -> bool:
        stamp = wal.stat().st_mtime_ns if wal.exists() else 0
        if not seen:
            if POINT(pid):
                seen.append(stamp)
            return False
        return stamp != seen[0]

    return check


def image_exists(_pid: int) -> bool:
    return bool(list(Path("/dev/shm").glob("iowall-*.img")))


def never(_pid: int) -> bool:
    return False


def store_state(db: Path) -> tuple[str, set[str]]:
    """SQLite's integrity_check verdict and the uuids of the stored runs."""
    if not db.exists():
        return "ok", set()
    con = sqlite3.connect(db)
    try:
        verdict = con.execute("PRAGMA integrity_check").fetchone()[0]
        uuids = {r[0] for r in con.execute("SELECT uuid FROM runs")}
    finally:
        con.close()
    return str(verdict), uuids


def test_sigkill_at_any_moment_is_recovered(
    tmp_path: Path, reporting_released: Callable[[], AbstractContextManager[None]]
) -> None:
    rng = random.Random(20261122)
    data, state = tmp_path / "data", tmp_path / "state"
    db = tmp_path / "store.db"
    env = dict(os.environ, IOWALL_DB=f"sqlite:///{db}", XDG_DATA_HOME=str(data), XDG_STATE_HOME=str(state))
    jdir = state / "iowall" / "journal"
    plan_file = tmp_path / "crash.toml"
    plan_file.write_text(PLAN)
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    before = World.now(data)
    # (command, moment, trigger, deadline s, extra delay s)
    run_moments: list[tuple[str, Callable[[int], bool], float]] = [
        ("bed set-up", image_exists, 20),
        ("knob", journal_has(jdir, "write", "/proc/sys"), 30),
        ("probe start", PROBE, 30),
        ("point", POINT, 30),
        ("store write", store_write(db), 60),
        ("random", never, 0),
    ]
    plan_of: list[tuple[str, str, Callable[[int], bool], float, float]] = []
    for i in range(12):  # each of the six moments twice
        name, trig, dl = run_moments[i % len(run_moments)]
        if name == "random":
            plan_of.append(("run", name, trig, rng.uniform(0.2, 12.0), 0.0))
        else:
            plan_of.append(("run", name, trig, dl, rng.uniform(0.0, 0.4)))
    limits_moments: list[tuple[str, Callable[[int], bool], float, float]] = [
        ("knob", journal_has(jdir, "write", "page_reporting"), 30, 0.0),
        ("guest memory touch", never, 4.0, 0.0),
        ("bed set-up", image_exists, 120, rng.uniform(0.0, 0.3)),
        ("point", POINT, 180, rng.uniform(0.1, 1.0)),
        ("probe start", PROBE, 180, 0.0),
        ("store write", store_write(db), 240, 0.0),
        ("random", never, rng.uniform(1.0, 30.0), 0.0),
    ]
    plan_of += [("limits", n, t, dl, dy) for n, t, dl, dy in limits_moments]
    rng.shuffle(plan_of)
    # limits' kills after its guest-memory touch run first, under the session's reporting
    # hold: they find the free memory touched under it (guestmem.TOUCHED, by the session's
    # first limits), not 15-20 s of touching each, nor once more under a hold of their own
    # (20-40 s). The kills at limits' own hold and touch (and at random) run after, with
    # the hold let go, as a user's limits starts: it holds reporting itself (the "knob"
    # moment) and touches the free memory (the "guest memory touch" moment).
    after_touch = ("bed set-up", "point", "probe start", "store write")
    touched = [t for t in plan_of if t[0] == "limits" and t[1] in after_touch]
    plan_of = [t for t in plan_of if t not in touched]

    rows: list[str] = []
    left_total: dict[str, int] = {}

    def trials(plan: list[tuple[str, str, Callable[[int], bool], float, float]], seen: set[str]) -> set[str]:
        start = World.now(data)  # the knobs as they read when these trials begin
        for cmd, moment, trig, deadline, delay in plan:
            if moment == "store write":  # it remembers the first point: one per trial
                trig = store_write(db)
            trial = Trial(["run", str(plan_file), NO_HOLD] if cmd == "run" else LIMITS, env)
            at = trial.kill_when(trig, deadline, delay)
            left = World.now(data).minus(start)
            for k, v in left.items():
                left_total[k] = left_total.get(k, 0) + len(v)  # type: ignore[arg-type]
            rec = subprocess.run([exe, "recover"], env=env, capture_output=True, text=True, timeout=120)
            assert rec.returncode == 0, rec.stderr
            after = World.now(data).minus(start)
            verdict, uuids = store_state(db)
            rows.append(
                f"{cmd:6} {moment:18} killed at {at:5.1f} s  left {sorted(left)}  "
                f"recover: {rec.stdout.strip().splitlines()[-1]}"
            )
            assert not after, f"{cmd} killed at {moment} ({at:.1f} s): left {after}\n{rec.stdout}"
            assert not list(jdir.glob("*.json")), "journal entries left"
            assert verdict == "ok", verdict
            assert seen <= uuids, f"runs lost: {seen - uuids}"
            seen = uuids
        return seen

    with reporting_held_off():  # the session's hold, or one of the test's own without it
        seen = trials(touched, set())
    with reporting_released():
        seen = trials(plan_of, seen)
    plan_of += touched

    # The next start recovers by itself: kill once more, then a whole run completes cleanly.
    trial = Trial(["run", str(plan_file), NO_HOLD], env)
    trial.kill_when(POINT, 60, 0.2)
    done = subprocess.run(
        [exe, "run", str(plan_file), "--probes", "none", NO_HOLD],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert not World.now(data).minus(before)
    verdict, uuids = store_state(db)
    assert verdict == "ok" and seen < uuids
    figure(
        "crash trials",
        f"{len(plan_of) + 1} SIGKILLs "
        f"(run {sum(c == 'run' for c, *_ in plan_of) + 1}, "
        f"limits {sum(c == 'limits' for c, *_ in plan_of)}); left behind by the kills "
        f"before recovery: {left_total}; after recovery: nothing; store integrity ok, "
        f"{len(uuids)} runs kept",
    )
    for row in rows:
        figure("crash trials", row)
