"""What users read most, against golden files: `explain` (text and JSON) of stored runs at
several walls, `runs` and `show` of those runs, `locks` of two profiles, each through the CLI
on a private store, and `doctor`'s report of a fixed set of checks (golden files: regenerate
with IOWALL_UPDATE_GOLDEN=1 after a deliberate change, and review the diff).

The runs are real: a bundle of 15 runs of one `iowall limits` batch (tests/fixtures/bundles,
README.md there says how it was made), imported with `iowall import` as a user would."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from iowall.cli.main import main
from iowall.model import Artifact, Point, Run
from iowall.probes.locks import parse_contention
from iowall.report.doctor import Check, Doctor
from iowall.report.emit import render
from iowall.store import Store

from .test_compare import golden

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLE = FIXTURES / "bundles" / "limits_walls.json"

#: The runs explained, by their id in the store they were exported from (the batch's own
#: report names them in its 'Why' section): the golden files' names say the wall.
WALLS = {
    # buffered write (2x the dirty threshold), 3 jobs: waiting for writeback in fsync and
    # throttled (the device below), the memory-copy wall beside it
    "writeback_3_jobs": 71,
    # buffered write, 1 job: the memory-copy wall, waiting for writeback beside it
    "memcopy_write": 31,
    # buffered write, 2 jobs: waiting for writeback (neither fsync nor the throttle alone holds
    # 40% of the time: silent until 2026-12-01)
    "writeback_2_jobs": 149,
    # buffered write, 4 jobs: waiting for writeback, the memory-copy wall beside it
    "writeback_4_jobs": 77,
    # buffered read, 1 job: the memory-copy wall, device-bound at the loop worker beside it
    "memcopy_read": 90,
    # buffered read, 2 jobs: device-bound at the loop device's worker
    "device_loop_worker": 68,
    # buffered read, 4 jobs: device-bound, the device 100% busy
    "device_busy": 108,
}


@dataclass(frozen=True)
class Imported:
    """The private store the bundle was imported into, and each run's id there by its id in
    the store it was exported from."""

    url: str
    ids: dict[int, int]


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`runs` and `show` print a run's start in the local time zone (datetime.fromtimestamp):
    UTC here, whatever zone the machine is set to, and the zone restored after."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What ``iowall ARGS`` prints on stdout (it succeeds and says nothing on stderr)."""
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert (rc, err) == (0, ""), err
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    """The bundle imported into a new store once for the module, by `iowall import`. The
    store's path is a temporary directory's: passed with --db, printed by none of the
    commands goldened. The runs' ids are the new store's (1 to 15 in the bundle's order, on
    every import into an empty store): found by uuid, not assumed."""
    url = f"sqlite:///{tmp_path_factory.mktemp('golden') / 'iowall.db'}"
    assert main(["import", str(BUNDLE), "--db", url]) == 0
    source = {r["uuid"]: r["source_id"] for r in json.loads(BUNDLE.read_text())["runs"]}
    s = Store.existing(url)
    try:
        ids = {sid: s.id_of_uuid(uuid) for uuid, sid in source.items()}
    finally:
        s.close()
    assert None not in ids.values()
    return Imported(url, {sid: int(rid or 0) for sid, rid in ids.items()})


