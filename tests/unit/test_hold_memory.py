"""Guest memory is held by every measuring command by default (issue 36, "noise at the
source"): `limits`, `run`, `gate`, the guests of `ab` and the hosts of `fleet run` take
--hold-memory/--no-hold-memory, True unless told; what the report says about it
(``session.memory_note``); `run` holds it around any target but a recipe that holds it itself
(limits), and the knob is restored however the run ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import iowall.actions.ab
import iowall.actions.target
import iowall.cli.ab
import iowall.cli.fleet
import iowall.cli.gate
import iowall.cli.limits
import iowall.cli.run
from iowall.actions.target import Target, execute
from iowall.cli.main import main
from iowall.fleet.drive import FleetSpec
from iowall.measure import session
from iowall.plan import Plan, Workload
from iowall.recipes.options import RecipeOptions
from iowall.recipes.registry import Recipe
from iowall.results import Report
from iowall.store import Store
from iowall.tuning import guestmem
from iowall.tuning.guestmem import GuestMemory
from iowall.tuning.knob_session import KnobSession
from iowall.vocab.errors import UserError
from iowall.vocab.knob import Knob
from iowall.vocab.progress import Progress
from iowall.vocab.units import GIB

ROOT = Path(__file__).resolve().parents[2]
#: Every command that measures, as typed, with what makes it reach its action.
MEASURING = {
    "run": ["run", "buffered-wall"],
    "gate": ["gate", "buffered-wall", "--baseline", "label=base"],
    "limits": ["limits"],
    "ab": ["ab", "buffered-wall", "--kernel", "a", "--kernel", "b"],
    "fleet run": ["fleet", "run", "hosts.yml", "buffered-wall"],
}


class _Stop(UserError):
    """Raised by a stand-in action once it has seen what the command passed it."""


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Each command's action replaced by one that records whether guest memory is to be
    held, then stops the command (exit 2) before anything is opened or measured."""
    got: dict[str, Any] = {}

    def stop(key: str, value: Any) -> Any:
        got[key] = value
        raise _Stop("stopped")

    class NoStore:
        def __init__(self, *_a: object) -> None:
            pass

        @classmethod
        def existing(cls, *_a: object) -> NoStore:
            return cls()

    monkeypatch.setattr(iowall.cli.run, "prepare", lambda *a, **k: None)
    monkeypatch.setattr(iowall.cli.run, "Store", NoStore)
    monkeypatch.setattr(iowall.cli.run, "execute", lambda *a: stop("run", a[4]))
    monkeypatch.setattr(iowall.cli.gate, "Store", NoStore)
    monkeypatch.setattr(iowall.cli.gate, "gate_runs", lambda *a, **k: stop("gate", k["hold_memory"]))
    monkeypatch.setattr(iowall.cli.limits, "prepare_limits", lambda **k: None)
    monkeypatch.setattr(iowall.cli.limits, "Store", NoStore)
    monkeypatch.setattr(iowall.cli.limits, "execute", lambda *a: stop("limits", a[4]))
    monkeypatch.setattr(iowall.cli.ab, "run_ab", lambda *a, **k: stop("ab", k["hold_memory"]))
    monkeypatch.setattr(iowall.cli.fleet, "Store", NoStore)
    monkeypatch.setattr(iowall.cli.fleet, "run_fleet", lambda spec, *a: stop("fleet run", spec.hold_memory))
    return got


