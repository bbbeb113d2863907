"""Faults from outside, injected at random moments into real `iowall run` jobs (real fio on a
ram bed), and what became of every run measured: stored, imported from the spool, lost,
stored twice; and whether each fault was said in one line, never a traceback (issue 38).

    sudo .venv/bin/python benchmarks/faults.py [--trials 5] [--seed 1]

Faults: the store's filesystem filling (a 9 MiB tmpfs, dd'd full), the suite's own
PostgreSQL stopped and started again (down 1-5 s), SIGKILL of iowall's whole process group,
the bed's filesystem filling (fio's own ENOSPC), and with ``--faults guest`` a guest of
`iowall ab` killed mid-run (its qemu SIGKILLed within 8 s of its first measured run; one
kernel against itself, emulated, one round: about 4 minutes a trial) and with ``--faults
fleet`` a fleet host killed mid-run (one host, a network namespace reached by ansible-core
over SSH as in the suite, tests/fleet_hosts.py; its `iowall run` SIGKILLed within 6 s of its
first measured run, then the fleet run again: 2-3 minutes a trial, the host's install
included). Each `run` trial: a
plan of two points, three rounds; the fault at a uniform moment within 6 s of the job's
store being opened; then `iowall recover` (a killed job's bed) and `iowall runs` (imports
what the spool holds).

Counting: *measured* is every uuid seen in the spool (polled every 10 ms: a run is spooled
the moment it is measured, before the store is asked; a guest's spool is in its boot's
shared directory), in the store or imported; a run spooled and stored within one poll is
counted from the store. *lost* = measured, not in the store at the end. *dup* = rows beyond
one per uuid. For the fleet, *measured* also counts the host's attempt stores (polled every
50 ms), and *from the spool* counts the runs of the killed attempt that the rerun carried
into the controller's store.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.fleet_hosts import PLAN as HOST_PLAN  # noqa: E402
from tests.fleet_hosts import attempt_uuids, hosts, inventory, kill_iowall_run  # noqa: E402
from tests.guests import KERNELS as GUEST_KERNELS  # noqa: E402
from tests.guests import OLD, bundle_uuids, qemus_naming  # noqa: E402
from tests.guests import PLAN as GUEST_TINY  # noqa: E402
from tests.pg import Cluster  # noqa: E402  (the suite's throw-away PostgreSQL)

from iowall.store import Store  # noqa: E402

EXE = str(Path(sys.executable).with_name("iowall"))

PLAN = """
label = "faults"
repeat = 3
probes = ["default"]
[workload]
kind = "fio"
rw = "write"
bs = "1M"
size = "{size}"
direct = 0
[bed]
kind = "ram"
fs = "xfs"
size = "{bed}"
[axes]
jobs = [1, 2]
"""


@dataclass
class Trial:
    """One job with one fault, and what became of its runs."""

    fault: str
    at_s: float
    rc: int = 0
    measured: int = 0
    stored: int = 0
    imported: int = 0
    lost: int = 0
    dup: int = 0
    tracebacks: int = 0
    said: str = ""
    seen: set[str] = field(default_factory=set)


def _watch(spool: Path, seen: set[str], stop: threading.Event) -> None:
    """Every uuid that appears in a spool file, polled every 10 ms."""
    while not stop.is_set():
        seen.update(bundle_uuids(spool.glob("*/*.json")))
        time.sleep(0.01)


def _wait_for_store(url: str, child: subprocess.Popen[str]) -> None:
    """Until the job's store exists (its start-up done: the plan read, the store opened)."""
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else None
    deadline = time.monotonic() + 60
    while (
        path is not None and not os.path.exists(path) and child.poll() is None and time.monotonic() < deadline
    ):
        time.sleep(0.01)


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], env=env, capture_output=True, text=True, timeout=600)


