"""Two lock-contention profiles joined by caller (`iowall locks`): text and JSON."""

from __future__ import annotations

from dataclasses import asdict

from ..analysis.regress.locks import LockComparison, format_locks_table
from .emit import Format, json_text, renders


@renders(LockComparison, Format.text)
def _text(c: LockComparison) -> str:
    return (
        f"lock contention: (a) {c.a} runs {list(c.a_runs)}   (b) {c.b} runs {list(c.b_runs)}"
        f"\n{format_locks_table(c.rows)}\n"
    )


@renders(LockComparison, Format.json)
def _json(c: LockComparison) -> str:
    return json_text(
        {
            "a": {"selector": c.a, "runs": list(c.a_runs)},
            "b": {"selector": c.b, "runs": list(c.b_runs)},
            "rows": [
                {
                    "caller": j.caller,
                    "type": j.type,
                    "a": asdict(j.a),
                    "b": asdict(j.b),
                    "delta_contended": j.delta_contended,
                    "delta_wait_s": j.delta_wait_s,
                }
                for j in c.rows
            ],
        }
    )