@pytest.mark.parametrize("cmd", list(MEASURING))
def test_every_measuring_command_holds_guest_memory_unless_told(
    cmd: str, seen: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for flags, held in (([], True), (["--hold-memory"], True), (["--no-hold-memory"], False)):
        seen.clear()
        assert main([*MEASURING[cmd], *flags]) == 2, capsys.readouterr().err
        assert seen == {cmd: held}, flags
    capsys.readouterr()


@pytest.mark.parametrize("cmd", list(MEASURING))
def test_help_names_both_flags_and_the_default(cmd: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*cmd.split(), "-h"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())  # rich's box, unwrapped
    assert "--hold-memory" in out and "--no-hold-memory" in out, out
    assert "default: hold-memory" in out, out


def test_ab_tells_its_guests_only_when_told_not_to_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each guest runs `iowall run`, which holds by default: --no-hold-memory is passed on."""
    configs: list[Any] = []

    def rounds(cfg: Any, *_a: object) -> None:
        configs.append(cfg)
        raise _Stop("stopped")

    ab = iowall.actions.ab
    monkeypatch.setattr(ab, "vng_path", lambda: "vng")
    monkeypatch.setattr(ab, "_recipe_of", lambda target: target)
    monkeypatch.setattr(ab, "cache_dir", lambda: str(tmp_path))
    monkeypatch.setattr(ab, "resolve", lambda k, cache: SimpleNamespace(release=k, image=k, name=k))
    monkeypatch.setattr(ab, "_kvm", lambda pair, allow: (True, "works"))
    monkeypatch.setattr(ab, "Store", lambda db: None)
    monkeypatch.setattr(ab, "run_rounds", rounds)
    args: dict[str, Any] = dict(
        rounds=1,
        cpus=1,
        memory="1G",
        allow_emulated=False,
        quick=True,
        probes="none",
        flame=None,
        timeout=60.0,
        boot_timeout=60.0,
        boot_attempts=1,
    )
    for hold in (True, False):
        with pytest.raises(_Stop):
            ab.run_ab("buffered-wall", ["a", "b"], None, lambda s: None, hold_memory=hold, **args)
    held, not_held = (c.run_opts for c in configs)
    assert "--no-hold-memory" not in held and "--hold-memory" not in held
    assert not_held[-1] == "--no-hold-memory"


def test_fleet_passes_the_choice_to_every_host() -> None:
    assert FleetSpec("hosts.yml", "buffered-wall").hold_memory is True
    role = (ROOT / "fleet" / "roles" / "run" / "tasks" / "main.yml").read_text()
    assert "([] if iowall_hold_memory | bool else ['--no-hold-memory'])" in role
    defaults = (ROOT / "fleet" / "roles" / "common" / "defaults" / "main.yml").read_text()
    assert "iowall_hold_memory: true" in defaults.splitlines()


@pytest.fixture
def vm(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The reporting order and root as ``memory_note`` sees them, faked."""
    state: dict[str, Any] = {"order": "9", "root": True}
    monkeypatch.setattr(session, "reporting_order", lambda: state["order"])
    monkeypatch.setattr(guestmem, "reporting_order", lambda: state["order"])
    monkeypatch.setattr(guestmem.os, "geteuid", lambda: 0 if state["root"] else 1000)
    return state


def test_the_note_when_the_hold_is_turned_off(vm: dict[str, Any]) -> None:
    said = session.memory_note(False, None)
    assert said == session.HOST_RECLAIMS
    assert said.startswith("this VM hands freed memory back to its host (free page reporting)")
    assert "turned off by --no-hold-memory" in said and "give --hold-memory" not in said
    vm["order"] = None  # bare metal: nothing to warn of
    assert session.memory_note(False, None) is None
    vm["order"] = "11"  # held off already (by a wrapper: make test's session)
    assert session.memory_note(False, None) is None


def test_the_note_when_the_hold_is_on(vm: dict[str, Any]) -> None:
    gm = GuestMemory("9", 4 * GIB, 2.0, 4 * GIB)
    assert session.memory_note(True, gm) == gm.note()
    vm["order"] = None
    assert session.memory_note(True, None) == (
        "guest memory: nothing to hold, this machine does no free page reporting"
    )
    vm.update(order="9", root=False)
    said = session.memory_note(True, None)
    assert said is not None and said.startswith("guest memory: not held (not root): this VM hands")
    vm["order"] = "11"
    assert session.memory_note(True, None) == (
        "guest memory: not held (not root): free page reporting is off already, but no free "
        "memory was touched"
    )


def test_an_unregistered_reporting_order_is_no_reporting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Newer kernels show -1 until a device registers (bare metal): nothing to hold there,
    and no write of the knob, which such a kernel may refuse."""
    knob = tmp_path / "page_reporting_order"
    monkeypatch.setattr(guestmem, "REPORTING_ORDER", Knob("sysfs", str(knob)))
    assert guestmem.reporting_order() is None  # no such parameter
    for shown, order in (("-1\n", None), ("9\n", "9"), ("11\n", "11")):
        knob.write_text(shown)
        assert guestmem.reporting_order() == order
    knob.write_text("-1\n")
    monkeypatch.setattr(guestmem.os, "geteuid", lambda: 0)
    with KnobSession() as ks:
        assert guestmem.hold_guest_memory(ks) is None
        assert ks.in_force == {}


#: `execute` hands the store to the target only, which these fakes do not use.
NO_STORE = Store("sqlite://")  # in memory: nothing to keep, room enough


def _shown(title: str) -> Progress:
    return Progress()


@contextmanager
def _no_lock(*_a: object) -> Iterator[None]:
    yield


def _target(recipe: Recipe) -> Target:
    return Target(recipe.name, recipe.name, None, recipe, RecipeOptions())


@pytest.fixture
def under_execute(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``execute`` with no machine lock or journal, the hold faked: what it held, in which
    KnobSession, and the session's state when the recipe ran and after."""
    got: dict[str, Any] = {"holds": 0}

    def hold(ks: KnobSession, progress: Progress, need: int | None = None) -> GuestMemory:
        got["holds"] += 1
        got["ks"] = ks
        got["need"] = need
        return GuestMemory("9", 4 * GIB, 2.0, 4 * GIB)

    monkeypatch.setattr(iowall.actions.target, "exclusive", _no_lock)
    monkeypatch.setattr(iowall.actions.target.journal, "recover", lambda: None)
    monkeypatch.setattr(iowall.actions.target, "hold_memory_step", hold)
    monkeypatch.setattr(session, "reporting_order", lambda: "9")
    return got


def test_run_holds_before_the_recipe_and_says_so(under_execute: dict[str, Any]) -> None:
    def body(opts: RecipeOptions, *_a: object) -> Report:
        under_execute["opts"] = opts
        return Report("recipe", "fake", "fake", notes=("the recipe's note",))

    report = execute(_target(Recipe("fake", "000", "", body)), NO_STORE, _shown)
    said = GuestMemory("9", 4 * GIB, 2.0, 4 * GIB).note()
    assert under_execute["holds"] == 1 and under_execute["opts"].hold_memory is True
    assert under_execute["need"] is None  # a recipe's allocation is not known: all free memory
    assert report.notes == ("the recipe's note", said)
    assert report.data["guest_memory"] == said

    under_execute["holds"] = 0
    report = execute(_target(Recipe("fake", "000", "", body)), NO_STORE, _shown, hold_memory=False)
    assert under_execute["holds"] == 0 and under_execute["opts"].hold_memory is False
    assert report.notes == ("the recipe's note", session.HOST_RECLAIMS)


def test_a_recipe_that_holds_memory_itself_is_told_not_held_twice(under_execute: dict[str, Any]) -> None:
    """`run limits`: limits holds guest memory at its own step and says so in its report."""

    def body(opts: RecipeOptions, *_a: object) -> Report:
        under_execute["opts"] = opts
        return Report("limits", "limits", "limits")

    for hold in (True, False):
        report = execute(
            _target(Recipe("own", "002", "", body, holds_memory=True)),
            NO_STORE,
            _shown,
            hold_memory=hold,
        )
        assert under_execute["holds"] == 0 and under_execute["opts"].hold_memory is hold
        assert report.notes == () and "guest_memory" not in report.data


@pytest.mark.parametrize("end", [OSError("the bed went away"), KeyboardInterrupt()], ids=repr)
def test_the_hold_is_restored_however_the_run_ends(
    end: BaseException, under_execute: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hold's KnobSession (free page reporting's order) is restored on the way out."""
    restored: list[KnobSession] = []
    real = KnobSession.restore

    def restore(self: KnobSession) -> None:
        restored.append(self)
        real(self)

    def body(opts: RecipeOptions, *_a: object) -> Report:
        raise end

    monkeypatch.setattr(KnobSession, "restore", restore)
    with pytest.raises(type(end)):
        execute(_target(Recipe("fake", "000", "", body)), NO_STORE, _shown)
    assert under_execute["holds"] == 1 and under_execute["ks"] in restored


def test_no_reporting_device_is_no_reporting(tmp_path: Path) -> None:
    """An older kernel shows order 11 with no device registered (an emulated guest with no
    balloon): only a bound virtio balloon offering VIRTIO_BALLOON_F_REPORTING (bit 5) or a
    Hyper-V balloon reports free pages; without one there is nothing to hold or touch."""
    bus = tmp_path / "bus"
    virtio = bus / "virtio" / "drivers" / "virtio_balloon"
    hyperv = bus / "vmbus" / "drivers" / "hv_balloon"
    assert guestmem.reporting_device(virtio, hyperv) is None  # neither bus: the order decides
    virtio.mkdir(parents=True)
    assert guestmem.reporting_device(virtio, hyperv) is False  # no balloon bound
    dev = virtio / "virtio0"
    dev.mkdir()
    (dev / "features").write_text("0110000000\n")  # deflate on OOM, stats: no reporting
    assert guestmem.reporting_device(virtio, hyperv) is False
    (dev / "features").write_text("0110010100\n")  # as this VM's balloon offers
    assert guestmem.reporting_device(virtio, hyperv) is True
    (dev / "features").unlink()
    hyperv.mkdir(parents=True)
    (hyperv / "module").symlink_to(tmp_path)
    assert guestmem.reporting_device(virtio, hyperv) is False
    (hyperv / "1eccfd72-4b41-45ef-b73a-4a6e44c12924").symlink_to(tmp_path)
    assert guestmem.reporting_device(virtio, hyperv) is True


def test_a_plan_touches_what_it_can_allocate(
    under_execute: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan's hold is told the plan's ``memory_need`` (twice its 1 GiB ram bed and 1 GiB);
    a plan iowall cannot bound (verbatim fio options) touches all free memory."""
    ran: list[Plan] = []
    monkeypatch.setattr(iowall.actions.target, "run_plan", lambda plan, *_a: ran.append(plan))
    monkeypatch.setattr(iowall.actions.target, "plan_report", lambda _res: Report("plan", "p", "p"))
    plan = Plan(label="p", workload=Workload(params={"rw": "write", "size": "64M"}))
    execute(Target("p.toml", "plan p", plan, None, RecipeOptions()), NO_STORE, _shown)
    assert under_execute["need"] == 3 * GIB and ran == [plan]
    opaque = Plan(label="p", workload=Workload(params={"rw": "write", "size": "64M"}, options={"nrfiles": 9}))
    execute(Target("p.toml", "plan p", opaque, None, RecipeOptions()), NO_STORE, _shown)
    assert under_execute["need"] is None
