"""Kernel paths: which path of the kernel each sampled stack of a CPU profile belongs to, from a
table of symbol patterns, and the share of CPU time of each path (pure; docs/flamegraphs.md).

Input is folded stacks as the ``profile`` probe stores them (``comm;frame;…;frame count``, root
first, kernel frames marked ``_[k]``). One rule decides each stack, in this order:

1. **lock**: a lock slow path anywhere in the stack (spinning or sleeping on a lock is the
   lock's cost, whatever subsystem asked for it); the function is the lock's caller, the first
   frame above the slow path that is not itself lock machinery.
2. **skid**: a leaf that this machine's sampling is known to misplace (``SKID``) counts where
   the time really went.
3. **owner**: a frame of a path that owns everything it calls (writeback, the loop worker,
   reclaim): the outermost one wins. The flusher's time in xfs or the block layer is the
   writeback's cost, the loop worker's copy into its backing file is the bed's cost.
4. **leaf-most**: else the frame nearest the leaf that matches a path: the CPU was copying,
   allocating a folio, in the filesystem… (a ``memcpy`` under ``copy_page_to_iter`` is copy,
   found one frame up; under ``xfs_buf_item_format`` it is xfs).
5. no kernel frame at all: **user**; kernel frames but no match: **other**.
"""

from __future__ import annotations

import base64
import fnmatch
import gzip
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ...model import Metric

