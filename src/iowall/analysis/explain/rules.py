"""``explain``: which kernel path holds a run at its wall, from the run's probe metrics.

Pure: ``fire(metrics, context)`` reads plain numbers (the run's metrics, and the context
the caller knows: throughput, ceilings, wall time, jobs, CPUs) and returns verdicts, one
sentence each with its numbers and the evidence behind it. The rules are the ``RULES``
table below: each row is a rule name, conditions (a quantity, ``>=`` or ``<=``, a threshold),
a sentence template, and the rules it makes redundant. Rows sharing a rule name are
alternatives: the first row of a name whose conditions all hold fires, the others do not.
A row whose quantities are missing (probe skipped, context not given) does not fire.

Quantities are metric names (docs/probes.md), context keys, or the derived quantities of
``DERIVED`` (e.g. ``throttled_share`` = pause time / writers' run time).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .derived import values as derived_values
from .verdict import Wall

#: What the caller shows when no rule fires (``explain`` returns no verdict then).
NO_RULE_FIRED = "no rule fired"

#: Context keys ``explain`` understands (all optional).
CONTEXT_KEYS = (
    "throughput_bytes_per_s",
    "direct_ceiling_bytes_per_s",
    "memcopy_bytes_per_s",
    "memcopy_1_bytes_per_s",
    "wall_s",
    "jobs",
    "cpus",
    "device_bytes_per_s",
    "device_physical",
    "copy_s",
    "writeback_s",
    "write_bytes",
    "copy_bytes_per_s",
    "writeback_share",
    "phase_resolution_s",
    "memcopy_thread_bytes_per_s",
)


@dataclass(frozen=True)
class Verdict:
    """One explanation: the rule that fired, one sentence with its numbers, the evidence."""

    rule: str
    sentence: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Cond:
    """``quantity op threshold`` (op is ``>=`` or ``<=``)."""

    key: str
    op: str
    threshold: float

    def holds(self, value: float) -> bool:
        return value >= self.threshold if self.op == ">=" else value <= self.threshold


@dataclass(frozen=True)
class Rule:
    """A row of the rule table."""

    rule: str
    when: tuple[Cond, ...]
    sentence: str
    #: rules this one makes redundant when it fires (their verdicts are dropped).
    replaces: tuple[str, ...] = ()
    #: more quantities kept as evidence (beyond the conditions and the sentence's numbers).
    evidence: tuple[str, ...] = ()
    #: a derived phrase appended to the sentence when it is known (where the CPU time went).
    tail: str = ""


RULES: tuple[Rule, ...] = (
    Rule(
        "flusher-saturated",
        (Cond("flusher_cpu_share_max", ">=", 0.85), Cond("throttled_share", ">=", 0.05)),
        "Writeback flusher saturated: the flush kworker of the bed's device used up to "
        "{flusher_cpu_share_max:.2f} CPU ({flusher_cpu_share:.2f} on average) while writers "
        "spent {throttled_pct:.0f}% of their time paused in balance_dirty_pages "
        "({throttle_pause_s:.2f} s).",
        replaces=("writers-throttled",),
        evidence=("wall_s", "jobs", "throttle_tasks"),
    ),
    Rule(
        "writers-throttled",
        (Cond("throttled_share", ">=", 0.10),),
        "Writers throttled: balance_dirty_pages set pauses of {throttle_pause_s:.2f} s in all "
        "for {throttle_tasks:.0f} task(s), {throttled_pct:.0f}% of their {writer_time_s:.1f} s "
        "(its tracepoint, over the whole run; dirty limit {throttle_limit_mib:.0f} MiB).",
        evidence=("wall_s", "jobs", "throttle_events", "throttle_pause_max_s"),
    ),
    Rule(
        "reclaim-bound",
        (Cond("kswapd_cpu_share", ">=", 0.30), Cond("vm_pgsteal_pages_per_s", ">=", 1000)),
        "Reclaim-bound: kswapd used {kswapd_cpu_share:.2f} CPU on average (up to "
        "{kswapd_cpu_share_max:.2f}), scanning {vm_pgscan_pages_per_s:.0f} and reclaiming "
        "{vm_pgsteal_pages_per_s:.0f} pages/s.",
        evidence=("vm_allocstall_events_per_s",),
    ),
    Rule(
        "reclaim-bound",
        (Cond("vm_allocstall_events_per_s", ">=", 10), Cond("vm_pgsteal_pages_per_s", ">=", 1000)),
        "Reclaim-bound: allocations entered direct reclaim {vm_allocstall_events_per_s:.0f} "
        "times/s while {vm_pgsteal_pages_per_s:.0f} pages/s were reclaimed.",
        evidence=("kswapd_cpu_share", "vm_pgscan_pages_per_s"),
    ),
    Rule(
        "device-bound",  # above 100% the "ceiling" was not the device's: never a verdict
        (Cond("device_ratio", ">=", 0.90), Cond("device_ratio", "<=", 1.0)),
        "Device-bound: the device moved {device_rate} during the point (writeback included), "
        "{device_pct:.0f}% of its direct-I/O ceiling measured at other points "
        "({direct_ceiling}).",
        replaces=("latency-bound",),
        evidence=("throughput_bytes_per_s", "device_bytes_per_s", "direct_ceiling_bytes_per_s", "disk_util"),
    ),
    Rule(
        "device-bound",  # a buffered write whose end_fsync writeback is most of its time
        (Cond("writeback_share", ">=", 0.50), Cond("writeback_ceiling_ratio", ">=", 0.80)),
        "Device-bound in writeback: end_fsync's writeback took {writeback_pct:.0f}% of the "
        "point, writing {write_size} back at up to {writeback_rate} "
        "({writeback_ceiling_pct:.0f}% of the direct-I/O ceiling measured at other points, "
        "{direct_ceiling}).",
        replaces=("latency-bound", "writeback-phase"),
        evidence=("copy_s", "writeback_s", "direct_ceiling_bytes_per_s"),
    ),
    Rule(
        "device-bound",  # %util is saturation only on a physical device, never on loop/zram
        (Cond("disk_util", ">=", 0.90), Cond("device_physical", ">=", 1)),
        "Device-bound: the bed's device was busy {disk_util_pct:.0f}% of the run "
        "(average queue depth {disk_queue_depth:.1f}).",
        evidence=("disk_util_max",),
    ),
    Rule(
        "memcopy-bound",
        (Cond("memcopy_ratio", ">=", 0.80),),
        "Memory-copy bound: {throughput} is {memcopy_pct:.0f}% of the machine's memory-copy "
        "ceiling ({memcopy}).",
        evidence=("throughput_bytes_per_s", "memcopy_bytes_per_s"),
    ),
    Rule(
        "lock-contention",
        (Cond("lock_wait_share", ">=", 0.05),),
        "Lock contention: tasks waited {lock_wait_total_s:.2f} s for kernel locks, equal to "
        "{lock_wait_pct:.0f}% of the run's {cpu_time_s:.1f} CPU-seconds ({cpus:.0f} CPUs x "
        "{wall_s:.1f} s); {lock_top}.",
        evidence=("lock_top_wait_s", "lock_contended"),
    ),
    Rule(
        "lock-contention",  # from the profile: cheap, no locks probe needed
        (Cond("profile_lock_share", ">=", 0.10),),
        "Lock contention: {profile_lock_pct:.0f}% of the sampled CPU time spun or slept in "
        "lock slow paths ({lock_callers}).",
        evidence=("profile_lock_share",),
    ),
    Rule(
        "kernel-cpu-bound",
        (Cond("cpu_kernel_share", ">=", 0.85),),
        "CPU-bound in the kernel: system and interrupt time took {cpu_kernel_pct:.0f}% of all "
        "{cpus:.0f} CPUs ({kernel_cpus:.2f} CPUs); idle and iowait {cpu_free_pct:.0f}%.",
        replaces=("cpu-saturated", "kernel-path"),
        evidence=("cpu_sys_share", "cpu_irq_share"),
        tail="where_cpu",
    ),
    Rule(
        "kernel-cpu-bound",  # a short point: the average includes start-up and fsync waits
        (Cond("cpu_sys_share_max", ">=", 0.90),),
        "CPU-bound in the kernel while it ran: in its busiest interval system time took "
        "{cpu_sys_max_pct:.0f}% of all {cpus:.0f} CPUs ({cpu_kernel_pct:.0f}% on average over "
        "the whole point, start-up and waits included).",
        replaces=("cpu-saturated", "kernel-path", "latency-bound"),
        evidence=("cpu_sys_share", "cpu_idle_share"),
        tail="where_cpu",
    ),
    Rule(
        "cpu-saturated",
        (Cond("cpu_free_share", "<=", 0.05),),
        "CPU-bound: the {cpus:.0f} CPUs were {cpu_busy_pct:.0f}% busy, {cpu_kernel_pct:.0f}% "
        "in the kernel and {cpu_user_pct:.0f}% in user space (counting every process on the "
        "machine).",
        evidence=("cpu_idle_share", "cpu_iowait_share", "cpu_steal_share"),
        tail="where_cpu",
        replaces=("kernel-path",),
    ),
    Rule(
        "writeback-phase",
        (Cond("writeback_share", ">=", 0.25),),
        "Writeback is {writeback_pct:.0f}% of the point: copying {write_size} into the page "
        "cache took {copy_s:.2f} s ({copy_rate}), then end_fsync wrote back for "
        "{writeback_s:.2f} s (fio's {phase_resolution_ms:.0f} ms bandwidth log: each phase "
        "±{phase_resolution_ms:.0f} ms).",
        evidence=("copy_bytes_per_s", "throughput_bytes_per_s"),
    ),
    Rule(
        "kernel-path",
        (Cond("profile_top_share", ">=", 0.30),),
        "Most of the CPU time is one path: {profile_top_pct:.0f}% of the sampled CPU time "
        "{profile_top_label} ({profile_top_functions}): {profile_top_meaning}.",
        evidence=("profile_copy_share", "profile_loop_share", "profile_filesystem_share"),
    ),
    Rule(
        "neighbours",
        (Cond("tasks_neighbours_share", ">=", 0.20),),
        "Other work shares the CPUs: processes outside the workload took "
        "{neighbours_pct:.0f}% of the CPU time ({neighbours_top}).",
        evidence=("tasks_neighbours_cpu_s", "tasks_busy_cpu_s"),
    ),
    Rule(
        "thread-bound",
        (Cond("busiest_thread_share", ">=", 0.75), Cond("busiest_thread_alone", ">=", 0.6)),
        "One thread is the wall: {busiest_thread} was on a CPU for {busiest_thread_s:.2f} s of "
        "{busy_window}'s {busy_window_s:.2f} s ({busiest_thread_pct:.0f}%): it does the "
        "point's work alone; more jobs or a deeper queue spread it.",
        replaces=("latency-bound",),
        evidence=("jobs", "cpus"),
    ),
    Rule(
        "latency-bound",
        (
            Cond("cpu_free_share", ">=", 0.40),
            Cond("device_ratio", "<=", 0.60),
            Cond("cpu_sys_share_max", "<=", 0.60),
        ),
        "Neither the CPUs nor the device: the CPUs were {cpu_free_pct:.0f}% idle or waiting "
        "and the device moved {device_pct:.0f}% of its direct-I/O ceiling, so the wall is "
        "latency or queue depth ({jobs:.0f} job(s)): more jobs or a deeper queue would move "
        "it.",
        evidence=("cpu_idle_share", "cpu_iowait_share", "disk_util"),
    ),
)


_COUNTED = re.compile(r"\b(\d[\d,]*(?:\.\d+)?) (\w+)\(s\)")


def plurals(text: str) -> str:
    """A template's ``N word(s)`` as English once N is known: ``1 task``, ``2 tasks``."""
    return _COUNTED.sub(lambda m: f"{m[1]} {m[2]}" if m[1] == "1" else f"{m[1]} {m[2]}s", text)


