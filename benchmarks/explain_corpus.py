"""How often `iowall explain` names an induced wall: every kind of tests/wall_corpus.py run
quiet and beside a busy neighbour, the confusion matrix as a Markdown table.

Each case induces its wall (a cgroup CPU quota, a blkio throttle, a memory cgroup limit,
fsync after every write, queue depth 1, tiny dirty limits, one shared file for eight
writers, busy loops, fio's rate limit, reads of the page cache, a loop bed on the virtio
disk), runs the kind's plan with ``iowall run`` inside it (I/O window 4 s, one repeat),
checks from the kernel's own counters that the wall was really there (the ground truth), and
scores ``iowall explain RUN --format json``:

- named: ``wall.kind`` is the expected kind;
- partial: the expected kind is a verdict's rule but not the wall, or the wall is one of
  the kind's near names (memcg-reclaim vs reclaim …);
- wrong: a wall of another kind;
- silent: no wall (an explain JSON without a ``wall`` key counts as silent).

The neighbour variant adds one ``sh -c 'while :; do :; done'`` (nice 0) for the whole case;
the expected wall stays the same unless the kind says otherwise (``beside``: eight writers
of one file wait on its lock for CPUs the neighbours hold). Root only; on a shared machine
run it under the suite's lock (each case also waits for iowall's machine lock to be free
before it induces anything):

    flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/explain_corpus.py \\
        [--kinds fsync,lock] [--repeat N] [--quiet-only] [--db FILE] [--json FILE]

Progress goes to stderr; the table to stdout; the JSON (every case with its ground truth,
wall, verdicts and explain's sentences) to --json (default explain-corpus.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.wall_corpus import KINDS, WALL_KINDS, Case, Kind, clean, run_case  # noqa: E402

SCORES = ("named", "partial", "wrong", "silent")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cell(cases: list[Case]) -> str:
    """One variant's cell: the scores over its repeats (``named`` or ``2 named, 1 wrong``)
    and what the wall was when it was not the expected one."""
    if not cases:
        return "–"
    counts = {s: sum(c.score == s for c in cases) for s in SCORES}
    text = ", ".join(f"{n} {s}" if len(cases) > 1 else s for s, n in counts.items() if n)
    others = sorted({(c.wall or {}).get("kind", "") for c in cases if c.score != "named"} - {""})
    return text + (f" ({', '.join(others)})" if others else "")


def truth_cell(cases: list[Case]) -> str:
    held = sum(c.truth.held for c in cases)
    return f"{held}/{len(cases)}" if cases else "–"


def _expected(kind: Kind) -> str:
    """The expected wall, and the one beside the neighbours when they change it."""
    return f"{kind.expected} ({kind.beside} beside the neighbours)" if kind.beside else kind.expected


def matrix(cases: list[Case], kinds: list[str]) -> str:
    rows = [
        "| kind | expected | quiet | neighbour | ground truth held (quiet, neighbour) |",
        "|---|---|---|---|---|",
    ]
    for k in kinds:
        q = [c for c in cases if c.kind == k and not c.neighbour]
        n = [c for c in cases if c.kind == k and c.neighbour]
        rows.append(
            f"| {k} | {_expected(KINDS[k])} | {cell(q)} | {cell(n)} | {truth_cell(q)}, {truth_cell(n)} |"
        )
    total = {s: sum(c.score == s for c in cases) for s in SCORES}
    rows.append("")
    rows.append(
        f"{len(cases)} cases: "
        + ", ".join(f"{n} {s}" for s, n in total.items())
        + f"; ground truth held in {sum(c.truth.held for c in cases)}"
    )
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument(
        "--kinds",
        default=",".join(WALL_KINDS),
        help=f"comma list of kinds (default all: {','.join(WALL_KINDS)})",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case (default 1)")
    ap.add_argument("--quiet-only", action="store_true", help="skip the neighbour variant")
    ap.add_argument("--db", help="the store (default: a fresh SQLite file in a temp dir)")
    ap.add_argument("--json", default="explain-corpus.json", help="where the cases go")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("explain_corpus needs root (cgroups, loop devices, sysctls)")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise SystemExit(f"unknown kinds {unknown}: choose from {','.join(WALL_KINDS)}")
    tmp = Path(tempfile.mkdtemp(prefix="iowall-corpus-bench-"))
    db = args.db or str(tmp / "corpus.db")
    before = clean()
    cases: list[Case] = []
    variants = (False,) if args.quiet_only else (False, True)
    todo = [(k, nb) for _ in range(args.repeat) for k in kinds for nb in variants]
    t0 = time.monotonic()
    for i, (k, nb) in enumerate(todo, 1):
        c = run_case(KINDS[k], db, tmp / "plans", neighbour=nb)
        cases.append(c)
        wall = (c.wall or {}).get("kind", "none")
        say(
            f"[{i}/{len(todo)}] {k}{' +neighbour' if nb else ''}: run {c.run_id}, "
            f"truth {'held' if c.truth.held else 'NOT held'}, wall {wall} -> {c.score} "
            f"({c.elapsed_s:.0f} s){'; ' + c.error if c.error else ''}"
        )
    after = clean()
    print(matrix(cases, kinds))
    print(f"\n{time.monotonic() - t0:.0f} s; store {db}")
    if after != before:
        print(f"\nNOT CLEAN afterwards: before {before}, after {after}")
    doc = {
        "kinds": {
            k: {
                "expected": KINDS[k].expected,
                "beside": KINDS[k].beside,
                "near": list(KINDS[k].near),
                "what": KINDS[k].what,
                "plan": KINDS[k].plan,
            }
            for k in kinds
        },
        "db": db,
        "cases": [c.as_json() for c in cases],
        "clean": after == before,
    }
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    say(f"cases written to {args.json}")


if __name__ == "__main__":
    main()
