"""docs/explain.md's sections of induced walls from a corpus benchmark's cases: for each kind,
its first quiet case: what was induced (and, for the second corpus, the control and what a
kernel developer said before the first scored run), the ground truth, and `iowall explain` as
it printed it (the CPU-time tables cut: the budget and the device side are the point).

    .venv/bin/python benchmarks/explain_corpus.py --json cases.json
    .venv/bin/python benchmarks/explain_doc.py cases.json [--corpus 1|2] > sections.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.wall_corpus import KINDS  # noqa: E402
from tests.wall_corpus2 import EXPECTED, KINDS2  # noqa: E402

CUT = "\n\n  where the CPU time went"


def _first_quiet(doc: dict, name: str) -> dict | None:
    return next(
        (c for c in doc["cases"] if c["kind"] == name and not c["neighbour"] and c.get("explain_text")),
        None,
    )


def _mib(b: float | None) -> str:
    return f"{b / 2**20:.0f} MiB/s" if b else "?"


def sections(doc: dict, corpus: int = 1) -> str:
    out = []
    kinds = KINDS if corpus == 1 else KINDS2
    for name, kind in kinds.items():
        case = _first_quiet(doc, name)
        if case is None:
            continue
        text = case["explain_text"].split(CUT)[0].rstrip()
        if corpus == 1:
            head = f"Induced: {kind.what}."
        else:
            x = EXPECTED[name]
            want = x["wall"] + (f" / {x['mechanism']}" if x["mechanism"] else "")
            head = (
                f"Induced: {x['condition']}. Control: {x['control']}. Expected (committed before "
                f"the first scored run): **{want}**: {x['said']} Throughput: "
                f"{_mib(case.get('bw_bytes_per_s'))} against {_mib(case.get('control_bw_bytes_per_s'))} "
                f"without the condition. Scored: **{case['score']}**."
            )
        out.append(
            f"### {name}\n\n{head} Ground truth: {case['truth']['detail']}.\n\n"
            f"```\n$ iowall explain {case['run']}\n{text}\n```\n"
        )
    return "\n".join(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases")
    ap.add_argument("--corpus", type=int, choices=(1, 2), default=1)
    a = ap.parse_args()
    print(sections(json.loads(Path(a.cases).read_text()), a.corpus), end="")
