"""`iowall ab`'s work: check the target and the kernels on the host, boot the two kernels in
turn (``ab.rounds``), import their runs, and return the Report with the differential flame
graph of the sides' median profiled runs written beside it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import replace

from ..ab import kvm
from ..ab.kernels import Kernel, cache_dir, is_bzimage, resolve
from ..ab.rounds import AbConfig, run_rounds, side_runs
from ..ab.summary import ab_report, flame_pair
from ..ab.vm import vng_path
from ..machine.signals import interruptible
from ..plan import load_plan
from ..recipes.registry import get
from ..report.emit import wrote
from ..report.flame import write_svg
from ..results import Report
from ..store import Store
from ..store.reports import add_report
from ..vocab.errors import UserError
from ..vocab.units import parse_size, plural
from .flame import flame_svg
from .target import is_plan_path


def _recipe_of(target: str) -> str:
    """The target's name as its runs carry it, after checking it on the host."""
    if is_plan_path(target):
        return load_plan(os.path.abspath(target)).recipe
    return get(target).name


def _labels(kernels: tuple[Kernel, Kernel]) -> tuple[str, str]:
    a, b = kernels[0].name, kernels[1].name
    return (f"{a}@A", f"{b}@B") if a == b else (a, b)


def _kvm(kernels: tuple[Kernel, Kernel], allow_emulated: bool) -> tuple[bool, str]:
    image = next((k.image for k in kernels if is_bzimage(k.image)), None)
    check = (
        kvm.cached_check(image)
        if image is not None
        else kvm.KvmCheck(False, "not checked: neither kernel is a bzImage")
    )
    if not check.works and not allow_emulated:
        raise UserError(
            f"no working KVM here ({check.why}): guest timings would be "
            "emulation's; pass --allow-emulated to run anyway, every run marked "
            "emulated"
        )
    return check.works, check.why


def run_ab(
    target: str,
    kernels: list[str],
    db: str | None,
    say: Callable[[str], None],
    *,
    rounds: int,
    cpus: int,
    memory: str,
    allow_emulated: bool,
    quick: bool,
    probes: str,
    flame: str | None,
    timeout: float,
    boot_timeout: float,
    boot_attempts: int,
    hold_memory: bool = True,
) -> Report:
    """Everything checked on the host first (the kernels found, the target loaded, KVM or
    ``allow_emulated``), then the store ``db`` opened, the rounds run, and the Report made
    and stored with its batch; a side with no completed run leaves ``report.compare``
    None. Each guest's `iowall run` holds its memory as `run` does by default; ``hold_memory``
    False gives it --no-hold-memory."""
    if len(kernels) != 2:
        raise UserError(f"give --kernel exactly twice (A then B), not {len(kernels)} times")
    parse_size(memory, what="--memory")
    vng_path()
    recipe = _recipe_of(target)
    cache = os.path.realpath(cache_dir())
    pair = (resolve(kernels[0], cache), resolve(kernels[1], cache))
    works, why = _kvm(pair, allow_emulated)
    batch = str(uuid.uuid4())
    workdir = os.path.join(cache, "runs", batch)
    os.makedirs(workdir)
    opts = (
        ["--bed", "ram", "--probes", probes]
        + (["--quick"] if quick else [])
        + ([] if hold_memory else ["--no-hold-memory"])  # the guest's `run` holds it by default
    )
    target_arg = os.path.abspath(target) if os.path.isfile(target) else target
    cfg = AbConfig(
        kernels=pair,
        labels=_labels(pair),
        target=target_arg,
        recipe=recipe,
        rounds=rounds,
        cpus=cpus,
        memory=memory,
        kvm=works,
        kvm_why=why,
        workdir=workdir,
        batch=batch,
        run_opts=tuple(opts),
        timeout_s=timeout,
        boot_timeout_s=boot_timeout,
        boot_attempts=boot_attempts,
    )
    store = Store(db)
    say(
        f"ab: {cfg.labels[0]} (A) vs {cfg.labels[1]} (B), {plural(rounds, 'round')}; guests: "
        f"{'KVM' if works else 'EMULATED'} ({why}); files in {workdir}"
    )
    with interruptible():  # SIGTERM too: the guest in flight is killed with its group
        records = run_rounds(cfg, store, say)
    runs = side_runs(store, records, cfg.labels)
    emulated = any(r.env.get("emulated") for rs in runs.values() for r in rs)
    report = ab_report(cfg, records, runs, emulated)
    pair_ids = flame_pair(runs[cfg.labels[0]], runs[cfg.labels[1]])
    if isinstance(pair_ids, str):
        report = replace(report, notes=(*report.notes, pair_ids))
    else:
        path = flame or os.path.join(workdir, "flame-diff.svg")
        write_svg(flame_svg(store, [str(pair_ids[0]), str(pair_ids[1])]), path)
        wrote(path)
        report = replace(
            report,
            notes=(*report.notes, f"differential flame graph of runs {pair_ids[0]} -> {pair_ids[1]}: {path}"),
        )
    add_report(store, report)
    return report
