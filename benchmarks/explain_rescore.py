"""Explain a corpus benchmark's stored runs again with this tree and score them again:
explain is a pure function of a stored run, so a change to it is measured on the very runs
that showed the need, beside the scores they had (docs/benchmarks.md, "Explain on both
corpora").

    .venv/bin/python benchmarks/explain_rescore.py cases.json STORE

Prints each case whose score or wall changed and the counts before and after; writes
cases.rescored.json beside the cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.wall_corpus import KINDS, iowall_exe, score  # noqa: E402
from tests.wall_corpus2 import KINDS2  # noqa: E402


def main(cases: str, db: str) -> None:
    doc = json.loads(Path(cases).read_text())
    kinds = {**KINDS, **KINDS2}
    for c in doc["cases"]:
        if c.get("run") is None:
            continue
        cp = subprocess.run(
            [iowall_exe(), "explain", str(c["run"]), "--format", "json", "--db", db],
            capture_output=True,
            text=True,
            check=True,
        )
        ex = json.loads(cp.stdout)
        c["score_rescored"] = score(kinds[c["kind"]], ex, c["neighbour"])
        c["wall_rescored"] = ex.get("wall") or {}
        was, now = c.get("wall") or {}, c["wall_rescored"]
        if c["score_rescored"] != c["score"] or (was.get("kind"), was.get("mechanism")) != (
            now.get("kind"),
            now.get("mechanism"),
        ):
            print(
                f"{c['kind']}{' +neighbour' if c['neighbour'] else ''}: {c['score']} "
                f"({was.get('kind')}/{was.get('mechanism')}) -> {c['score_rescored']} "
                f"({now.get('kind')}/{now.get('mechanism')})"
            )
    out = Path(cases).with_suffix(".rescored.json")
    out.write_text(json.dumps(doc, indent=1))
    before = Counter(c["score"] for c in doc["cases"])
    after = Counter(c.get("score_rescored", c["score"]) for c in doc["cases"])
    print(f"as run: {dict(before)}; explained again: {dict(after)}; written {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
