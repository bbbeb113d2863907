"""The budget as reports and JSON keep it (pure; ``analysis.explain.budget``'s ``Budget``)."""

from __future__ import annotations

from typing import Any

from .budget import Budget


def to_json(b: Budget) -> dict[str, Any]:
    """The budget as reports and JSON keep it: shares and seconds per category, per thread."""
    w = b.wall_s
    return {
        "window": [round(b.window[0], 3), round(b.window[1], 3)],
        "window_source": b.window_source,
        "wall_s": round(w, 4),
        "shares": {c: round(s / w, 4) for c, s in b.totals.items() if s > 0} if w else {},
        "seconds": {c: round(s, 4) for c, s in b.totals.items() if s > 0},
        "kernel_paths": {p: round(s, 4) for p, s in b.kernel_paths.items()},
        "kernel_contexts": {r: round(s, 4) for r, s in b.kernel_contexts.items()},
        "top_functions": {
            r: {
                "function": f,
                "caller": c,
                "syscall": b.syscalls.get(r, ""),
                "sleeps_in": b.leaves.get(r, ""),
            }
            for r, (f, c) in b.top_functions.items()
        },
        "threads": [
            {
                "tid": t.tid,
                "comm": t.comm,
                "wall_s": round(t.wall_s, 4),
                "seconds": {c: round(s, 4) for c, s in t.seconds.items() if s > 0},
            }
            for t in b.threads
        ],
        "left_out": list(b.left_out),
        "cgroups": [dict(c) for c in b.cgroups],
        "cpus": (
            {"outside": round(b.cpus[0], 3), "working": round(b.cpus[1], 3)} if b.cpus is not None else None
        ),
        "mechanisms": {r: {"mechanism": m, "share": round(x, 4)} for r, (m, x) in b.mechanisms.items()},
        "mechanism_shares": {
            r: {m or "(not in the table)": round(x, 4) for m, x in c.items()}
            for r, c in b.mechanism_shares.items()
        },
        "cpu_mechanisms": {m or "(not in the table)": round(v, 4) for m, v in b.cpu_mechanisms.items()},
        "cpu_top": {"function": b.cpu_top[0], "caller": b.cpu_top[1]},
        "cpu_syscalls": {c or "(none)": round(v, 4) for c, v in b.cpu_syscalls.items()},
    }
