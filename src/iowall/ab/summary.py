"""The report of `iowall ab`: the kernels and their boots, the compare of B against A, the
Why of each side, and which two runs the differential flame graph is drawn from."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.explain.context import representative
from ..analysis.explain.run import explain_points
from ..analysis.regress.compare import CompareResult, Side, compare
from ..model import MEASURED_STATUSES, Run, primary_metric
from ..probes.profile import ARTIFACT
from ..results import Outcome, Report, Section, Table
from .rounds import SIDES, AbConfig, BootRecord, own_options

EMULATED = (
    "EMULATED: no working KVM, the guests ran under software emulation; these timings "
    "say nothing about the kernels"
)


def flame_pair(a: Sequence[Run], b: Sequence[Run]) -> tuple[int, int] | str:
    """The median runs (by primary metric) of the first point both sides profiled, or why
    there is none."""

    def profiled(runs: Sequence[Run]) -> dict[str, list[Run]]:
        out: dict[str, list[Run]] = {}
        for r in runs:
            if r.status in MEASURED_STATUSES and any(x.name == ARTIFACT for x in r.artifacts):
                out.setdefault(r.fingerprint(), []).append(r)
        return out

    pa, pb = profiled(a), profiled(b)
    for key, ra in pa.items():
        if key in pb:
            m = primary_metric(ra[0])
            name = m.name if m is not None else ""
            base, new = representative(ra, name), representative(pb[key], name)
            if base is not None and new is not None and base.id and new.id:
                return base.id, new.id
    if not pa or not pb:
        side = "A" if not pa else "B"
        return (
            f"no differential flame graph: side {side} has no profiled run (add the "
            "profile probe, e.g. --probes default; its notes say why it did not run)"
        )
    return "no differential flame graph: no point was profiled on both sides"


def _boots(records: Sequence[BootRecord]) -> Table:
    rows = [
        [
            str(r.round),
            r.side,
            r.label,
            "ok" if r.ok else "FAILED, booted again" if r.retried else "FAILED",
            "-" if r.boot_s is None else f"{r.boot_s:.1f}",
            f"{r.wall_s:.1f}",
            ",".join(map(str, r.run_ids)) or "-",
        ]
        for r in records
    ]
    return Table.of(["round", "side", "kernel", "status", "boot s", "guest s", "runs"], rows, left=4)


def _kernel_lines(cfg: AbConfig, records: Sequence[BootRecord]) -> list[str]:
    out = []
    for i, k in enumerate(cfg.kernels):
        f = next((r.facts for r in records if r.side == SIDES[i] and r.facts), {})
        out.append(
            f"{SIDES[i]} = {cfg.labels[i]}: {k.spec} ({k.source}, {k.image}"
            + (f", appended: {k.append}" if k.append else "")
            + "); build id "
            + f"{f.get('build_id') or 'not measured (no boot)'}; kernel options "
            f"{own_options(f.get('cmdline', '')) or '-'}"
        )
        mine = [r for r in records if r.side == SIDES[i]]
        died = [r for r in mine if not r.reached]  # a panic, or a hang past --boot-timeout
        if died:  # a kernel that dies in early boot now and then is news to its developer
            out.append(
                f"{SIDES[i]} did not reach the guest command in {len(died)} of "
                f"{len(mine)} boots: "
                + "; ".join(f"round {r.round}{' (booted again)' if r.retried else ''}" for r in died)
                + " (see the notes)"
            )
    return out


def ab_report(
    cfg: AbConfig, records: Sequence[BootRecord], runs: dict[str, list[Run]], emulated: bool
) -> Report:
    """Everything `ab` prints, as data; ``runs`` maps each label to its stored runs."""
    a, b = (runs.get(lab, []) for lab in cfg.labels)
    title = (
        f"iowall ab: {cfg.labels[1]} against {cfg.labels[0]}, {cfg.target}, "
        f"{cfg.rounds} round{'s' if cfg.rounds != 1 else ''}"
    )
    head = ([EMULATED] if emulated else []) + [
        f"guests: virtme-ng, {cfg.cpus} vCPUs, {cfg.memory}, "
        f"{'KVM' if cfg.kvm else 'software emulation (TCG)'}: {cfg.kvm_why}",
        *_kernel_lines(cfg, records),
    ]
    notes = [
        "boot s: the guest's uptime when the command started (kernel boot and "
        "virtme-ng init); guest s: the host's wall time from qemu start to exit",
        "A boots first in odd rounds, B in even ones; each guest runs the target on "
        "its own bed in guest memory",
        "pairing uses the VM's configured memory as the host's; each guest's MemTotal "
        "is kept in the run's env.ab",
    ]
    failed = [r for r in records if not r.ok]
    for r in failed:
        again = f" (attempt {r.attempt}; booted again)" if r.retried else ""
        notes.append(f"round {r.round} {r.side} failed{again}: {r.error}")
    why = [
        {**e.to_json(), "point": f"{lab}: {e.point}"}
        for lab, rs in zip(cfg.labels, (a, b), strict=True)
        for e in explain_points(rs)
    ]
    cmp: CompareResult | None = None
    if any(r.status in MEASURED_STATUSES for r in a) and any(r.status in MEASURED_STATUSES for r in b):
        cmp = compare(Side(cfg.labels[0], a), [Side(cfg.labels[1], b)], compared="label")
    else:
        notes.append("no compare: a side has no completed run")
    ids = tuple(r.id for r in (*a, *b) if r.id is not None)
    o = _outcome(records, (*a, *b))
    said = o.sentence()
    return Report(
        kind="ab",
        name="ab",
        title=title,
        head=tuple(head),
        sections=(Section("Boots", _boots(records)),),
        notes=tuple(notes),
        why=tuple(why),
        label=cfg.labels[1],
        batch=cfg.batch,
        run_ids=ids,
        compare_sides=tuple(
            (lab, tuple(r.id for r in rs if r.id is not None))
            for lab, rs in zip(cfg.labels, (a, b), strict=True)
        ),
        compare=cmp,
        data={"outcome": o.to_json()},
        tail=(said,) if said else (),
    )


def _outcome(records: Sequence[BootRecord], runs: Sequence[Run]) -> Outcome:
    """The runs' outcome (``results.Outcome``): a boot that failed is a failed run (stored as
    one), unless it was booted again (a panic in early boot under emulation, said in the
    notes and the boots' table), so that `ab` exits 1 when a guest died mid-run or a point
    of its plan failed."""
    again = {i for r in records if r.retried for i in r.run_ids}
    return Outcome.of([r for r in runs if r.id not in again])
