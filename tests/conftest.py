"""Shared fixtures: a private store per test (SQLite, or a database on the suite's own
PostgreSQL cluster), and a check that nothing is left mounted."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from iowall.recipes.limits.sizing import default_jobs
from iowall.store import Store
from iowall.tuning.guestmem import OFF_ORDER, REPORTING_ORDER, earlier_touch, reporting_order, touch
from iowall.tuning.knob_session import KnobSession

from .pg import TEMPLATE, Cluster, reap_stale

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (loop devices, mkfs, mount)")


def leftovers() -> dict[str, set[str]]:
    """Loop devices backed by iowall images, mounts under /run/iowall, images in /dev/shm,
    and the scratch directories of fio and the engine in $TMPDIR."""
    loops = set()
    for p in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            b = p.read_text().strip()
        except OSError:
            continue
        if "iowall-" in b:
            loops.add(f"{p.parent.parent.name}:{b}")
    with open("/proc/self/mounts") as f:
        mounts = {line.split()[1] for line in f if "/run/iowall" in line.split()[1]}
    images = {str(p) for p in Path("/dev/shm").glob("iowall-*")}
    tmp = Path(tempfile.gettempdir())
    scratch = {str(p) for pat in ("iowall-fio-*", "iowall-stream-*") for p in tmp.glob(pat)}
    return {"loops": loops, "mounts": mounts, "images": images, "scratch": scratch}


@contextmanager
def reporting_held_off(touch_bytes: int = 0) -> Iterator[bool]:
    """Free page reporting held off (restored after) and ``touch_bytes`` of free memory
    touched first, so that the page cache a measuring test allocates comes from memory the
    host has backed (see iowall.tuning.guestmem): not touched again when a touch under the hold
    still in force covered it; whether this VM reports at all."""
    with KnobSession() as ks:
        found = reporting_order()
        if found is not None:
            ks.set(REPORTING_ORDER, OFF_ORDER)
            if earlier_touch(found) is None:
                touch(touch_bytes)
        yield found is not None


@pytest.fixture(scope="session", autouse=True)
def reporting_hold(request: pytest.FixtureRequest) -> Iterator[KnobSession | None]:
    """Free page reporting held off for the whole session (root, on a VM that reports;
    restored at its end, or by `iowall recover` if the session is killed). Memory freed while
    it is off stays backed by the host, so the first guest-memory touch of the session (the
    first `limits`, `run` or `gate`: all hold guest memory by default) serves every later one
    (guestmem.TOUCHED): each would otherwise touch all free memory again, 20-30 s here."""
    # the guests' lane (the guests, then the fuzzers) measures nothing here and may end while
    # the lane beside it still runs: its hold, restored then, would move the knob under that
    # lane's tests
    if not ROOT or reporting_order() is None or request.config.option.markexpr in BACKGROUND_LANE:
        yield None
        return
    with KnobSession() as ks:
        ks.set(REPORTING_ORDER, OFF_ORDER)
        yield ks


#: Test directories that measure nothing on this machine: every test in them is ``beside``.
BESIDE_DIRS = ("unit", "fuzz", "engine")
#: make test's background lane in phase 1 (scripts/test-lanes.sh): its marker expression
#: (it takes no hold of free page reporting)
BACKGROUND_LANE = ("guests", "guests or fuzz")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Unit, fuzz and engine tests are marked ``beside``, fuzz tests ``fuzz`` too (make test's
    phase 1 selects by them); tests that let go of the session's reporting hold run last (in
    their order): one guest-memory touch then serves every test before them."""
    here = Path(__file__).parent
    for item in items:
        rel = Path(str(item.path)).relative_to(here) if Path(str(item.path)).is_relative_to(here) else None
        if rel is not None and rel.parts[0] in BESIDE_DIRS:
            item.add_marker(pytest.mark.beside)
        if rel is not None and rel.parts[0] == "fuzz":
            item.add_marker(pytest.mark.fuzz)
    items.sort(key=lambda item: "reporting_released" in getattr(item, "fixturenames", ()))