def _num(v: Mapping[str, Any], key: str) -> float | None:
    """A finite number of ``v`` (``derived``'s own reading, kept here: once the quantities are
    computed, judging them does not go back to the module that computed them)."""
    x = v.get(key)
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def _round(x: Any) -> Any:
    return float(f"{x:.6g}") if isinstance(x, float) else x


def fire(
    metrics: Mapping[str, float],
    context: Mapping[str, float],
    *,
    lock_rows: Sequence[Mapping[str, Any]] = (),
    tasks_top: Sequence[Mapping[str, Any]] = (),
    lock_callers: str | None = None,
    top_functions: str | None = None,
    only: Collection[str] | None = None,
) -> list[Verdict]:
    """Verdicts of the rules that fire, in table order; ``[]`` when none does (the caller
    shows :data:`NO_RULE_FIRED`). ``only``: the rules that may fire at all (those that stand
    beside the run's wall): a rule left out neither fires nor replaces another.

    ``metrics``: the run's metrics by name; ``context``: what the caller knows of the run
    (:data:`CONTEXT_KEYS`), which overrides a metric of the same name (``cpus``).
    ``lock_rows``: the ``locks`` probe's table (``lock_contention.json``) to name the top
    callers in the lock-contention sentence; ``tasks_top``: the ``tasks`` probe's busiest
    threads (``tasks_top.json``) to name neighbours.
    """
    return fire_values(
        derived_values(metrics, context, lock_rows, tasks_top),
        lock_callers=lock_callers,
        top_functions=top_functions,
        only=only,
    )


