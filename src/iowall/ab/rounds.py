"""The rounds of `iowall ab`: boot A then B (B then A the next round), run the target in
each guest, import the runs of the store it leaves in the shared directory under the kernel's label,
and record a boot that failed or a guest that died as a failed run, with its console."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..bundle.files import read_bundle
from ..model import Point, Run
from ..store import RunFilter, Store
from ..store.ingest import import_runs
from ..vocab.errors import IowallError, UserError
from ..vocab.units import parse_size, plural
from . import guest, vm
from .kernels import Kernel, is_bzimage

SIDES = ("A", "B")


@dataclass(frozen=True)
class AbConfig:
    """Everything a run of `ab` fixes before the first boot."""

    kernels: tuple[Kernel, Kernel]
    labels: tuple[str, str]
    target: str
    recipe: str
    rounds: int
    cpus: int
    memory: str
    kvm: bool
    kvm_why: str
    workdir: str  # the real path (no symlink): virtme-ng mounts it at the same path
    batch: str
    run_opts: tuple[str, ...] = ()
    timeout_s: float = 3600.0
    boot_timeout_s: float = 120.0
    boot_attempts: int = 2
    #: the number of the first round (`bisect` adds rounds to a step one at a time)
    first_round: int = 1
    #: keys added to the env of each side's runs (`bisect`: ``bisect`` and ``commit``)
    side_env: tuple[Mapping[str, Any], Mapping[str, Any]] = ({}, {})
    #: B boots first in odd rounds (`bisect`: a candidate that does not boot costs no boot of
    #: the good kernel before it is found out)
    b_first: bool = False


class DoesNotBoot(UserError):
    """A kernel whose first boot never reached the guest command: ``side`` 0 (A) or 1 (B)."""

    def __init__(self, message: str, side: int) -> None:
        super().__init__(message)
        self.side = side


@dataclass(frozen=True)
class BootRecord:
    """One boot of one kernel in one round."""

    round: int
    side: str
    label: str
    ok: bool
    reached: bool  # the guest started its command: the kernel booted
    wall_s: float
    boot_s: float | None
    run_ids: tuple[int, ...] = ()
    error: str = ""
    tail: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    retried: bool = False  # failed before the guest command, and was booted again
    #: the kernel booted (the guest's init ran) but the init could not start the command:
    #: not the kernel's failure, and booting it again would fail the same way
    booted: bool = False


#: Console lines that name why a kernel died (the first one is usually the cause).
_DEATH = re.compile(
    r"(Kernel panic|BUG:|Oops|general protection fault|"
    r"KVM internal error|invalid opcode)"
)


def death_line(console: str) -> str:
    """The first console line saying how the kernel died (panic, BUG, Oops, …), without its
    timestamp, or ``""``."""
    try:
        with open(console, errors="replace") as f:
            for line in f:
                m = _DEATH.search(line)
                if m:
                    return line[m.start() :].strip()
    except FileNotFoundError:
        pass
    return ""


#: A console line of virtme-ng's init (its own, or the shell one of older virtme-ng): the
#: kernel booted and ran userspace.
_INIT = re.compile(r"virtme(-ng)?-init: ")
_FAILED = re.compile(r"error|fail|cannot", re.IGNORECASE)


def init_failure(console: str) -> str | None:
    """The first line in which the guest's init says it failed (``virtme-ng-init: error
    changing directory: …``): the kernel booted and ran userspace, and the init could not
    start the command. None when the init said no such thing (or never spoke)."""
    try:
        with open(console, errors="replace") as f:
            for line in f:
                m = _INIT.search(line)
                if m and _FAILED.search(line, m.end()):
                    return line[m.start() :].strip()
    except FileNotFoundError:
        pass
    return None


def own_options(cmdline: str) -> str:
    """The kernel command line without virtme-ng's plumbing (``virtme*``, ``init=``, the
    encoded command, which names each boot's own directory): what the kernel itself was
    told. The whole line is kept in ``env.ab.cmdline``."""
    return " ".join(t for t in cmdline.split() if not t.startswith(("virtme", "init=", "nr_open=")))


def _src_dir() -> str:
    """The directory holding the ``iowall`` package the guest must import (this one)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def guest_command(cfg: AbConfig, side: int, shared: str) -> str:
    """The shell line the guest runs (in ``/``, whatever the caller's directory): this Python
    and this iowall, seen through the guest's copy-on-write view of the host's root."""
    argv = [sys.executable, "-m", "iowall.ab.guest", shared, cfg.target, cfg.labels[side], *cfg.run_opts]
    moddir = cfg.kernels[side].moddir or ""
    return (
        f"PYTHONPATH={shlex.quote(_src_dir())} "
        f"{guest.MODDIR_ENV}={shlex.quote(moddir)} "
        f"{guest.SEED_ENV}={shlex.quote(seed_path(cfg.workdir))} " + " ".join(shlex.quote(a) for a in argv)
    )


