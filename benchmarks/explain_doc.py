"""docs/explain.md's "Eleven induced walls" sections from a corpus benchmark's cases: for each
kind, its first quiet case: what was induced, the ground truth, and `iowall explain` as it
printed it (the CPU-time tables cut: the budget is the point).

    .venv/bin/python benchmarks/explain_corpus.py --repeat 2 --json cases.json
    .venv/bin/python benchmarks/explain_doc.py cases.json > sections.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.wall_corpus import KINDS  # noqa: E402

CUT = "\n\n  where the CPU time went"


def sections(doc: dict) -> str:
    out = []
    for name, kind in KINDS.items():
        case = next(
            (c for c in doc["cases"] if c["kind"] == name and not c["neighbour"] and c.get("explain_text")),
            None,
        )
        if case is None:
            continue
        text = case["explain_text"].split(CUT)[0].rstrip()
        out.append(
            f"### {name}\n\nInduced: {kind.what}. Ground truth: "
            f"{case['truth']['detail']}.\n\n```\n$ iowall explain {case['run']}\n"
            f"{text}\n```\n"
        )
    return "\n".join(out)


if __name__ == "__main__":
    print(sections(json.loads(Path(sys.argv[1]).read_text())), end="")