def fire_values(
    values: Mapping[str, Any],
    *,
    lock_callers: str | None = None,
    top_functions: str | None = None,
    only: Collection[str] | None = None,
) -> list[Verdict]:
    """``fire`` on the quantities already computed (``derived.values``)."""
    values = dict(values)
    if top_functions:
        values["profile_top_functions"] = top_functions
    elif "profile_top_functions" not in values:
        values["profile_top_functions"] = "functions not recorded"
    if lock_callers:
        values["lock_callers"] = f"top callers {lock_callers}"
    elif "lock_callers" not in values:
        values["lock_callers"] = "callers not recorded"
    fired: dict[str, Verdict] = {}
    dropped: set[str] = set()
    for row in RULES:
        if row.rule in fired or (only is not None and row.rule not in only):
            continue
        nums = {c.key: _num(values, c.key) for c in row.when}
        if any(x is None for x in nums.values()):
            continue
        if not all(c.holds(nums[c.key] or 0.0) for c in row.when):
            continue
        fields = _fields(row.sentence)
        if any(f not in values for f in fields):
            continue
        evidence: dict[str, Any] = {
            k: _round(values[k])
            for k in [*nums, *fields, *row.evidence]
            if k in values and not isinstance(values[k], str)
        }
        evidence["thresholds"] = {c.key: f"{c.op} {c.threshold:g}" for c in row.when}
        sentence = plurals(row.sentence.format(**values))
        if row.tail and isinstance(values.get(row.tail), str):
            sentence += " " + values[row.tail]
        fired[row.rule] = Verdict(row.rule, sentence, evidence)
        dropped.update(row.replaces)
    return [v for name, v in fired.items() if name not in dropped]


