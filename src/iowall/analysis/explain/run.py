"""Pure: the explain wing's entry point. ``explain(run, batch)`` says why one run is where it
is, judged among the runs of its batch (the ceilings and the memory copy measured beside it),
as an ``Explanation`` (``facts``); ``explain_points`` does it for the median run of each
point of a batch (a report's Why; a `limits` run's is ``analysis.scaling.limits_why.why_limits``).

``explain`` only hands on: each stage is one module, visited once, in this order (a run's
walk down the wing, docs/architecture.md): the run read once (``evidence``: its context and
the phases), its profile (``kernel_paths``), where the CPU time went and every derived
quantity (``derived``), the workload's budget (``budget``, its profile split last), the device
side (``device``), the wall (``wall``: then ``cpu``, ``io_wall`` or ``blocked``, and ``host``
for the hypervisor's steal), the rules judged beside it (``rules``) and the cost of each I/O
(``cost``)."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import MEASURED_STATUSES, Run, primary_metric
from .budget import compute
from .budget_profile import helper_mechanisms
from .context import representative
from .cost import cost_of
from .derived import classes, lock_callers, top_functions, top_paths, values
from .device import device_in_window, with_facts, with_space
from .evidence import read, skipped_probes
from .facts import Explanation
from .kernel_paths import read_profile
from .rules import judge
from .wall import decide


def explain(run: Run, batch: Sequence[Run]) -> Explanation:
    """Why ``run`` is where it is, judged among the runs of its ``batch`` (the ceilings and
    the memory copy measured beside it): the workload's budget and the wall it names, with
    the rules that stand beside that wall, their nearest misses and where the CPU time went
    (without a budget: the rules over the whole machine's CPU time; too short: said, no rule)."""
    primary = primary_metric(run)
    ev = read(run, batch, primary)
    if ev.not_applicable is not None:
        return Explanation(ev.run, ev.point, ev.skipped, False, (ev.not_applicable,))
    prof = read_profile(ev.profile)  # decoded once: the attribution and the budget read it
    metrics = ev.metrics
    if prof is not None and not any(k.startswith("profile_") and k.endswith("_share") for k in metrics):
        metrics = {**metrics, **prof.metrics}  # older runs
    shares, paths = tuple(classes(metrics)), tuple(top_paths(prof.ranked)) if prof is not None else ()
    callers = lock_callers(prof.attribution) if prof is not None else None
    tops = top_functions(prof.ranked) if prof is not None else None
    fire_on = values(metrics, ev.ctx, ev.lock_rows, ev.tasks_top)
    near_on = values(metrics, ev.ctx)
    throughput = ev.ctx.get("throughput_bytes_per_s")
    if ev.too_short:  # the machine's CPU time would be another process's, not the workload's
        return Explanation(
            ev.run, ev.point, ev.skipped, sentences=(ev.unexplained,), attribution=shares, paths=paths,
            throughput_bytes_per_s=throughput,
        )  # fmt: skip
    stacks = prof.stacks if prof is not None else None
    b = (
        compute(ev.threadstate, ev.window, ev.window_source, stacks, ev.cpus)
        if ev.window and ev.threadstate
        else None
    )
    hp = helper_mechanisms(stacks, {t.comm for t in b.threads}, ev.ctx.get("cpus", 0.0)) if b else {}
    dev = (
        with_space(with_facts(device_in_window(ev.device_means), ev.bed, ev.knobs, ev.workload), ev.metrics)
        if b
        else None
    )
    d = decide(b, dev, ev.ctx, ev.neighbours, ev.devnos, hp) if b is not None and dev is not None else None
    walls = [x for x in (d.wall, *d.also) if x] if d is not None else []
    j = judge(
        fire_on,
        near_on,
        walls,
        d.notes if d is not None else (),
        budgeted=b is not None,
        unexplained=ev.unexplained,
        lock_callers=callers,
        top_functions=tops,
    )
    return Explanation(
        ev.run,
        ev.point,
        ev.skipped,
        sentences=j.sentences,
        fired=bool(j.verdicts),
        verdicts=j.verdicts,
        near_misses=j.near_misses,
        attribution=shares,
        paths=paths,
        wall=d.wall if d is not None else None,
        budget=b,
        helpers_cpus=ev.helpers if b is not None else {},
        device=dev if dev is not None and (dev.reqs or dev.kind) else None,
        cost=cost_of(b, dev) if b is not None and dev is not None else None,
        throughput_bytes_per_s=throughput,
    )


def explain_points(runs: Sequence[Run]) -> list[Explanation]:
    """One entry per point of ``runs`` (in first-run order), explaining its median run by
    its primary metric; points whose runs carry no probe data are left out."""
    good = [r for r in runs if r.status in MEASURED_STATUSES]
    groups: dict[str, list[Run]] = {}
    for r in good:
        groups.setdefault(r.point.key(), []).append(r)
    out = []
    for group in groups.values():
        if not any(r.series for r in group) and not skipped_probes(group[0]):
            continue  # not probed (e.g. a memory-copy ceiling)
        metric = primary_metric(group[0])
        run = representative(group, metric.name) if metric else group[len(group) // 2]
        if run is not None:
            out.append(explain(run, good))
    return out