def guest_rodirs(cfg: AbConfig, side: int) -> list[str]:
    """What the guest must read that its own tmpfs mounts would hide (a checkout, a venv, a
    plan or a kernel's modules under /var/tmp): shown read-only at the same paths."""
    wanted = [_src_dir(), sys.prefix, cfg.kernels[side].moddir or ""]
    if os.path.isfile(cfg.target):
        wanted.append(os.path.dirname(cfg.target))
    return vm.hidden_in_guest([p for p in wanted if p])


def seed_path(workdir: str) -> str:
    """Where ``seed_store`` makes the store each guest starts from."""
    return os.path.join(workdir, "seed.db")


def seed_store(workdir: str) -> str:
    """An empty SQLite store at the schema's head in ``workdir`` (made once, before the first
    boot): each guest starts from a copy of it instead of importing alembic and migrating
    under emulation."""
    path = seed_path(workdir)
    if not os.path.exists(path):
        tmp = path + ".tmp"
        store = Store(f"sqlite:///{tmp}")
        with store.engine.connect() as conn:  # everything in the main file, none in a WAL
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        store.engine.dispose()
        for suffix in ("-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)
        os.replace(tmp, path)
    return path


def _ab_env(cfg: AbConfig, side: int, rnd: int, facts: dict[str, Any], b: vm.Boot) -> dict[str, Any]:
    k = cfg.kernels[side]
    return {
        "side": SIDES[side],
        "round": rnd,
        "batch": cfg.batch,
        "kernel_spec": k.spec,
        "append": k.append,
        "image": k.image,
        "release": facts.get("release", k.release),
        "build_id": facts.get("build_id", ""),
        "cmdline": facts.get("cmdline", ""),
        "guest_kvm": facts.get("kvm"),
        "boot_s": facts.get("boot_s"),
        "vm_wall_s": b.wall_s,
        "vcpus": cfg.cpus,
        "memory": cfg.memory,
        "guest_mem_total_bytes": facts.get("mem_total_bytes"),
    }


def _imported(
    cfg: AbConfig, store: Store, runs: Sequence[Run], side: int, ab: dict[str, Any]
) -> tuple[int, ...]:
    """Store the guest's runs under ``label``, marked emulated unless the guest saw KVM. The
    host shape is the VM's configured memory (each kernel reserves differently, so its
    MemTotal would keep the two sides' points from pairing); the guest's MemTotal is kept
    in ``env.ab``."""
    emulated = not ab.get("guest_kvm")
    label = cfg.labels[side]
    out = []
    for r in runs:
        host = dict(r.env.get("host", {}))
        host["mem_total_bytes"] = parse_size(cfg.memory)
        env = {**r.env, **cfg.side_env[side], "host": host, "emulated": emulated, "ab": ab}
        if "cmdline" in env:  # the same on every boot of a kernel, so compare can show it
            env["cmdline"] = own_options(str(env["cmdline"]))
        out.append(replace(r, label=label, batch=cfg.batch, env=env))
    import_runs(store, out)
    ids = [store.id_of_uuid(r.uuid) for r in out]
    return tuple(i for i in ids if i is not None)


def _failed_run(
    cfg: AbConfig, side: int, ab: dict[str, Any], started: float, error: str, tail: Sequence[str]
) -> Run:
    return Run(
        point=Point(cfg.recipe, {}),
        label=cfg.labels[side],
        status="failed",
        started_at=started,
        finished_at=time.time(),
        env={**cfg.side_env[side], "emulated": not cfg.kvm, "ab": ab},
        batch=cfg.batch,
        error=error,
        notes=tuple(tail),
    )


def one_boot(cfg: AbConfig, store: Store, rnd: int, side: int, attempt: int = 1) -> BootRecord:
    """Boot kernel ``side`` once; a failure is stored as a failed run of its label."""
    label = cfg.labels[side]
    shared = os.path.join(cfg.workdir, f"r{rnd}-{SIDES[side]}" + (f"-{attempt}" if attempt > 1 else ""))
    os.makedirs(shared, exist_ok=True)
    console = os.path.join(shared, "console.log")
    argv = vm.vng_argv(
        vm.vng_path(),
        cfg.kernels[side],
        cpus=cfg.cpus,
        memory=cfg.memory,
        kvm=cfg.kvm,
        shared=shared,
        command=guest_command(cfg, side, shared),
        rodirs=guest_rodirs(cfg, side),
    )
    started = time.time()
    b = vm.boot(
        argv,
        console,
        cfg.timeout_s,
        started=os.path.join(shared, guest.STARTED),
        boot_timeout_s=cfg.boot_timeout_s,
    )
    facts_path = os.path.join(shared, guest.FACTS)
    doc: dict[str, Any] = {}
    if os.path.exists(facts_path):
        with open(facts_path) as f:
            doc = json.load(f)
    facts = doc.get("facts", {})
    ab = _ab_env(cfg, side, rnd, facts, b)
    # every run the guest measured, whatever became of the guest: nothing measured is lost
    runs = guest_runs(shared)
    ids = _imported(cfg, store, runs, side, ab) if runs else ()
    if _ran(doc):
        return BootRecord(
            rnd, SIDES[side], label, True, True, b.wall_s, facts.get("boot_s"), ids, facts=facts
        )
    reached = os.path.exists(os.path.join(shared, guest.STARTED))
    init_said, error, b = _boot_failure(cfg, side, shared, console, doc, b, reached)
    if runs:
        error += f" ({plural(len(runs), 'run')} it measured before kept)"
    rid = store.add_run(_failed_run(cfg, side, ab, started, error, b.tail))
    return BootRecord(
        rnd,
        SIDES[side],
        label,
        False,
        reached,
        b.wall_s,
        facts.get("boot_s"),
        (*ids, rid),
        error,
        b.tail,
        facts,
        attempt,
        booted=init_said is not None,
    )


def _boot_failure(
    cfg: AbConfig, side: int, shared: str, console: str, doc: dict[str, Any], b: vm.Boot, reached: bool
) -> tuple[str | None, str, vm.Boot]:
    """Why a boot failed, in one line: the init could not start the command (what it said),
    the guest never finished it (no command within the boot timeout, vng's exit, the death
    line of the console), or a step of the command exited non-zero (its log's tail kept in
    the Boot returned); and what the init said, when that was the cause."""
    label = cfg.labels[side]
    death = death_line(console)
    init_said = None if reached or death else init_failure(console)
    if init_said is not None:
        error = (
            f"{label}: the guest booted but could not start its command (the init "
            f"says: {init_said}); console {console}"
        )
    elif not doc:
        if not reached:
            why = (
                f"no guest command within {cfg.boot_timeout_s:.0f} s"
                if b.timed_out
                else f"vng exited {b.rc} before the guest command"
            )
            if not is_bzimage(cfg.kernels[side].image):
                why += "; the image has no x86 boot header (HdrS), it is not a bzImage"
        else:
            why = "the guest died" if not b.timed_out else "timed out"
        if death:
            why += f"; the console says: {death}"
        error = f"{label}: the guest never finished its command ({why}); console {console}"
    else:
        step = next((s for s in doc.get("steps", []) if s["rc"] != 0), None)
        what = " ".join(step["argv"][2:5]) if step else "the guest command"
        error = f"{label}: {what} exited {doc.get('rc')} in the guest; log {os.path.join(shared, guest.LOG)}"
        with open(os.path.join(shared, guest.LOG), errors="replace") as f:
            tail = tuple(line.rstrip("\n") for line in f.readlines()[-vm.TAIL :])
        b = replace(b, tail=tail)
    return init_said, error, b


def _ran(doc: dict[str, Any]) -> bool:
    """Whether the guest's command ran to its end: every step exited 0, or `iowall run` exited
    1 (a point failed or was interrupted: its runs say which) after the modules loaded."""
    steps = doc.get("steps") or []
    if doc.get("rc") == 0 and steps:
        return True
    return doc.get("rc") == 1 and len(steps) == 2 and steps[0].get("rc") == 0 and steps[1].get("rc") == 1


def guest_runs(shared: str) -> list[Run]:
    """The runs a guest measured, oldest first, once each by uuid: those its store held when
    its command ended (copied out to ``shared``) and those its spool wrote to ``shared`` as it
    measured them (a guest killed mid-run leaves only those). A spool file is whole or absent
    (written by rename); one that cannot be read is skipped."""
    by: dict[str, Run] = {}
    for path in sorted(glob.glob(os.path.join(shared, guest.SPOOL, "*", "*.json"))):
        try:
            for r in read_bundle(path):
                by.setdefault(r.uuid or f"{path}:{r.started_at}", r)
        except IowallError:
            continue
    db = os.path.join(shared, guest.STORE)
    if os.path.exists(db):
        for r in Store(f"sqlite:///{db}").iter_runs(with_series=True, with_artifacts=True):
            by[r.uuid or f"{db}:{r.id}"] = r
    return sorted(by.values(), key=lambda r: r.started_at)


def boot_again(cfg: AbConfig, rec: BootRecord) -> bool:
    """Whether a failed boot is tried again: only one that never reached the guest command
    (a panic or hang in early boot, which a kernel under emulation does now and then), of
    an image that is a bzImage, within ``cfg.boot_attempts``. A failure once the command
    ran is the target's and is never retried."""
    return (
        not rec.ok
        and not rec.reached
        and not rec.booted
        and rec.attempt < cfg.boot_attempts
        and is_bzimage(cfg.kernels[SIDES.index(rec.side)].image)
    )


def run_rounds(
    cfg: AbConfig,
    store: Store,
    say: Callable[[str], None],
    boot: Callable[[AbConfig, Store, int, int, int], BootRecord] = one_boot,
) -> list[BootRecord]:
    """Every round, A and B alternating first; a progress line per boot with its times. A
    boot that died before the guest command is booted again (``boot_again``), the failed
    attempt kept and said. A kernel whose first boot never reached the guest command in
    any attempt does not boot at all: its console's last lines, then a UserError (exit 2)."""
    out: list[BootRecord] = []
    booted: set[int] = set()
    mode = "KVM" if cfg.kvm else "emulated"
    seed_store(cfg.workdir)
    last = cfg.first_round + cfg.rounds - 1
    for rnd in range(cfg.first_round, last + 1):
        for side in (0, 1) if (rnd % 2 == 1) != cfg.b_first else (1, 0):
            k = cfg.kernels[side]
            attempt = 1
            while True:
                again = f" again (attempt {attempt}/{cfg.boot_attempts})" if attempt > 1 else ""
                say(
                    f"ab: round {rnd}/{last}: booting {SIDES[side]} {k.name}{again} "
                    f"({mode}, {cfg.cpus} vCPUs, {cfg.memory})"
                )
                rec = boot(cfg, store, rnd, side, attempt)
                if rec.ok:
                    took = "?" if rec.boot_s is None else f"{rec.boot_s:.1f} s"
                    say(
                        f"ab: round {rnd}/{last}: {SIDES[side]} done in {rec.wall_s:.1f} "
                        f"s (boot to command {took}), runs {', '.join(map(str, rec.run_ids))}"
                    )
                    break
                say(f"ab: round {rnd}/{last}: {SIDES[side]} FAILED after {rec.wall_s:.1f} s: {rec.error}")
                say(
                    "\n".join(f"    | {line}" for line in rec.tail)
                    or "    | (the console is empty: not even firmware or kernel output)"
                )
                if not boot_again(cfg, rec):
                    break
                out.append(replace(rec, retried=True))
                attempt += 1
            if rec.booted:  # the same for every kernel: nothing the rounds can measure
                raise UserError(rec.error)
            if not rec.ok and not rec.reached and side not in booted:
                raise DoesNotBoot(f"kernel {k.spec!r} does not boot: {rec.error}", side)
            booted.add(side)
            out.append(rec)
    return out


def side_runs(store: Store, records: Sequence[BootRecord], labels: Sequence[str]) -> dict[str, list[Run]]:
    """Each side's stored runs, whole with their artifacts: the differential flame graph is
    drawn from the runs that carry a profile, which a plain listing does not load."""
    return {
        lab: list(
            store.iter_runs(
                RunFilter(ids=[i for r in records if r.label == lab for i in r.run_ids]), with_artifacts=True
            )
        )
        for lab in labels
    }