#: How a near miss names a quantity: label and how to print a value of it.
_LABELS: dict[str, tuple[str, str]] = {
    "flusher_cpu_share_max": ("flusher CPU", "cpu"),
    "throttled_share": ("time throttled", "%"),
    "kswapd_cpu_share": ("kswapd CPU", "cpu"),
    "vm_pgsteal_pages_per_s": ("pages reclaimed/s", "n"),
    "vm_allocstall_events_per_s": ("direct reclaim/s", "n"),
    "device_ratio": ("share of the direct ceiling", "%"),
    "disk_util": ("device busy", "%"),
    "device_physical": ("a physical device", "flag"),
    "memcopy_ratio": ("share of memory copy", "%"),
    "lock_wait_share": ("lock wait", "%"),
    "cpu_kernel_share": ("kernel CPU", "%"),
    "cpu_free_share": ("CPU idle or waiting", "%"),
    "cpu_sys_share_max": ("kernel CPU at peak", "%"),
    "tasks_neighbours_share": ("neighbours' CPU", "%"),
    "writeback_share": ("writeback's share of the time", "%"),
    "writeback_ceiling_ratio": ("writeback's share of the direct ceiling", "%"),
    "profile_lock_share": ("lock slow paths", "%"),
    "profile_top_share": ("heaviest path of the profile", "%"),
    "busiest_thread_share": ("busiest thread on a CPU", "%"),
    "busiest_thread_alone": ("its share of the workload's CPU", "%"),
}


def _fmt(kind: str, x: float) -> str:
    if kind == "%":
        return f"{100 * x:.0f}%"
    if kind == "cpu":
        return f"{x:.2f} CPU"
    if kind == "flag":
        return "yes" if x else "no"
    return f"{x:,.0f}"


def near_misses(
    metrics: Mapping[str, float], context: Mapping[str, float], fired: Sequence[str]
) -> list[str]:
    """For every rule that did not fire, its closest row: each condition's value against its
    threshold (``kernel CPU 75%, needs >= 85%``); rows with a missing quantity are skipped."""
    return near_misses_values(derived_values(metrics, context), fired)


