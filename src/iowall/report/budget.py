"""The wall-clock budget of a point's workload threads as a text table (``explain``)."""

from __future__ import annotations

from collections.abc import Mapping

from ..analysis.explain.budget import Budget
from ..analysis.explain.kernel_paths import LABELS as PATH_LABELS
from ..analysis.explain.offcpu import LABELS
from ..vocab.cpuclasses import TITLES
from .table import text_table

_TITLES = {
    "user": "on a CPU: user space",
    "kernel": "on a CPU: kernel",
    "runnable:quota": "runnable: cgroup CPU quota",
    "runnable:own": "runnable: behind its own threads and the bed's workers",
    "runnable:others": "runnable: other processes",
    "unaccounted": "unaccounted",
}


def state_title(category: str) -> str:
    """A budget state as a reader names it (``blocked: writeback throttling``)."""
    if category in _TITLES:
        return _TITLES[category]
    if category.startswith("blocked:"):
        return "blocked: " + LABELS.get(category.split(":", 1)[1], category)
    return category


def budget_lines(b: Budget, helpers: Mapping[str, float]) -> list[str]:
    """The budget's categories (the kernel split by path), seconds and share, and the
    threads it counts; ``helpers``: the CPUs of each class of thread working for the point.
    Seconds are taken at the precision the JSON gives them (``budget_json.to_json``: 4 decimals),
    so that the text and the JSON of one explanation never disagree in a digit."""
    wall = round(b.wall_s, 4)
    if wall <= 0:
        return []
    secs = {c: round(s, 4) for c, s in b.totals.items() if s > 0}
    rows: list[list[str]] = []
    for cat, s in sorted(secs.items(), key=lambda kv: -kv[1]):
        if cat == "kernel":
            paths = {p: round(s, 4) for p, s in b.kernel_paths.items()}
            for p, ps in sorted(paths.items(), key=lambda kv: -kv[1]):
                rows.append(
                    [f"on a CPU: kernel, {PATH_LABELS.get(p, p)}", f"{ps:.2f}", f"{100 * ps / wall:.1f}%", ""]
                )
            if not b.kernel_paths:
                rows.append(["on a CPU: kernel", f"{s:.2f}", f"{100 * s / wall:.1f}%", ""])
            continue
        fn, caller = (
            b.top_functions.get(cat.split(":", 1)[1], ("", "")) if cat.startswith("blocked:") else ("", "")
        )
        where = fn + (f" < {caller}" if caller and caller != fn else "")
        rows.append([state_title(cat), f"{s:.2f}", f"{100 * s / wall:.1f}%", where])
    w0, w1 = b.window
    head = (
        f"  where the workload's wall-clock time went (I/O window {w0:.2f}-{w1:.2f} s "
        f"from {b.window_source}; {len(b.threads)} thread(s), {wall:.2f} "
        "thread-seconds):"
    )
    out = [head, text_table(["state", "s", "share", "most sampled (< caller)"], rows, indent=4, left=1)]
    if b.kernel_contexts:
        parts = ", ".join(
            f"{LABELS.get(r, r)} {v:.2f} s"
            for r, v in sorted(
                ((r, round(v, 4)) for r, v in b.kernel_contexts.items()), key=lambda kv: -kv[1]
            )
        )
        out.append(
            f"    of the time on a CPU in the kernel, inside: {parts} (counted with those waits in the wall)"
        )
    if helpers:
        out.append(
            "    threads working for the point, CPUs over the window: "
            + ", ".join(f"{TITLES.get(c, c)} {v:.2f}" for c, v in helpers.items())
        )
    if b.left_out:
        out.append(f"    left out (did none of the point's work): {', '.join(b.left_out)}")
    return out