def trial(fault: str, rng: random.Random, work: Path, cluster: Cluster | None) -> Trial:
    """One job of ``fault`` (fill, pg, kill, bedfill)."""
    tmp = Path(tempfile.mkdtemp(dir=work))
    mnt = tmp / "store"
    mnt.mkdir()
    db_name = ""
    if fault == "fill":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=9m", "tmpfs", str(mnt)], check=True)
        url = f"sqlite:///{mnt / 's.db'}"
    elif fault == "pg":
        assert cluster is not None
        db_name = cluster.fresh_db()
        url = cluster.url(db_name)
    else:
        url = f"sqlite:///{mnt / 's.db'}"
    env = dict(os.environ, IOWALL_DB=url, XDG_DATA_HOME=str(tmp / "data"), XDG_STATE_HOME=str(tmp / "state"))
    plan = tmp / "p.toml"
    plan.write_text(
        PLAN.format(
            size="900M" if fault == "bedfill" else "64M", bed="400M" if fault == "bedfill" else "512M"
        )
    )
    t = Trial(fault, round(rng.uniform(0.0, 6.0), 2) if fault != "bedfill" else 0.0)
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(tmp / "data" / "iowall" / "spool", t.seen, stop), daemon=True
    )
    watcher.start()
    child = subprocess.Popen(
        [EXE, "run", str(plan), "--no-hold-memory", "--wait"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if fault != "bedfill":
        _wait_for_store(url, child)
        deadline = time.monotonic() + t.at_s
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        if child.poll() is not None:
            t.said = "(the job ended before the fault)"
        elif fault == "fill":
            subprocess.run(
                ["dd", "if=/dev/zero", f"of={mnt / 'fill'}", "bs=64k"], capture_output=True, check=False
            )
        elif fault == "pg":
            assert cluster is not None
            cluster.bounce(rng.uniform(1.0, 5.0))
        elif fault == "kill":
            os.killpg(child.pid, signal.SIGKILL)
    _, err = child.communicate(timeout=900)
    t.rc = child.returncode
    stop.set()
    watcher.join()
    errs = [err]
    if fault == "fill":
        (mnt / "fill").unlink(missing_ok=True)
    if fault == "kill":
        errs.append(_run(["recover"], env).stderr)
    after = _run(["runs"], env)
    errs.append(after.stderr)
    imported = [ln for ln in after.stderr.splitlines() if "imported" in ln and "from the spool" in ln]
    t.imported = int(imported[0].split()[2]) if imported else 0
    runs = Store(url).runs()
    uuids = [r.uuid for r in runs]
    t.stored = len(set(uuids))
    t.dup = len(uuids) - len(set(uuids))
    t.measured = len(t.seen | set(uuids))
    t.lost = len(t.seen - set(uuids))
    t.tracebacks = sum("Traceback" in e for e in errs)
    if not t.said:
        lines = [ln for ln in err.splitlines() if ln.startswith("iowall:") and "% done" not in ln]
        t.said = (
            lines[-1][:100]
            if lines
            else ("(killed: no word from a SIGKILLed process)" if fault == "kill" else "")
        )
    if fault == "fill":
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    if db_name and cluster is not None:
        cluster.drop_db(db_name)
    shutil.rmtree(tmp, ignore_errors=True)
    return t


#: ab's kernels, fetched once and kept between runs (the suite's cache: tests/guests.py)
KERNELS = Path(GUEST_KERNELS)
KERNEL = KERNELS / OLD / "boot" / "vmlinuz-6.1.0-50-amd64"
GUEST_PLAN = GUEST_TINY.replace("repeat = 1", "repeat = 3")


def guest_trial(rng: random.Random, work: Path) -> Trial:
    """`iowall ab` of one kernel against itself, one round, three repeats a boot (emulated);
    the first guest's qemu SIGKILLed at a uniform moment within 8 s of its first measured run.
    Measured: every uuid its spool wrote to the boot's shared directory, and every run of A
    the store has."""
    tmp = Path(tempfile.mkdtemp(dir=work))
    cache = tmp / "cache"
    (cache / "iowall").mkdir(parents=True)
    (cache / "iowall" / "ab").symlink_to(KERNELS)
    url = f"sqlite:///{tmp / 's.db'}"
    env = dict(
        os.environ,
        IOWALL_DB=url,
        XDG_DATA_HOME=str(tmp / "data"),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CACHE_HOME=str(cache),
    )
    plan = tmp / "p.toml"
    plan.write_text(GUEST_PLAN)
    t = Trial("guest", round(rng.uniform(0.0, 8.0), 2))
    child = subprocess.Popen(
        [EXE, "ab", "--kernel", str(KERNEL), "--kernel", str(KERNEL), "--rounds", "1", "--allow-emulated",
         "--cpus", "1", "--memory", "2G", "--probes", "cpu,vmstat", "--timeout", "900", str(plan)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    runs_dir = KERNELS / "runs"
    before = set(runs_dir.iterdir()) if runs_dir.is_dir() else set()
    first = None
    deadline = time.monotonic() + 600
    while child.poll() is None and time.monotonic() < deadline:
        new = [d for d in runs_dir.iterdir() if d not in before] if runs_dir.is_dir() else []
        spooled = [f for d in new for f in d.glob("r1-A/spool/*/*.json")]
        t.seen |= bundle_uuids(spooled)
        if spooled and first is None:
            first = time.monotonic()
        if first is not None and time.monotonic() - first >= t.at_s:
            pids = [p for d in new for p in qemus_naming(str(d / "r1-A"))]
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            if not pids:
                t.said = "(the guest ended before the fault)"
            break
        time.sleep(0.05)
    _, err = child.communicate(timeout=1800)
    t.rc = child.returncode
    for d in runs_dir.iterdir() if runs_dir.is_dir() else ():
        if d not in before:
            t.seen |= bundle_uuids(d.glob("r1-A/spool/*/*.json"))
            shutil.rmtree(d, ignore_errors=True)
    stored = [r for r in Store(url).runs() if r.label.endswith("@A")]
    uuids = [r.uuid for r in stored if r.status == "ok"]
    t.stored = len(set(uuids))
    t.dup = len(uuids) - len(set(uuids))
    t.measured = len(t.seen | set(uuids))
    t.lost = len(t.seen - set(uuids))
    t.tracebacks = int("Traceback" in err)
    if not t.said:
        lines = [ln for ln in err.splitlines() if "FAILED" in ln]
        t.said = lines[0][:140] if lines else "(no failure said)"
    shutil.rmtree(tmp, ignore_errors=True)
    return t


FLEET_PLAN = HOST_PLAN.replace("repeat = 1", "repeat = 20")


def _host_spool(h_home: Path) -> set[str]:
    """The uuids in a fleet host's spool (its XDG_DATA_HOME is under its home)."""
    return bundle_uuids((h_home / "data" / "iowall" / "spool").glob("*/*.json"))


def fleet_trial(rng: random.Random, work: Path) -> Trial:
    """`iowall fleet run` of twenty runs on one host (about half a second each); the host's
    `iowall run` SIGKILLed at a uniform moment within 6 s of its first measured run (seen in
    its spool or attempt store); then the same fleet run again, which must carry the killed
    attempt's runs over."""
    tmp = Path(tempfile.mkdtemp(dir=work))
    url = f"sqlite:///{tmp / 's.db'}"
    t = Trial("fleet", round(rng.uniform(0.0, 6.0), 2))
    with hosts(tmp, (("fleet-a", "0,1"),)) as (made, key):
        h = made[0]
        inv = inventory(made, key, tmp / "inventory.yml")
        plan = tmp / "twenty.toml"
        plan.write_text(FLEET_PLAN)
        env = dict(
            os.environ,
            IOWALL_DB=url,
            XDG_DATA_HOME=str(tmp / "data"),
            XDG_STATE_HOME=str(tmp / "state"),
            ANSIBLE_HOME=str(tmp / "ansible-home"),
            ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-local"),
            ANSIBLE_SSH_ARGS="-o ControlMaster=no",
        )
        args = ["fleet", "run", str(inv), str(plan), "--label", "faults-fleet", "--db", url]
        h.start()
        child = subprocess.Popen(
            [EXE, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        first, killed, deadline = None, False, time.monotonic() + 900
        while child.poll() is None and time.monotonic() < deadline and not killed:
            t.seen |= _host_spool(h.home) | attempt_uuids(h)
            if t.seen and first is None:
                first = time.monotonic()
            if first is not None and time.monotonic() - first >= t.at_s:
                killed = kill_iowall_run(h)
            time.sleep(0.05)
        _, err = child.communicate(timeout=900)
        t.rc = child.returncode
        t.seen |= attempt_uuids(h)
        again = _run(args, env)
        errs = [err, again.stderr]
        stored = [r.uuid for r in Store(url).runs()]
    t.stored = len(set(stored))
    t.dup = len(stored) - len(set(stored))
    t.measured = len(t.seen | set(stored))
    t.lost = len(t.seen - set(stored))
    t.imported = len(t.seen & set(stored)) if killed else 0
    t.tracebacks = sum("Traceback" in e for e in errs)
    lines = [ln for ln in err.splitlines() if "] fleet-a: " in ln]
    t.said = (
        "(the host's run ended before the fault)"
        if not killed
        else (lines[-1].split("] ", 1)[1][:120] if lines else "(no line for the host)")
    )
    if again.returncode != 0:
        t.said += f"; the rerun exited {again.returncode}"
    shutil.rmtree(tmp, ignore_errors=True)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5, help="jobs per fault")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default="fill,pg,kill,bedfill", help="of fill,pg,kill,bedfill,guest,fleet")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("faults.py: needs root (beds, tmpfs mounts)")
    rng = random.Random(a.seed)
    work = Path(tempfile.mkdtemp(prefix="iowall-faults-"))
    cluster: Cluster | None = None
    faults = a.faults.split(",")
    whole = {"guest": guest_trial, "fleet": fleet_trial}  # trials that make their own store
    if unknown := set(faults) - {"fill", "pg", "kill", "bedfill", *whole}:
        raise SystemExit(f"faults.py: unknown fault {', '.join(sorted(unknown))}")
    rows: list[Trial] = []
    try:
        if "pg" in faults:
            cluster = Cluster()
            cluster.start()
        for i in range(a.trials):
            for f in faults:
                t = whole[f](rng, work) if f in whole else trial(f, rng, work, cluster)
                rows.append(t)
                print(
                    f"{f:8s} #{i + 1} at {t.at_s:5.2f} s: exit {t.rc:3d}, measured {t.measured}, "
                    f"stored {t.stored}, imported {t.imported}, lost {t.lost}, dup {t.dup}, "
                    f"tracebacks {t.tracebacks}; {t.said}",
                    flush=True,
                )
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| fault | jobs | measured | stored | from the spool | lost | twice | tracebacks | exits |")
    print("|---|---|---|---|---|---|---|---|---|")
    for f in faults:
        ts = [t for t in rows if t.fault == f]
        codes = ", ".join(sorted({str(t.rc) for t in ts}))
        print(
            f"| {f} | {len(ts)} | {sum(t.measured for t in ts)} | {sum(t.stored for t in ts)} | "
            f"{sum(t.imported for t in ts)} | {sum(t.lost for t in ts)} | {sum(t.dup for t in ts)} | "
            f"{sum(t.tracebacks for t in ts)} | {codes} |"
        )
    if "guest" not in faults:
        print("| guest killed mid-ab | not in this run (--faults guest) | | | | | | | |")
    if "fleet" not in faults:
        print("| fleet host killed mid-run | not in this run (--faults fleet) | | | | | | | |")
    bad = sum(t.lost + t.dup + t.tracebacks for t in rows)
    print(f"\ngoal: 0 lost, 0 stored twice, 0 tracebacks: {'met' if not bad else 'NOT met'}")


if __name__ == "__main__":
    main()
