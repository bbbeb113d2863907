"""`iowall explain` names each induced wall of the corpus (tests/wall_corpus.py): one quiet
case per kind, real `iowall run` of a 4 s plan inside the induced condition.

Each case asserts (a) that the ground truth held — the kernel's own counters show the wall
was really induced (cpu.stat throttling, blkio service bytes at the limit, memory.failcnt,
fio's fsync count, where the fio job threads slept) — and (b) that explain's ``wall.kind``
is the expected kind. A case whose ground truth fails says nothing about explain: it is
induced once more (``INDUCE_RETRIES`` in tests/wall_corpus.py), then fails on (a) with what
the counters said.

Root only (v1 cgroups, loop devices, mounts, sysctls); each induction is torn down by its
own context manager and the module checks nothing of its own is left behind. About 10 s per
case on a 2-CPU VM.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.wall_corpus import CG, KINDS, WALL_KINDS, clean, run_until_held

pytestmark = [
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups, loop devices, sysctls)"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
    pytest.mark.skipif(
        not (CG / "cpu" / "cpu.cfs_quota_us").exists()
        or not (CG / "memory" / "memory.limit_in_bytes").exists()
        or not (CG / "blkio").is_dir(),
        reason="needs the cgroup v1 cpu, memory and blkio controllers mounted at /sys/fs/cgroup/<controller>",
    ),
]


def _changed(before: dict[str, list[str]], after: dict[str, list[str]]) -> dict[str, object]:
    """What differs between two ``clean()``s: empty when nothing was left behind."""
    return {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}


@pytest.mark.parametrize("name", WALL_KINDS)
def test_explain_names_the_induced_wall(name: str, tmp_path: Path, db_url: str) -> None:
    kind = KINDS[name]
    case, missed = run_until_held(kind, db_url, tmp_path, clean, _changed)
    if not case.truth.held and kind.host_dependent:
        pytest.skip(f"{name}: this host's hardware did not make the wall: {case.truth.detail}")
    assert case.truth.held, (
        f"{name}: the wall was not induced in {len(missed)} tries: {'; then: '.join(missed)}; "
        f"job threads: {case.threads}"
    )
    got = (case.wall or {}).get("kind")
    assert got == kind.expected, (
        f"{name}: explain named {got!r}, expected {kind.expected!r} "
        f"({case.score}; wall {case.wall}; verdict rules "
        f"{[v.get('rule') for v in case.verdicts]}); ground truth: {case.truth.detail}"
    )