def _json(name: str, out: str) -> None:
    """A command's JSON against its golden file. The CLI prints it compact, on one line, for
    programs; the golden file holds it indented, to be read and diffed. Both are checked: the
    output must be exactly the compact form of the document the golden file holds."""
    doc = json.loads(out)
    assert out == json.dumps(doc, separators=(",", ":")) + "\n"
    golden(name, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("wall", WALLS)
def test_explain_text_matches_golden(wall: str, store: Imported, capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(capsys, "explain", str(store.ids[WALLS[wall]]), "--db", store.url)
    golden(f"explain_{wall}.txt", out)


@pytest.mark.parametrize("wall", WALLS)
def test_explain_json_matches_golden(wall: str, store: Imported, capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(capsys, "explain", str(store.ids[WALLS[wall]]), "--format", "json", "--db", store.url)
    _json(f"explain_{wall}.json", out)


def test_runs_text_matches_golden(store: Imported, capsys: pytest.CaptureFixture[str]) -> None:
    golden("runs_text.txt", _cli(capsys, "runs", "--db", store.url))


def test_show_text_matches_golden(store: Imported, capsys: pytest.CaptureFixture[str]) -> None:
    golden(
        "show_text.txt",
        _cli(capsys, "show", str(store.ids[WALLS["writeback_3_jobs"]]), "--db", store.url),
    )


def test_show_json_matches_golden(store: Imported, capsys: pytest.CaptureFixture[str]) -> None:
    out = _cli(
        capsys,
        "show",
        str(store.ids[WALLS["writeback_3_jobs"]]),
        "--format",
        "json",
        "--db",
        store.url,
    )
    _json("show.json", out)


# ------------------------------------------------------------------------------ locks


def _lock_run(label: str, table: str, started: float) -> Run:
    """A run carrying the locks probe's table as the probe stores it (lock_contention.json:
    the parsed rows of `perf lock contention`) and nothing else `locks` reads."""
    rows = sorted(parse_contention(table), key=lambda r: -r["total_wait_s"])
    return Run(
        point=Point("bdev-rwmix", {"rw": "randrw", "jobs": 8}),
        label=label,
        status="ok",
        started_at=started,
        finished_at=started + 60,
        artifacts=(Artifact("lock_contention.json", "application/json", json.dumps(rows, indent=1)),),
    )


@pytest.fixture
def locks_store(db_url: str) -> str:
    """Seed 000's two `perf lock contention` tables (a block device under mixed I/O, on the
    default kernel and a patched one), each the profile of one run of its label."""
    s = Store(db_url)
    try:
        s.add_runs(
            [
                _lock_run(
                    "default", (FIXTURES / "probes" / "seed000_perf_lock_default.txt").read_text(), 1.7e9
                ),
                _lock_run(
                    "patched",
                    (FIXTURES / "probes" / "seed000_perf_lock_patched.txt").read_text(),
                    1.7e9 + 100,
                ),
            ]
        )
    finally:
        s.close()
    return db_url


def test_locks_text_matches_golden(locks_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    golden("locks_text.txt", _cli(capsys, "locks", "default", "patched", "--db", locks_store))


def test_locks_json_matches_golden(locks_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    _json("locks.json", _cli(capsys, "locks", "default", "patched", "--format", "json", "--db", locks_store))


# ------------------------------------------------------------------------------ doctor

#: The checks `iowall doctor` makes (cli/doctor.py: each reads the machine), fixed here as one
#: machine's results: the report's lines, not the machine, are what is goldened. Root on a
#: machine set up by `make setup`, without the optional btrfs-progs and fs_mark.
READY = (
    Check(
        "root",
        True,
        "uid 0",
        "ram/loop/tmpfs beds, cache drops, knobs, tracefs probes",
        "run as root (or use --bed dir:PATH)",
    ),
    Check("fio", True, "fio 3.33 (/usr/bin/fio)", "every I/O workload", "apt-get install fio", True),
    Check("iowall-engine", True, "/work/src/iowall/_bin/iowall-engine", "", "", True),
    Check("mkfs.xfs", True, "/usr/sbin/mkfs.xfs", "--fs xfs (the default)", "apt-get install xfsprogs", True),
    Check("mkfs.ext4", True, "/usr/sbin/mkfs.ext4", "--fs ext4", "apt-get install e2fsprogs"),
    Check("mkfs.btrfs", False, "not found", "--fs btrfs", "apt-get install btrfs-progs"),
    Check("losetup", True, "/usr/sbin/losetup", "ram and loop beds", "apt-get install util-linux", True),
    Check("perf", True, "/usr/bin/perf", "the locks and profile probes", "apt-get install linux-perf"),
    Check(
        "inferno",
        True,
        "/work/.venv/bin/inferno-flamegraph",
        "the profile probe, iowall plot flame",
        "make setup (cargo install inferno)",
    ),
    Check("fs_mark", False, "not found", "the engine-vs-fs_mark benchmark", "apt-get install fsmark"),
    Check("tracefs", True, "mounted", "throttle probe (balance_dirty_pages)", "run as root"),
    Check(
        "balance_dirty_pages tracepoint",
        True,
        "/sys/kernel/tracing/events/writeback/balance_dirty_pages",
        "throttle probe",
        "a kernel with CONFIG_TRACING",
    ),
    Check(
        "lock contention tracepoints",
        True,
        "/sys/kernel/tracing/events/lock/contention_begin",
        "locks probe",
        "a kernel with CONFIG_LOCKDEP or lock tracepoints",
    ),
    Check(
        "io_uring",
        True,
        "enabled",
        "the io_uring engine of limits and buffered-wall",
        "sysctl kernel.io_uring_disabled=0",
        True,
    ),
    Check(
        "loop devices",
        True,
        "/dev/loop-control present, 7 free now",
        "ram and loop beds",
        "modprobe loop",
        True,
    ),
    Check("memory", True, "23.5 GiB total, 21.2 GiB available, /dev/shm 11.7 GiB free", "", ""),
    Check("disk", True, "41.3 GiB free in /root/.local/share/iowall (the store's directory)", "", ""),
)

#: A user's account on a fresh machine: not root (limits can use only --bed dir:PATH, so
#: mkfs.xfs is not needed by it), fio missing, io_uring disabled, tracefs not mounted, the
#: store on a PostgreSQL server: limits cannot run.
NOT_READY = (
    Check(
        "root",
        False,
        "uid 1000",
        "ram/loop/tmpfs beds, cache drops, knobs, tracefs probes",
        "run as root (or use --bed dir:PATH)",
    ),
    Check("fio", False, "not found", "every I/O workload", "apt-get install fio", True),
    Check(
        "iowall-engine",
        True,
        "/home/u/.venv/lib/python3.11/site-packages/iowall/_bin/iowall-engine",
        "",
        "",
        True,
    ),
    Check(
        "mkfs.xfs", True, "/usr/sbin/mkfs.xfs", "--fs xfs (the default)", "apt-get install xfsprogs", False
    ),
    Check("perf", False, "not found", "the locks and profile probes", "apt-get install linux-perf"),
    Check("tracefs", False, "not mounted", "throttle probe (balance_dirty_pages)", "run as root"),
    Check(
        "io_uring",
        False,
        "disabled by sysctl",
        "the io_uring engine of limits and buffered-wall",
        "sysctl kernel.io_uring_disabled=0",
        True,
    ),
    Check("disk", True, "the store is postgresql://iowall:***@db/iowall, not a file here", "", ""),
)


@pytest.mark.parametrize("name, checks", [("ready", READY), ("not_ready", NOT_READY)])
def test_doctor_text_matches_golden(name: str, checks: tuple[Check, ...]) -> None:
    golden(f"doctor_{name}.txt", render(Doctor(checks), "text"))


def test_doctor_json_matches_golden() -> None:
    _json("doctor_not_ready.json", render(Doctor(NOT_READY), "json"))
