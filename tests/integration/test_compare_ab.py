"""A real A/B on this machine: buffered-wall --quick three times; the side with a tiny
vm.dirty_bytes (a knob held for the whole recipe) must be marked significantly worse, the
A/A pair must mark nothing, and the knob is restored afterwards."""

from __future__ import annotations

import json

import pytest

from tests.conftest import iowall, needs_root

pytestmark = [needs_root, pytest.mark.slow]

DIRTY = "/proc/sys/vm/dirty_bytes"


def _run(env: dict[str, str], label: str, *extra: str) -> dict:
    cp = iowall("run", "buffered-wall", "--quick", "--set", "direct=0", "--repeat", "3",
                "--label", label, *extra, "--format", "json", env=env, timeout=600)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def test_tiny_dirty_bytes_is_worse_and_a_a_marks_nothing(iowall_env: dict[str, str],
                                                         no_leftovers: None) -> None:
    before = open(DIRTY).read()
    _run(iowall_env, "base")
    small = _run(iowall_env, "small-dirty", "--set", "sysctl:vm.dirty_bytes=1048576")
    assert open(DIRTY).read() == before, "the knob was not restored"
    assert all(r["knobs"] == {"sysctl:vm.dirty_bytes": "1048576"} for r in small["runs"])
    # the recipe's own report compares the labels it finds for its points
    assert small["compare"]["base"] == "base"
    _run(iowall_env, "again")

    doc = json.loads(iowall("compare", "base", "small-dirty", "--format", "json",
                            env=iowall_env, check=True).stdout)
    bw = [r for r in doc["rows"] if r["metric"] == "write_bw_bytes_per_s"]
    assert len(bw) == 1 and bw[0]["n_base"] == bw[0]["n_new"] == 3
    assert bw[0]["significant"] and bw[0]["better"] is False, bw[0]
    assert {"field": "sysctl vm.dirty_bytes", "values": ["0", "1048576"]} in doc["differences"]

    aa = json.loads(iowall("compare", "base", "again", "--format", "json", env=iowall_env,
                           check=True).stdout)
    assert aa["rows"] and not any(r["significant"] for r in aa["rows"]), aa["rows"]
