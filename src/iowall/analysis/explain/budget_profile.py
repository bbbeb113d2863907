"""The workload's kernel on-CPU time in its budget, read from the CPU profile's folded stacks
(pure; ``analysis.explain.budget``): its seconds split by kernel path (``analysis.explain.kernel_paths``),
by mechanism (``analysis.explain.kernel_knowledge``) and inside a mechanism that also blocks
(``analysis.explain.offcpu``), and the kernel function it was sampled on most. Only the stacks of
the workload's own threads count (their task names, ``comm;…``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .kernel_knowledge import mechanism_of
from .kernel_paths import attribute, sampled_leaf
from .kernel_paths import classify as classify_path
from .offcpu import SYNC_CALL, classify, syscall_of


def _kernel_stacks(profile: Mapping[str, int], comms: set[str]) -> dict[str, int]:
    """The workload's stacks with kernel frames, only those frames (root first)."""
    out: dict[str, int] = {}
    for stack, n in profile.items():
        frames = stack.split(";")
        if frames[0] not in comms:
            continue
        kernel = [f[:-4] for f in frames[1:] if f.endswith("_[k]")]
        if kernel:
            k = ";".join(kernel)
            out[k] = out.get(k, 0) + n
    return out


def _split(
    profile: Mapping[str, int], comms: set[str], kernel_s: float, key: Callable[[str], str]
) -> dict[str, float]:
    """The workload's kernel on-CPU seconds split by ``key`` of each stack, in proportion to
    its profile samples with kernel frames, largest first."""
    mine = _kernel_stacks(profile, comms)
    total = sum(mine.values())
    out: dict[str, float] = {}
    for s, n in mine.items():
        k = key(s)
        out[k] = out.get(k, 0.0) + kernel_s * n / total
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def cpu_mechanisms(profile: Mapping[str, int], comms: set[str], kernel_s: float) -> dict[str, float]:
    """The workload's kernel on-CPU seconds split by mechanism (``analysis.explain.kernel_knowledge``)."""
    return _split(profile, comms, kernel_s, mechanism_of)


def cpu_top(profile: Mapping[str, int], comms: set[str], path: str = "") -> tuple[str, str]:
    """The leaf kernel function the workload's threads were sampled on most, with the most
    frequent caller of it that is not plumbing (``lzo1x_1_do_compress``, ``zcomp_compress``);
    a leaf where interrupts come back on is its caller's time (``kernel_paths.sampled_leaf``);
    with ``path``, among the stacks of that kernel path only (``kernel_paths.classify``)."""
    leaves: dict[str, int] = {}
    callers: dict[tuple[str, str], int] = {}
    mine = {s: n for s, n in profile.items() if s.split(";", 1)[0] in comms}
    if path:  # the workload's stacks only: classifying every thread's would cost the most
        mine = {s: n for s, n in mine.items() if classify_path(s).path == path}
    for s, n in _kernel_stacks(mine, comms).items():
        frames = s.split(";")
        leaf, at = sampled_leaf(frames)
        leaves[leaf] = leaves.get(leaf, 0) + n
        caller = next((f for f in reversed(frames[:at]) if f != frames[at]), "")
        callers[(leaf, caller)] = callers.get((leaf, caller), 0) + n
    if not leaves:
        return "", ""
    top = max(leaves.items(), key=lambda kv: kv[1])[0]
    caller = max(((c, n) for (lf, c), n in callers.items() if lf == top), key=lambda kv: kv[1])[0]
    return top, caller


def kernel_paths(profile: Mapping[str, int], comms: set[str], kernel_s: float) -> dict[str, float]:
    """The workload's kernel on-CPU seconds split by path, in proportion to the profile's
    kernel samples of stacks whose task name is one of the workload's (``comm;…``)."""
    mine = {s: n for s, n in profile.items() if s.split(";", 1)[0] in comms}
    if not mine:
        return {}
    att = attribute(mine)
    kernel = [p for p in att.paths if p.path not in ("user", "idle") and p.samples]
    total = sum(p.samples for p in kernel)
    return {p.path: kernel_s * p.samples / total for p in kernel} if total else {}