#: (path, label, owns what it calls, patterns). For a frame that matches several rows, the
#: first row wins (``shmem_get_folio*`` is page cache before ``shmem_*`` is filesystem).
RULES: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
    (
        "copy",
        "copy to/from user",
        False,
        (
            "copy_user*",
            "rep_movs*",
            "_copy_to_iter*",
            "_copy_from_iter*",
            "copy_page_to_iter*",
            "copy_page_from_iter*",
            "copy_folio_to_iter*",
            "copy_folio_from_iter*",
            "copy_to_user*",
            "copy_from_user*",
            "_copy_to_user",
            "_copy_from_user",
            "__copy_user*",
            "raw_copy_*",
            "copyin",
            "copyout",
            "memcpy_to_iter",
            "memcpy_from_iter*",
        ),
    ),
    (
        "page_cache",
        "page-cache folios and LRU",
        False,
        (
            "filemap_add_folio",
            "__filemap_add_folio",
            "__filemap_get_folio*",
            "filemap_get_entry",
            "filemap_get_folio*",
            "filemap_alloc_folio*",
            "filemap_get_pages",
            "filemap_get_read_batch",
            "filemap_remove_folio",
            "__filemap_remove_folio",
            "folio_alloc*",
            "__folio_alloc*",
            "alloc_pages*",
            "__alloc_pages*",
            "__alloc_frozen_pages*",
            "get_page_from_freelist",
            "lru_*",
            "folio_add_lru*",
            "__folio_batch*",
            "folio_batch_*",
            "folio_mark_accessed",
            "mark_page_accessed",
            "workingset_*",
            "shmem_get_folio*",
            "shmem_alloc*",
            "shmem_add_to_page_cache",
            "page_cache_ra_*",
            "page_cache_async_ra",
            "page_cache_sync_ra",
            "folios_put*",
            "__folio_put",
            "free_unref_*",
            "release_pages",
            "truncate_inode_*",
            "*mem_cgroup_charge*",
            "memcg*_commit_charge",
        ),
    ),
    (
        "filesystem",
        "filesystem (read/write paths, block mapping, metadata)",
        False,
        (
            "iomap_*",
            "xfs_*",
            "xfs*",
            "xlog_*",
            "ext4_*",
            "jbd2_*",
            "btrfs_*",
            "shmem_*",
            "generic_perform_write",
            "__generic_file_write_iter",
            "generic_file_*",
            "generic_write_end",
            "filemap_read",
            "block_write_begin",
            "__block_write_begin*",
            "block_write_end",
            "mark_buffer_dirty",
        ),
    ),
    (
        "writeback",
        "writeback",
        True,
        (
            "wb_*",
            "writeback_*",
            "__writeback_*",
            "write_cache_pages",
            "do_writepages",
            "*_writepages",
            "balance_dirty_pages*",
            "folio_end_writeback",
            "__folio_end_writeback",
        ),
    ),
    (
        "block",
        "block layer",
        False,
        (
            "blk_*",
            "__blk_*",
            "submit_bio*",
            "__submit_bio*",
            "bio_*",
            "__bio_*",
            "blkdev_*",
            "sbitmap_*",
            "__sbitmap_*",
            "dd_*",
            "bfq_*",
            "kyber_*",
        ),
    ),
    ("loop", "loop worker (the bed's own cost)", True, ("loop_*", "lo_*")),
    (
        "reclaim",
        "reclaim and compaction",
        True,
        (
            "shrink_*",
            "kswapd*",
            "balance_pgdat",
            "try_to_free_*",
            "do_try_to_free_pages",
            "__alloc_pages_direct_reclaim",
            "__alloc_pages_direct_compact",
            "__perform_reclaim",
            "compact_*",
            "kcompactd*",
            "try_to_compact_pages",
            "evict_folios",
        ),
    ),
    (
        "idle",
        "idle",
        False,
        (
            "do_idle",
            "cpuidle_*",
            "default_idle*",
            "default_enter_idle",
            "poll_idle",
            "*safe_halt",
            "acpi_idle_*",
            "intel_idle*",
            "mwait_idle*",
            "cpu_idle_poll*",
            "arch_cpu_idle*",
        ),
    ),
)
#: lock slow paths (rule 1).
LOCK_SLOW: tuple[str, ...] = (
    "*_spin_lock_slowpath",
    "queued_read_lock_slowpath",
    "queued_write_lock_slowpath",
    "rwsem_down_*",
    "rwsem_optimistic_spin",
    "rwsem_spin_on_owner",
    "__mutex_lock*",
    "mutex_lock*slowpath",
    "mutex_spin_on_owner",
    "osq_lock",
    "__down_common",
    "rt_mutex_slowlock*",
    "__rt_mutex_slowlock*",
    "percpu_rwsem_wait",
)
#: lock machinery skipped when looking for the lock's caller.
LOCK_API: tuple[str, ...] = LOCK_SLOW + (
    "_raw_*",
    "__raw_*",
    "do_raw_*",
    "down_read*",
    "down_write*",
    "mutex_lock*",
    "spin_lock*",
    "percpu_down_*",
    "__down*",
    "down",
)
#: (leaf, its caller, path): samples this machine puts on the wrong function. Measured on a
#: 2-CPU VM (cpu-clock is hrtimer-driven): fio overwriting tmpfs at 4.8 GB/s on one CPU, whose
#: rep-movsb copy ceiling is 6.8 GB/s, must spend >= 70% of its time copying, yet 56% of the
#: samples sat on one instruction of folio_unlock (the one after its ``lock andb``) and 12% in
#: the copy: the copy's samples land on the next locked instruction.
SKID: tuple[tuple[str, str, str], ...] = (("folio_unlock", "shmem_write_end", "copy"),)
#: Leaves where interrupts come back on. The profile samples on cpu-clock, an hrtimer: a tick
#: that falls while interrupts are off is taken where they are enabled again, so the time of an
#: interrupts-off section lands on the function that ends it, not on the one that ran:
#: ``finish_task_switch`` after a context switch (the runqueue lock is taken in ``__schedule``),
#: ``_raw_spin_unlock_irq`` after a section under an interrupt-safe lock (``loop_queue_rq``'s).
#: The time is the caller's, with interrupts off (``sampled_leaf``).
IRQ_ON: tuple[str, ...] = (
    "finish_task_switch",
    "_raw_spin_unlock_irq",
    "_raw_spin_unlock_irqrestore",
    "_raw_read_unlock_irq*",
    "_raw_write_unlock_irq*",
)

