"""`iowall ab --kernel A --kernel B RECIPE|PLAN`: two kernels booted in turn in virtme-ng
guests, the same target in each, then compare, Why and the differential flame graph."""

from __future__ import annotations

import os
import sys
import uuid
from dataclasses import replace
from typing import Annotated

import typer

from ..ab import kvm
from ..ab.kernels import Kernel, cache_dir, is_bzimage, resolve
from ..ab.rounds import AbConfig, run_rounds, side_runs
from ..ab.summary import ab_report, flame_pair
from ..ab.vm import vng_path
from ..errors import UserError
from ..plan import load_plan
from ..recipes.registry import get
from ..report.emit import emit, wrote
from ..report.flame import write_svg
from ..signals import interruptible
from ..store import Store
from ..store.reports import add_report
from ..units import parse_size, plural
from .flame import flame_svg
from .options import DbOpt, OutputOpt, ReportFormat, ReportFormatOpt


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _recipe_of(target: str) -> str:
    """The target's name as its runs carry it, after checking it on the host."""
    if target.endswith(".toml") or os.sep in target or os.path.isfile(target):
        return load_plan(os.path.abspath(target)).recipe
    return get(target).name


def _labels(kernels: tuple[Kernel, Kernel]) -> tuple[str, str]:
    a, b = kernels[0].release, kernels[1].release
    return (f"{a}@A", f"{b}@B") if a == b else (a, b)


def _kvm(kernels: tuple[Kernel, Kernel], allow_emulated: bool) -> tuple[bool, str]:
    image = next((k.image for k in kernels if is_bzimage(k.image)), None)
    check = (kvm.cached_check(image) if image is not None else
             kvm.KvmCheck(False, "not checked: neither kernel is a bzImage"))
    if not check.works and not allow_emulated:
        raise UserError(f"no working KVM here ({check.why}): guest timings would be "
                        "emulation's; pass --allow-emulated to run anyway, every run marked "
                        "emulated")
    return check.works, check.why


def ab(
    target: Annotated[str, typer.Argument(
        metavar="RECIPE|PLAN.toml", help="what each guest runs (see: iowall recipes)")],
    kernels: Annotated[list[str], typer.Option(
        "--kernel", metavar="IMAGE|RELEASE|DEB", help="twice: A (base) then B (new); a "
        "bzImage/vmlinuz path, a release under /boot, or a Debian package name")],
    rounds: Annotated[int, typer.Option(min=1, help="boots of each kernel, alternating which "
                                                    "goes first")] = 3,
    cpus: Annotated[int, typer.Option(min=1, help="vCPUs of every guest")] = 2,
    memory: Annotated[str, typer.Option(metavar="SIZE", help="memory of every guest (the ram "
                                                              "bed lives in it)")] = "2G",
    allow_emulated: Annotated[bool, typer.Option(
        "--allow-emulated", help="run without working KVM; every run is marked emulated")
    ] = False,
    quick: Annotated[bool, typer.Option("--quick", help="the recipe's small sizes")] = False,
    probes: Annotated[str, typer.Option(metavar="LIST|default|all|none",
                                        help="probes inside the guests")] = "default",
    flame: Annotated[str | None, typer.Option(
        "--flame", metavar="FILE.svg", help="the differential flame graph (default: in the "
        "run's directory)")] = None,
    timeout: Annotated[float, typer.Option(metavar="S", help="longest life of one guest")
                       ] = 3600.0,
    boot_timeout: Annotated[float, typer.Option(
        metavar="S", help="a guest that has not started its command by then did not boot")
    ] = 120.0,
    boot_attempts: Annotated[int, typer.Option(
        min=1, metavar="N", help="boots of one round's kernel before it counts as failed, "
        "when it dies before the guest command (an early-boot panic or hang)")] = 2,
    fmt: ReportFormatOpt = ReportFormat.text,
    output: OutputOpt = None,
    db: DbOpt = None,
) -> None:
    """Two kernels in virtme-ng guests, one target, interleaved rounds, one compare."""
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
    opts = ["--bed", "ram", "--probes", probes] + (["--quick"] if quick else [])
    target_arg = os.path.abspath(target) if os.path.isfile(target) else target
    cfg = AbConfig(kernels=pair, labels=_labels(pair), target=target_arg, recipe=recipe,
                   rounds=rounds, cpus=cpus, memory=memory, kvm=works, kvm_why=why,
                   workdir=workdir, batch=batch, run_opts=tuple(opts), timeout_s=timeout,
                   boot_timeout_s=boot_timeout, boot_attempts=boot_attempts)
    store = Store(db)
    _say(f"ab: {cfg.labels[0]} (A) vs {cfg.labels[1]} (B), {plural(rounds, 'round')}; guests: "
         f"{'KVM' if works else 'EMULATED'} ({why}); files in {workdir}")
    with interruptible():  # SIGTERM too: the guest in flight is killed with its group
        records = run_rounds(cfg, store, _say)
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
        report = replace(report, notes=(*report.notes, f"differential flame graph of runs "
                                        f"{pair_ids[0]} -> {pair_ids[1]}: {path}"))
    add_report(store, report)
    emit(report, fmt, output)
    if report.compare is None:
        raise typer.Exit(1)  # a side has no completed run: nothing was compared
