"""`iowall fleet run`: the playbook on every host not yet done, then each fetched bundle
imported into one store. A host that fails is reported with its error while the others
finish; the same command again completes only what is missing (state in ``FleetDir``)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..bundle.files import pack_item, read_models
from ..bundle.packed import Carried
from ..results import FAILED, IMPORTED, HostState
from ..store import Store
from ..store.ingest import import_runs
from ..vocab.errors import UserError
from ..vocab.units import fmt_bytes, plural
from .ansible import Event, inventory_hosts, play
from .state import FleetDir, run_key
from .wheelhouse import TAR, build, checkout, drop_per_run, reusable, shared, source_digest, used

#: The playbook's tasks that mark a stage, and the progress line each one prints.
STAGES = {
    "iowall: copy wheelhouse": "wheelhouse copied",
    "iowall: dependencies": "installed",
    "iowall: doctor": "doctor: limits can run",
    "iowall: run": "measured",
    "iowall: fetch bundle": "bundle fetched",
}
#: A stage's line when the host had the wheelhouse's archive already (another label or plan of
#: the same sources): nothing is unpacked or installed again, only checked.
UNCHANGED = {
    "iowall: copy wheelhouse": "wheelhouse there already (the same archive)",
    "iowall: dependencies": "installed already",
}


@dataclass(frozen=True)
class FleetSpec:
    """What a fleet run is: inventory, target (recipe, ``limits`` or plan file), label, commit;
    ``hold_memory`` False gives each host's command --no-hold-memory."""

    inventory: str
    target: str
    label: str = ""
    commit: str = ""
    quick: bool = False
    hold_memory: bool = True

    def resolved_target(self) -> tuple[str, str]:
        """(what the playbook runs, what keys the run): a plan file by absolute path and
        content hash (an edited plan is another run), a recipe by name."""
        p = Path(self.target)
        if p.is_file():
            digest = hashlib.sha1(p.read_bytes()).hexdigest()[:8]
            return str(p.resolve()), f"{p.name}:{digest}"
        if "/" in self.target or self.target.endswith(".toml"):
            raise UserError(f"no plan file at {self.target}")
        return self.target, self.target


def _fingerprint_line(stdout: str) -> str:
    try:
        f = json.loads(stdout)
        return (
            f"fingerprint: {f['hostname']}, {plural(int(f['cpu_count']), 'CPU')} {f['cpu_model']}, "
            f"{fmt_bytes(int(f['mem_total_bytes']))}, kernel {f['kernel']}"
        )
    except (ValueError, KeyError, TypeError):
        return "fingerprint: unreadable"


class _Progress:
    """Turns the playbook's events into one line per host and stage, and keeps each host's
    last error."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say, self.t0, self.errors = say, time.monotonic(), dict[str, str]()
        self.had_archive: set[str] = set()

    def line(self, host: str, text: str) -> None:
        self.say(f"[{time.monotonic() - self.t0:6.1f}s] {host}: {text}")

    def __call__(self, ev: Event) -> None:
        if ev.event in ("failed", "unreachable"):
            error = f"{ev.event} at {ev.task!r}: {ev.msg}"
            self.errors[ev.host] = error
            self.line(ev.host, error)
        elif ev.event in ("ok", "changed") and ev.task == "iowall: fingerprint":
            self.line(ev.host, _fingerprint_line(ev.stdout))
        elif ev.event == "ok" and ev.task == "iowall: copy wheelhouse":
            self.had_archive.add(ev.host)
            self.line(ev.host, UNCHANGED[ev.task])
        elif ev.event in ("ok", "changed") and ev.host in self.had_archive and ev.task in UNCHANGED:
            self.line(ev.host, UNCHANGED[ev.task])
        elif ev.event in ("ok", "changed") and ev.task in STAGES:
            self.line(ev.host, STAGES[ev.task])


def _import(fd: FleetDir, host: str, store: Store) -> HostState:
    """``host``'s fetched bundle into the store; its runs keep the host name they were
    measured on (``env.host.hostname``), which is how the store attributes them."""
    try:
        runs = read_models(str(fd.bundle(host)))  # packed by the playbook's export
        import_runs(store, runs, pack=pack_item)
    except UserError as e:
        return HostState(host, FAILED, error=f"import: {e}")
    names = sorted({str((r.env.get("host") or {}).get("hostname", "")) for r in runs})
    bad = sum((r.model if isinstance(r, Carried) else r).status in ("failed", "interrupted") for r in runs)
    return HostState(host, IMPORTED, runs=len(runs), hostnames=tuple(names), failed_runs=bad)


def run_fleet(
    spec: FleetSpec, store: Store, say: Callable[[str], None], root: Path | None = None
) -> list[HostState]:
    """Run ``spec`` on every inventory host not yet imported and import what lands; returns
    every host's state, in inventory order. ``root`` holds the fleet run directories."""
    target, keyed = spec.resolved_target()
    hosts = inventory_hosts(spec.inventory)
    fd = FleetDir(run_key(spec.label, keyed, spec.commit), root)
    say(
        f"fleet: {plural(len(hosts), 'host')}, {keyed}, label {spec.label or '-'}, commit "
        f"{spec.commit or '-'}; state in {fd.path}"
    )
    progress = _Progress(say)
    todo = []
    for h in hosts:
        st = fd.state(h)
        if st is not None and st.status == IMPORTED:
            progress.line(
                h, f"already imported ({plural(st.runs, 'run')} from {', '.join(st.hostnames)}): skipped"
            )
            continue
        if fd.bundle(h).is_file():  # fetched by an earlier attempt, not imported then
            got = _import(fd, h, store)
            if got.status == IMPORTED:
                fd.save(got)
                progress.line(h, f"imported {plural(got.runs, 'run')} fetched by an earlier attempt")
                continue
        todo.append(h)
    if todo:
        source = checkout()
        digest = source_digest(source)
        house = shared(digest)
        wheel = reusable(house, digest)
        if wheel is not None:
            used(house)
            progress.line("controller", f"reusing {wheel} and its dependencies in {house} (same sources)")
        else:
            wheel = build(source, house, digest)
            progress.line("controller", f"built {wheel} and its dependencies into {house}")
        old = drop_per_run(fd.path.parent)
        if old:
            progress.line(
                "controller", f"removed {plural(len(old), 'wheelhouse')} an earlier iowall kept per fleet run"
            )
        for h in todo:
            fd.bundle(h).unlink(missing_ok=True)
        extra = {
            "iowall_wheelhouse": str(house / TAR),
            "iowall_wheel": wheel,
            "iowall_target": target,
            "iowall_label": spec.label,
            "iowall_commit": spec.commit,
            "iowall_quick": spec.quick,
            "iowall_hold_memory": spec.hold_memory,
            "iowall_key": fd.path.name,
            "iowall_fetch_dir": str(fd.fetched),
        }
        play(source / "fleet" / "playbook.yml", spec.inventory, todo, extra, fd.log, progress)
        for h in todo:
            if fd.bundle(h).is_file():
                st = _import(fd, h, store)
            else:
                st = HostState(
                    h,
                    FAILED,
                    error=progress.errors.get(h, f"the playbook ended without its bundle; see {fd.log}"),
                )
            fd.save(st)
            progress.line(
                h,
                f"imported {plural(st.runs, 'run')} (host {', '.join(st.hostnames)}) into {store.shown}"
                if st.status == IMPORTED
                else f"FAILED: {st.error}",
            )
    return [fd.state(h) or HostState(h, FAILED, error="no state") for h in hosts]
