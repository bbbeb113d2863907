"""How often `iowall explain` names an induced wall: every kind of both corpora
(tests/wall_corpus.py and tests/wall_corpus2.py) run quiet and beside a busy neighbour, in
one confusion matrix as Markdown tables.

The first corpus's kinds are states of the workload: each case induces its wall (a cgroup
CPU quota, a blkio throttle, a memory cgroup limit, fsync after every write, queue depth 1,
tiny dirty limits, one shared file for eight writers, busy loops, fio's rate limit, reads of
the page cache, a loop bed on the virtio disk). The second corpus's kinds are mechanisms
inside a path or below the workload (request splitting, readahead off, merging off,
per-call cost, zram and btrfs compression, the ext4 journal commit, the btrfs log tree, the
XFS log force under O_SYNC, CPU affinity, request tags, a device shared with a neighbour,
the filesystem out of free space on XFS, btrfs and ext4);
what each should be named, its wall kind and mechanism, is in tests/corpus2_expected.toml,
and each case first runs the kind's control (the same plan without the condition).

Each case runs the kind's plan with ``iowall run`` inside its induction (I/O window 4 s,
one repeat), checks from the kernel's own counters (and, in the second corpus, against the
control's throughput) that the wall really was there (the ground truth), and scores
``iowall explain RUN --format json``:

- named: ``wall.kind`` is the expected kind (second corpus: and ``wall.mechanism`` the
  expected mechanism);
- partial: the kind is right but not the mechanism, or the expected kind is a verdict's rule
  but not the wall, or the wall is one of the kind's near names (memcg-reclaim vs reclaim …);
- wrong: a wall of another kind;
- silent: no wall (an explain JSON without a ``wall`` key counts as silent).

The neighbour variant adds one ``sh -c 'while :; do :; done'`` (nice 0) for the whole case
(the control run too); the expected wall stays the same unless the kind says otherwise
(``beside``: eight writers of one file wait on its lock for CPUs the neighbours hold). The
script holds the host's free page reporting off for its whole length, as the test suite's
session does (tests/conftest.py), so that the first run's touch of the guest's free memory
serves every later one. Root only; on a shared machine run it under the suite's lock (each
case also waits for iowall's machine lock to be free before it induces anything):

    flock /tmp/iowall-tests.lock .venv/bin/python benchmarks/explain_corpus.py \\
        [--corpus 1,2] [--kinds fsync,split] [--repeat N] [--quiet-only] [--db FILE] \\
        [--json FILE]

Progress goes to stderr; the tables to stdout; the JSON (every case with its ground truth,
wall, verdicts, explain's sentences and its timings) to --json (default
explain-corpus.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.wall_corpus import KINDS, WALL_KINDS, Case, Kind, run_case  # noqa: E402
from tests.wall_corpus2 import KINDS2, WALL_KINDS2, clean2, left_behind  # noqa: E402

SCORES = ("named", "partial", "wrong", "silent")
#: each corpus: its kinds, and those run on this machine in order
CORPORA: dict[int, tuple[dict[str, Kind], tuple[str, ...]]] = {
    1: (KINDS, WALL_KINDS),
    2: (KINDS2, WALL_KINDS2),
}


def corpus_of(kind: str) -> int:
    return next(n for n, (kinds, _) in CORPORA.items() if kind in kinds)


def kind_of(kind: str) -> Kind:
    return CORPORA[corpus_of(kind)][0][kind]


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def said(c: Case) -> str:
    """What explain named: ``kind`` or ``kind/mechanism`` ("none" without a wall)."""
    wall = c.wall or {}
    got = str(wall.get("kind") or "none")
    return f"{got}/{wall['mechanism']}" if wall.get("mechanism") else got


def cell(cases: list[Case]) -> str:
    """One variant's cell: the scores over its repeats (``named`` or ``2 named, 1 wrong``)
    and what the wall was when it was not the expected one."""
    if not cases:
        return "–"
    counts = {s: sum(c.score == s for c in cases) for s in SCORES}
    text = ", ".join(f"{n} {s}" if len(cases) > 1 else s for s, n in counts.items() if n)
    others = sorted({said(c) for c in cases if c.score != "named"} - {"none"})
    return text + (f" ({', '.join(others)})" if others else "")


def truth_cell(cases: list[Case]) -> str:
    held = sum(c.truth.held for c in cases)
    return f"{held}/{len(cases)}" if cases else "–"


def _expected(kind: Kind) -> str:
    """The expected wall (kind/mechanism in the second corpus), and the one beside the
    neighbours when they change it."""
    want = f"{kind.expected}/{kind.mechanism or '–'}" if kind.mechanism is not None else kind.expected
    return f"{want} ({kind.beside} beside the neighbours)" if kind.beside else want


def _seconds(cases: list[Case]) -> str:
    """The quiet cases' median time: control + condition (induction, run, ground truth)."""
    if not cases:
        return "–"
    c = sorted(cases, key=lambda c: c.control_s + c.condition_s)[len(cases) // 2]
    return f"{c.control_s:.0f} + {c.condition_s:.0f}" if c.control_s else f"{c.condition_s:.0f}"


def _scores(cases: list[Case]) -> str:
    return ", ".join(f"{sum(c.score == s for c in cases)} {s}" for s in SCORES)


def _counts(cases: list[Case]) -> str:
    """The scores of every case, and of the cases whose ground truth held: where the condition
    did not make its wall (a host too fast for it), the expected wall is not there to name, so
    those cases say more about the host than about explain."""
    held = [c for c in cases if c.truth.held]
    return f"{len(cases)} cases: {_scores(cases)}; ground truth held in {len(held)} ({_scores(held)})"


def matrix(cases: list[Case], kinds: list[str]) -> str:
    """One row per kind of both corpora, then the counts over both and per corpus."""
    rows = [
        "| corpus | kind | expected | quiet | neighbour | ground truth held (quiet, neighbour) "
        "| s (control + condition, quiet) |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in kinds:
        q = [c for c in cases if c.kind == k and not c.neighbour]
        n = [c for c in cases if c.kind == k and c.neighbour]
        rows.append(
            f"| {corpus_of(k)} | {k} | {_expected(kind_of(k))} | {cell(q)} | {cell(n)} "
            f"| {truth_cell(q)}, {truth_cell(n)} | {_seconds(q)} |"
        )
    rows.append("")
    rows.append(_counts(cases))
    for corpus in sorted({corpus_of(c.kind) for c in cases}):
        rows.append(f"corpus {corpus}: " + _counts([c for c in cases if corpus_of(c.kind) == corpus]))
    return "\n".join(rows)


def confusion(cases: list[Case]) -> str:
    """Expected wall kind (rows) against the kind explain named (columns), over the cases
    given (every case, or those whose ground truth held)."""
    want = sorted({c.expected for c in cases})
    got = sorted({str((c.wall or {}).get("kind") or "none") for c in cases})
    rows = ["| expected \\ named | " + " | ".join(got) + " |", "|---|" + "---|" * len(got)]
    for w in want:
        these = [c for c in cases if c.expected == w]
        counts = [sum(str((c.wall or {}).get("kind") or "none") == g for c in these) for g in got]
        rows.append(f"| {w} | " + " | ".join(str(n) if n else "·" for n in counts) + " |")
    return "\n".join(rows)


@contextmanager
def reporting_held() -> Iterator[None]:
    """Free page reporting held off for the whole benchmark (restored after), as the test
    suite's session holds it, and the free memory touched once under that hold, here, so that
    every `iowall run` of the benchmark is served by that touch instead of touching it again.
    Not left to the first run: the first case (cpu-quota) runs inside a 0.3-CPU cgroup, where
    the touch took 96-235 s of that case."""
    from iowall.tuning.guestmem import hold_guest_memory
    from iowall.tuning.knob_session import KnobSession

    with KnobSession() as ks:
        held = hold_guest_memory(ks)
        if held is not None and held.seconds:
            gib = held.touched_bytes / 2**30
            say(f"free memory touched once under the hold: {gib:.1f} GiB in {held.seconds:.0f} s")
        yield


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--corpus", default="1,2", help="which corpora: 1, 2 or 1,2 (default both)")
    ap.add_argument(
        "--kinds",
        help=f"comma list of kinds of the chosen corpora (default all: {','.join(WALL_KINDS)}; "
        f"{','.join(WALL_KINDS2)})",
    )
    ap.add_argument("--repeat", type=int, default=1, help="runs of each case (default 1)")
    ap.add_argument("--quiet-only", action="store_true", help="skip the neighbour variant")
    ap.add_argument("--db", help="the store (default: a fresh SQLite file in a temp dir)")
    ap.add_argument("--json", default="explain-corpus.json", help="where the cases go")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("explain_corpus needs root (cgroups, loop devices, sysctls, zram)")
    try:
        corpora = sorted({int(n) for n in args.corpus.split(",") if n.strip()})
    except ValueError:
        raise SystemExit(f"--corpus {args.corpus!r}: give 1, 2 or 1,2") from None
    if not corpora or set(corpora) - set(CORPORA):
        raise SystemExit(f"--corpus {args.corpus!r}: give 1, 2 or 1,2")
    known = [k for n in corpora for k in CORPORA[n][0]]
    if args.kinds:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    else:
        kinds = [k for n in corpora for k in CORPORA[n][1]]
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise SystemExit(f"unknown kinds {unknown}: choose from {','.join(known)}")
    dropped = [k for k in kinds if kind_of(k).dropped]
    for k in dropped:
        say(f"{k}: dropped ({kind_of(k).dropped}), not run")
    kinds = [k for k in kinds if k not in dropped]
    tmp = Path(tempfile.mkdtemp(prefix="iowall-corpus-bench-"))
    db = args.db or str(tmp / "corpus.db")
    before = clean2()
    cases: list[Case] = []
    variants = (False,) if args.quiet_only else (False, True)
    todo = [(k, nb) for _ in range(args.repeat) for k in kinds for nb in variants]
    t0 = time.monotonic()
    with reporting_held():
        for i, (k, nb) in enumerate(todo, 1):
            c = run_case(kind_of(k), db, tmp / "plans", neighbour=nb)
            cases.append(c)
            took = (
                f"{c.control_s:.0f} s control + {c.condition_s:.0f} s"
                if c.control_s
                else f"{c.elapsed_s:.0f} s"
            )
            say(
                f"[{i}/{len(todo)}] {k}{' +neighbour' if nb else ''}: run {c.run_id}, "
                f"truth {'held' if c.truth.held else 'NOT held'}, wall {said(c)} -> {c.score} "
                f"({took}){'; ' + c.error if c.error else ''}"
            )
    after = clean2()
    print(matrix(cases, kinds))
    print("\nExpected wall kind against the kind explain named (every case):\n")
    print(confusion(cases))
    print("\nThe same, over the cases whose ground truth held:\n")
    print(confusion([c for c in cases if c.truth.held]))
    print(f"\n{time.monotonic() - t0:.0f} s; store {db}")
    leftover = left_behind(before, after)
    if leftover:
        print(f"\nNOT CLEAN afterwards: {leftover}")
    doc = {
        "kinds": {
            k: {
                "corpus": corpus_of(k),
                "expected": kind_of(k).expected,
                "mechanism": kind_of(k).mechanism,
                "beside": kind_of(k).beside,
                "near": list(kind_of(k).near),
                "what": kind_of(k).what,
                "plan": kind_of(k).plan,
                "control": kind_of(k).control,
            }
            for k in kinds
        },
        "db": db,
        "cases": [{"corpus": corpus_of(c.kind), **c.as_json()} for c in cases],
        "clean": not leftover,
        "left_behind": {k: repr(v) for k, v in leftover.items()},
    }
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    say(f"cases written to {args.json}")


if __name__ == "__main__":
    main()