PATHS: tuple[str, ...] = tuple(r[0] for r in RULES[:-1]) + ("lock", "idle", "other", "user")
LABELS: dict[str, str] = {
    **{r[0]: r[1] for r in RULES},
    "lock": "lock slow paths",
    "other": "other kernel",
    "user": "user space",
}
#: compiler clones and partial functions: ``lo_rw_aio.isra.0`` is ``lo_rw_aio``.
_SUFFIX = re.compile(r"(\.(isra|constprop|part|cold|llvm|lto_priv)(\.\d+)?)+$")
_ANNOT = re.compile(r"_\[[kjiw]\]$")


def _regex(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(p) for p in patterns))


_RULE_RE = tuple((name, owner, _regex(pats)) for name, _, owner, pats in RULES)
_LOCK_RE = _regex(LOCK_SLOW)
_LOCK_API_RE = _regex(LOCK_API)
_IRQ_ON_RE = _regex(IRQ_ON)


def is_kernel(frame: str) -> bool:
    """A kernel frame (``inferno-collapse-perf --kernel`` marks them ``_[k]``), except the vDSO:
    perf resolves ``__vdso_clock_gettime`` through the kernel's map, but it runs in user space."""
    return frame.endswith("_[k]") and not frame.startswith("__vdso_")


@lru_cache(maxsize=65536)
def function(frame: str) -> str:
    """The function a frame names: annotation and clone suffixes dropped."""
    return _SUFFIX.sub("", _ANNOT.sub("", frame))


def sampled_leaf(functions: Sequence[str]) -> tuple[str, int]:
    """The function a stack's samples belong to (kernel functions, root first) and the index
    of its frame: the leaf, or for a leaf where interrupts come back on (``IRQ_ON``) its
    caller, named ``caller with interrupts off``."""
    leaf = functions[-1]
    if len(functions) >= 2 and _IRQ_ON_RE.match(function(leaf)):
        return f"{function(functions[-2])} with interrupts off", len(functions) - 2
    return leaf, len(functions) - 1


@lru_cache(maxsize=65536)
def _rule(frame: str) -> tuple[str, bool] | None:
    fn = function(frame)
    for name, owner, rx in _RULE_RE:
        if rx.match(fn):
            return name, owner
    return None


@lru_cache(maxsize=65536)
def _is_lock(frame: str) -> bool:
    return bool(_LOCK_RE.match(function(frame)))


@lru_cache(maxsize=65536)
def _is_lock_api(frame: str) -> bool:
    return bool(_LOCK_API_RE.match(function(frame)))


@dataclass(frozen=True)
class Decision:
    """Where one stack's samples go: the path and the function that put them there."""

    path: str
    function: str


def _inner(kernel: Sequence[str]) -> Decision | None:
    """Rules 2 and 4 on kernel frames (root first): skid, else the leaf-most matching frame."""
    if len(kernel) >= 2:
        leaf, caller = function(kernel[-1]), function(kernel[-2])
        for s_leaf, s_caller, path in SKID:
            if leaf == s_leaf and fnmatch.fnmatchcase(caller, s_caller):
                return Decision(path, f"{leaf} (skid)")
    for f in reversed(kernel):
        r = _rule(f)
        if r is not None and not r[1]:
            return Decision(r[0], function(f))
    return None


@lru_cache(maxsize=65536)
def classify(stack: str) -> Decision:
    """The path of one folded stack (``comm;frame;…``), by the rules in the module docstring."""
    frames = stack.split(";")[1:]
    kernel = [f for f in frames if is_kernel(f)]
    if not kernel:
        return Decision("user", function(frames[-1]) if frames else "")
    for i in range(len(kernel) - 1, -1, -1):
        if _is_lock(kernel[i]):
            while i > 0 and _is_lock(kernel[i - 1]):
                i -= 1  # the slow path's entry: rwsem_down_write_slowpath, not its spin
            j = i
            while j >= 0 and _is_lock_api(kernel[j]):
                j -= 1
            caller = function(kernel[j]) if j >= 0 else "?"
            return Decision("lock", f"{caller} -> {function(kernel[i])}")
    for f in kernel:
        r = _rule(f)
        if r is not None and r[1]:
            inner = _inner(kernel[kernel.index(f) + 1 :])
            return Decision(r[0], f"{inner.function} ({inner.path})" if inner else _leaf(kernel))
    inner = _inner(kernel)
    return inner if inner is not None else Decision("other", _leaf(kernel))


