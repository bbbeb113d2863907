"""A real A/B on this machine: buffered-wall (buffered point only) under three labels; the
side with a small vm.dirty_bytes, 8 MiB (a knob held for the whole recipe), must be marked
significantly worse in write bandwidth, the A/A pair must not mark it, and the knob is
restored afterwards.

Five runs a side: with three, no rule can separate two sides at 95% (a rank test's smallest
two-sided p at 3:3 is 0.10). A 6 GiB bed: --quick's 1.5 GiB per point is written in
70-1200 ms, too short a window for a stable number on 2 CPUs (docs/compare.md). The A/A
check is on the compared metric: each row has its own <= 5% false-positive rate, so
asserting on every row would make the test flaky by design; and the one row is itself marked
5% of the time, so when it is, a second fresh A/A pair decides (a CI run failed on one marked
A/A row, 2026-11-27). Each pair is measured interleaved, one run an invocation (pairs of one
invocation a side were marked in three runs of three on 2026-12-03). No probes: the question
is compare's, and probes cost 40% of each run's time here.

Free page reporting is held off for the whole test and the first run touches the free memory
(``--hold-memory``), as in test_history_gate: a CI run failed with the base side at random
between host-fault and memory speed (a rerun on this VM measured 791/6053/1307/5430/1568 MiB/s,
the slow runs' io_uring workers copying at 0.5 GB/s per CPU), too wide for 5:5 to separate; on
held, touched memory 5257-6612 MiB/s against 304-437 with dirty_bytes at 1 MiB. 8 MiB, not 1:
each of its runs took 27 s at 266 MiB/s, 8 MiB 12 s at 707 MiB/s (one run each, not held),
still a seventh of the base side's; the test took 76 s alone against 131 (88-102 s in CI)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import iowall, needs_root, reporting_held_off

pytestmark = [needs_root, pytest.mark.slow]

DIRTY = "/proc/sys/vm/dirty_bytes"


def _run(env: dict[str, str], label: str, *extra: str, repeat: int = 5) -> dict:
    cp = iowall(
        "run",
        "buffered-wall",
        "--quick",
        "--set",
        "direct=0",
        "--set",
        "bed_size=6G",
        "--repeat",
        str(repeat),
        "--probes",
        "none",
        "--label",
        label,
        *extra,
        "--format",
        "json",
        env=env,
        timeout=900,
    )
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def test_tiny_dirty_bytes_is_worse_and_a_a_marks_nothing(
    iowall_env: dict[str, str], no_leftovers: None
) -> None:
    with reporting_held_off():
        _ab(iowall_env)


def _ab(iowall_env: dict[str, str]) -> None:
    before = open(DIRTY).read()
    # the A/A pair runs before the tiny dirty_bytes, not after: after it the writes of the
    # same point ran 19% slower (7843 -> 6324 MiB/s, interval [-27.9, -9.8]%), most likely as
    # the writeback bandwidth the kernel estimates for the bed's device (which sets how hard
    # writers past the freerun ceiling are throttled) carried down from the throttled run: a
    # real change of state, which compare rightly marked. And it is measured interleaved, one
    # run an invocation, side by side: compare takes each run as independent and, one
    # invocation a side, cannot see the machine's drift between invocations (docs/statistics.md,
    # "Runs of one invocation are not independent"). On 2026-12-03 a pair of one invocation
    # a side was marked in three runs of three (base 6780-8000 MiB/s right after the memory
    # touch, the next invocation 6557-7465): interleaved, the drift falls on both sides alike.
    _interleaved(iowall_env, "base", "again", "--hold-memory")
    if _marked(iowall_env, "base", "again"):
        # one A/A row is marked at the test's 5% by design: a second pair measured the same
        # way must then be left unmarked, so compare fails here only if it marks like sets
        # twice in a row (0.25%)
        _interleaved(iowall_env, "again-2", "again-3")
        second = _row(iowall_env, "again-2", "again-3")
        assert not second["significant"], (  # the figures of both pairs, for a failure
            f"two A/A pairs in a row were marked: {_row(iowall_env, 'base', 'again')} then {second}"
        )
    small = _run(iowall_env, "small-dirty", "--set", "sysctl:vm.dirty_bytes=8388608")
    assert open(DIRTY).read() == before, "the knob was not restored"
    assert all(r["knobs"] == {"sysctl:vm.dirty_bytes": "8388608"} for r in small["runs"])
    # the recipe's own report compares the labels it finds for its points
    assert small["compare"]["base"] == "base"

    doc = json.loads(
        iowall("compare", "base", "small-dirty", "--format", "json", env=iowall_env, check=True).stdout
    )
    fs = [r for r in doc["rows"] if r["metric"] == "write_bw_bytes_per_s"]
    assert len(fs) == 1 and fs[0]["n_base"] == fs[0]["n_new"] == 5
    assert fs[0]["significant"] and fs[0]["better"] is False, fs[0]
    assert {"field": "sysctl vm.dirty_bytes", "values": ["0", "8388608"]} in doc["differences"]


def _interleaved(env: dict[str, str], a: str, b: str, *first: str) -> None:
    """Five runs of label ``a`` and five of ``b``, one an invocation, taking turns; ``first``:
    options of the first invocation only."""
    for i in range(5):
        _run(env, a, *(first if i == 0 else ()), repeat=1)
        _run(env, b, repeat=1)


def _row(env: dict[str, str], a: str, b: str) -> dict:
    """compare's row of label ``b`` against ``a`` on the compared metric (one row)."""
    aa = json.loads(
        iowall(
            "compare", a, b, "--metric", "write_bw_bytes_per_s", "--format", "json", env=env, check=True
        ).stdout
    )
    assert len(aa["rows"]) == 1, aa["rows"]
    row: dict = aa["rows"][0]
    return row


def _marked(env: dict[str, str], a: str, b: str) -> bool:
    """Whether compare marks label ``b`` against ``a`` on the compared metric."""
    return bool(_row(env, a, b)["significant"])