def near_misses_values(values: Mapping[str, Any], fired: Sequence[str]) -> list[str]:
    """``near_misses`` on the quantities already computed (``derived.values``)."""
    best: dict[str, tuple[float, str]] = {}
    for row in RULES:
        if row.rule in fired:
            continue
        nums = {c.key: _num(values, c.key) for c in row.when}
        if any(x is None for x in nums.values()):
            continue
        closeness = min(_closeness(c, nums[c.key] or 0.0) for c in row.when)
        if closeness >= 1.0:
            continue  # it held: the rule fired, or a more specific verdict replaced it
        parts = []
        for c in row.when:
            label, kind = _LABELS.get(c.key, (c.key, "n"))
            need = "yes" if kind == "flag" else f"{c.op} {_fmt(kind, c.threshold)}"
            parts.append(f"{label} {_fmt(kind, nums[c.key] or 0.0)}, needs {need}")
        if row.rule not in best or closeness > best[row.rule][0]:
            best[row.rule] = (closeness, f"{row.rule}: " + "; ".join(parts))
    return [text for _, text in sorted(best.values(), key=lambda x: -x[0])]


def _closeness(c: Cond, value: float) -> float:
    """1 when the condition holds, towards 0 the further it is from holding."""
    if c.holds(value):
        return 1.0
    if c.op == ">=":
        return max(0.0, value / c.threshold) if c.threshold > 0 else 0.0
    return max(0.0, c.threshold / value) if value > 0 else 0.0


def sentences(verdicts: Sequence[Verdict]) -> list[str]:
    """The verdicts' sentences, or :data:`NO_RULE_FIRED` alone."""
    return [v.sentence for v in verdicts] or [NO_RULE_FIRED]


def to_json(run: Any, verdicts: Sequence[Verdict], skipped_probes: Sequence[Any] = ()) -> dict[str, Any]:
    """``{"run", "verdicts": [{"rule", "sentence", "evidence"}], "skipped_probes": [...]}``.

    ``skipped_probes``: names, or ``{"probe", "reason"}`` mappings, as the caller keeps them.
    """
    return {
        "run": run,
        "verdicts": [
            {"rule": v.rule, "sentence": v.sentence, "evidence": dict(v.evidence)} for v in verdicts
        ],
        "skipped_probes": list(skipped_probes),
    }


#: Rules of the CPU-time table that stay beside a wall verdict of each kind: they add
#: evidence of the same mechanism. The others account the whole machine's CPU time and are
#: dropped when the workload's own budget is known.
CONSISTENT: dict[str, tuple[str, ...]] = {
    "dirty-throttle": ("writers-throttled", "flusher-saturated", "writeback-phase"),
    "writeback": ("writers-throttled", "flusher-saturated", "writeback-phase"),
    "device": ("device-bound", "writeback-phase"),
    "lock": ("lock-contention",),
    "reclaim": ("reclaim-bound",),
    "memcg-reclaim": ("reclaim-bound",),
    "memcopy": ("writeback-phase",),
    "cpu-kernel": ("writeback-phase", "lock-contention"),
}


@dataclass(frozen=True)
class Judged:
    """The verdicts (the walls first, then the rules that fired), the rules' near misses and
    the sentences an explanation says, in order."""

    verdicts: tuple[Verdict, ...]
    near_misses: tuple[str, ...]
    sentences: tuple[str, ...]


def judge(
    fire_on: Mapping[str, Any],
    near_on: Mapping[str, Any],
    walls: Sequence[Wall],
    notes: Sequence[str] = (),
    *,
    budgeted: bool,
    unexplained: str = "",
    lock_callers: str | None = None,
    top_functions: str | None = None,
) -> Judged:
    """The rules judged beside the walls: with a budget (``budgeted``) only the rules that
    stand beside its walls may fire (``CONSISTENT``: one left out must not replace one kept,
    as device-bound in writeback would replace writeback-phase beside a memcopy wall), and only
    their near misses are kept; without one, every rule over the whole machine's CPU time.
    ``fire_on``/``near_on``: the quantities (``derived.values``) the rules fire on and their
    near misses are measured on; ``unexplained`` leads the sentences of a run without a budget,
    the walls' ``notes`` follow theirs."""
    keep = (*(r for w in walls for r in CONSISTENT.get(w.kind, ())), "writeback-phase")
    verdicts = [
        Verdict(
            w.kind,
            w.sentence if i == 0 else "Also: " + w.sentence,
            {**w.evidence, "share": round(w.share, 4)},
        )
        for i, w in enumerate(walls)
    ] + fire_values(
        fire_on, lock_callers=lock_callers, top_functions=top_functions, only=keep if budgeted else None
    )
    said = sentences(verdicts) if verdicts or not budgeted else []
    return Judged(
        tuple(verdicts),
        tuple(
            m
            for m in near_misses_values(near_on, [v.rule for v in verdicts])
            if not budgeted or m.split(":", 1)[0] in keep
        ),
        tuple(([unexplained] if unexplained else []) + (said + list(notes) or sentences([]))),
    )