@pytest.fixture
def reporting_released(reporting_hold: KnobSession | None) -> Callable[[], AbstractContextManager[None]]:
    """A way to let go of the session's reporting hold for part of one test (taken again
    after, as a new hold: the next touch is made again): for tests of what `limits` does to
    the knob itself. Such tests run last, so that one touch serves every test before them;
    what they do under the session's hold, before letting go, is served by it too."""

    @contextmanager
    def released() -> Iterator[None]:
        if reporting_hold is None:
            yield
            return
        reporting_hold.restore()
        try:
            yield
        finally:
            reporting_hold.set(REPORTING_ORDER, OFF_ORDER)

    return released


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Fail the test if it leaves a loop device, a mount or an image behind."""
    before = leftovers()
    yield
    after = leftovers()
    for k in after:
        assert after[k] <= before[k], f"left behind {k}: {after[k] - before[k]}"


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A private SQLite store for one test."""
    return f"sqlite:///{tmp_path / 'iowall.db'}"


@pytest.fixture
def iowall_env(tmp_path: Path, db_url: str) -> dict[str, str]:
    """Environment for running the CLI as a child: private store, data and state dirs."""
    env = dict(os.environ)
    env.update(IOWALL_DB=db_url, XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))
    return env


def iowall(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI as a child process, the way a user does."""
    import sys

    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    cp = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if check:
        assert cp.returncode == 0, cp.stderr
    return cp


@pytest.fixture(scope="session")
def limits_quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, str]]:
    """One small `iowall limits` run shared by the tests that read a limits report: its JSON
    and the CLI environment of its store. The full run's job counts (1-4 on 2 CPUs; --quick
    alone would run 1, 2, 4), so that `iowall scaling` can fit the USL on it. It costs about
    two minutes, the guest-memory touch included, so it runs once."""

    tmp = tmp_path_factory.mktemp("limits")
    env = dict(
        os.environ,
        IOWALL_DB=f"sqlite:///{tmp / 'db.sqlite'}",
        XDG_DATA_HOME=str(tmp / "data"),
        XDG_STATE_HOME=str(tmp / "state"),
    )
    before = leftovers()
    cp = iowall(
        "limits",
        "--quick",
        "--jobs",
        ",".join(map(str, default_jobs(os.cpu_count() or 1))),
        "--repeat",
        "1",
        "--size",
        "3G",
        "--format",
        "json",
        env=env,
    )
    assert cp.returncode == 0, cp.stderr
    after = leftovers()
    assert all(after[k] <= before[k] for k in after), after
    return json.loads(cp.stdout), env


def killed_after_setting_dirty_ratio(value: str, state_home: Path) -> None:
    """A child iowall sets vm.dirty_ratio to ``value`` (journaled under ``state_home``) and
    is SIGKILLed before it can restore it: the crash the journal exists for."""
    import signal
    import sys

    code = (
        "import time\nfrom iowall.tuning.knob_session import KnobSession, parse_knob\n"
        f"KnobSession().set(parse_knob('sysctl:vm.dirty_ratio'), {value})\n"
        "print('set', flush=True)\ntime.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, XDG_STATE_HOME=str(state_home)),
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "set"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """The suite's own PostgreSQL server (tests/pg.py), started on first use, stopped and
    removed at the end of the session; its template database migrated once."""
    reap_stale()
    cluster = Cluster()
    try:
        cluster.start()
        Store(cluster.url(TEMPLATE)).engine.dispose()
        yield cluster
    finally:
        cluster.stop()


def _pg_database(request: pytest.FixtureRequest) -> Iterator[str]:
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    name = cluster.fresh_db()
    yield cluster.url(name)
    cluster.drop_db(name)


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    yield from _pg_database(request)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A private empty store for one test, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'iowall.db'}"
    else:
        yield request.getfixturevalue("pg_url")


@pytest.fixture
def store_url2(request: pytest.FixtureRequest, store_url: str, tmp_path: Path) -> str:
    """A second private empty store on the same backend as ``store_url``."""
    if store_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'iowall2.db'}"
    url: str = request.getfixturevalue("pg_url2")
    return url


@pytest.fixture
def pg_url2(request: pytest.FixtureRequest) -> Iterator[str]:
    """Another fresh PostgreSQL database for one test."""
    yield from _pg_database(request)


#: Figures tests measure and the docs quote (crash trials, …): printed at the end of the run.
FIGURES: dict[str, list[str]] = {}


def figure(section: str, line: str) -> None:
    """Record a line for the end-of-run section ``section`` (and print it for ``-s``)."""
    FIGURES.setdefault(section, []).append(line)
    print(line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for section, lines in FIGURES.items():
        terminalreporter.section(section)
        for line in lines:
            terminalreporter.write_line(line)