def _leaf(kernel: Sequence[str]) -> str:
    """The function the samples of these kernel frames (root first) belong to."""
    return sampled_leaf([function(k) for k in kernel])[0]


@dataclass(frozen=True)
class Share:
    """A name (function or stack) with its samples and share of all samples."""

    name: str
    samples: int
    share: float


@dataclass(frozen=True)
class PathShare:
    """One kernel path: its samples, share of all samples, and its heaviest functions and
    stacks (each with its share of all samples)."""

    path: str
    label: str
    samples: int
    share: float
    top_functions: tuple[Share, ...]
    top_stacks: tuple[Share, ...]


@dataclass(frozen=True)
class Attribution:
    """Every path of ``PATHS`` (zeros included), in table order; shares sum to 1."""

    total_samples: int
    paths: tuple[PathShare, ...]

    def share(self, path: str) -> float:
        """The share of one path (0.0 for a path with no samples)."""
        return next((p.share for p in self.paths if p.path == path), 0.0)

    def ranked(self, *, busy_only: bool = True) -> list[PathShare]:
        """Paths with samples, heaviest first; without idle (and user) when ``busy_only``."""
        skip = ("idle",) if busy_only else ()
        return sorted((p for p in self.paths if p.samples and p.path not in skip), key=lambda p: -p.samples)


def attribute(stacks: Mapping[str, int], top: int = 5) -> Attribution:
    """Classify every stack and add up per path, with the ``top`` functions and stacks of each."""
    total = sum(stacks.values())
    per: dict[str, dict[str, dict[str, int]]] = {p: {"fn": {}, "stack": {}} for p in PATHS}
    for stack, n in stacks.items():
        d = classify(stack)
        acc = per[d.path]
        acc["fn"][d.function] = acc["fn"].get(d.function, 0) + n
        acc["stack"][stack] = acc["stack"].get(stack, 0) + n

    def tops(counts: dict[str, int]) -> tuple[Share, ...]:
        best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return tuple(Share(k, v, v / total) for k, v in best)

    out = []
    for p in PATHS:
        n = sum(per[p]["stack"].values())
        out.append(
            PathShare(p, LABELS[p], n, n / total if total else 0.0, tops(per[p]["fn"]), tops(per[p]["stack"]))
        )
    return Attribution(total, tuple(out))


def path_metrics(att: Attribution) -> list[Metric]:
    """``profile_<path>_share`` for every path (share of all sampled CPU time, idle included)."""
    return [Metric(f"profile_{p.path}_share", p.share, "share", "lower") for p in att.paths]


def parse_folded(text: str) -> dict[str, int]:
    """``stack count`` lines → ``{stack: count}`` (repeated stacks summed, junk lines skipped)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            out[stack] = out.get(stack, 0) + int(count)
    return out


def decode_folded(body: str) -> dict[str, int]:
    """The ``profile.folded.gz`` artifact body (gzip, base64: ``model.gunzip_text``'s form,
    undone here so that explain's walk does not go back to the model) → ``{stack: count}``."""
    return parse_folded(gzip.decompress(base64.b64decode(body)).decode(errors="replace"))


@dataclass(frozen=True)
class Profile:
    """A run's CPU profile, read once for explain: its stacks, their attribution to paths,
    the paths with samples heaviest first (idle left out), and ``profile_<path>_share``."""

    stacks: dict[str, int]
    attribution: Attribution
    ranked: tuple[PathShare, ...]
    metrics: dict[str, float]


def read_profile(body: str | None) -> Profile | None:
    """The profile artifact's body decoded and attributed; None without one or when it
    cannot be decoded."""
    if body is None:
        return None
    try:
        stacks = decode_folded(body)
    except (ValueError, OSError, EOFError):
        return None
    att = attribute(stacks)
    return Profile(stacks, att, tuple(att.ranked()), {m.name: m.value for m in path_metrics(att)})