#: Mechanisms whose on-CPU time counts with their blocked time: the time a thread spends in
#: fsync, a fault, reclaim or balance_dirty_pages is that mechanism's, on a CPU or not.
CONTEXTS = ("fsync", "fault", "reclaim", "dirty-throttle")


def kernel_contexts(profile: Mapping[str, int], comms: set[str], kernel_s: float) -> dict[str, float]:
    """The workload's kernel on-CPU seconds inside each of ``CONTEXTS``, in proportion to its
    profile stacks with kernel frames whose frames ``analysis.explain.offcpu`` reads as that reason;
    fsync only inside a call that syncs (``offcpu.SYNC_CALL``): xlog_cil_commit in a create or a
    close is that transaction's commit work on a CPU, not a wait for stable storage."""
    total = 0
    hits: dict[str, int] = {}
    for stack, n in profile.items():
        frames = stack.split(";")
        if frames[0] not in comms:
            continue
        kernel = [f[:-4] for f in frames[1:] if f.endswith("_[k]")]
        if not kernel:
            continue
        total += n
        r = classify(";".join(kernel)).reason
        if r == "fsync" and not any(SYNC_CALL.match(f) for f in kernel):
            continue  # a log's frames in a create or a close: its transaction's commit, on a CPU
        if r in CONTEXTS:
            hits[r] = hits.get(r, 0) + n
    return {r: kernel_s * n / total for r, n in hits.items()} if total else {}


def cpu_syscalls(profile: Mapping[str, int], comms: set[str], kernel_s: float) -> dict[str, float]:
    """The workload's kernel on-CPU seconds by the system call each stack is in (``""``: none):
    which calls the kernel time is spent in (a file created per write: ``openat``, ``close``)."""
    return _split(profile, comms, kernel_s, syscall_of)


@dataclass(frozen=True)
class ProfileSplit:
    """The workload's kernel on-CPU seconds split by path, by context and by mechanism, and
    the kernel function it was sampled on most with its caller."""

    paths: dict[str, float] = field(default_factory=dict)
    contexts: dict[str, float] = field(default_factory=dict)
    mechanisms: dict[str, float] = field(default_factory=dict)
    top: tuple[str, str] = ("", "")
    syscalls: dict[str, float] = field(default_factory=dict)
    #: ``top`` among the stacks of the kernel path that holds most of the time
    path_top: tuple[str, str] = ("", "")


def split_kernel_time(profile: Mapping[str, int], comms: set[str], kernel_s: float) -> ProfileSplit:
    """Every split of the workload's kernel time the budget keeps, from one profile."""
    paths = kernel_paths(profile, comms, kernel_s)
    top_path = max(paths.items(), key=lambda kv: kv[1])[0] if paths else ""
    return ProfileSplit(
        paths,
        kernel_contexts(profile, comms, kernel_s),
        cpu_mechanisms(profile, comms, kernel_s),
        cpu_top(profile, comms),
        cpu_syscalls(profile, comms, kernel_s),
        cpu_top(profile, comms, top_path) if top_path else ("", ""),
    )


def helper_mechanisms(profile: Mapping[str, int] | None, comms: set[str], cpus: float) -> dict[str, float]:
    """CPUs (over the profile, the whole point) that threads outside the workload spent in
    each known mechanism of ``analysis.explain.kernel_knowledge`` (btrfs's workers compressing, the
    loop worker, checksums): the profile's kernel stacks of other tasks, as a share of all
    samples (idle included: ``perf record -a``) times the CPUs."""
    if not profile or not cpus:
        return {}
    total = sum(profile.values())
    out: dict[str, float] = {}
    for stack, n in profile.items():
        frames = stack.split(";")
        if frames[0] in comms or frames[0].startswith("swapper"):
            continue
        kernel = [f[:-4] for f in frames[1:] if f.endswith("_[k]")]
        if not kernel:
            continue
        m = mechanism_of(";".join(kernel))
        if m:
            out[m] = out.get(m, 0.0) + n
    return {m: round(cpus * n / total, 3) for m, n in out.items()} if total else {}
