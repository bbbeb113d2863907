"""explain's rule table on probe metrics recorded from real runs on this machine
(tests/fixtures/probes/runs, written by tests/fixtures/probes/record.py).

The machine is a shared 2-CPU VM: other processes' user time shows in the cpu probe, which
is why ``cpu-saturated`` fires on most runs. Rules no run here can trigger (a saturated
flusher, kswapd, the memory-copy ceiling, kernel time above 85% of both CPUs) are tested on
a recorded run's metrics with the named quantities replaced; each such test says so.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import pytest

from iowall.analysis.explain import (
    CONTEXT_KEYS,
    DERIVED,
    NO_RULE_FIRED,
    RULES,
    Verdict,
    explain,
    sentences,
    to_json,
)

RUNS = Path(__file__).parents[1] / "fixtures" / "probes" / "runs"


def run(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RUNS / f"{name}.json").read_text())
    return doc


def rules(vs: list[Verdict]) -> list[str]:
    return [v.rule for v in vs]


def test_throttled_buffered_write() -> None:
    r = run("buffered_throttled")
    m, c = r["metrics"], r["context"]
    vs = explain(m, c)
    # cpu-saturated may follow: the shared machine's CPUs had no idle time
    assert rules(vs)[0] == "writers-throttled"
    assert set(rules(vs)) <= {"writers-throttled", "cpu-saturated"}
    v = vs[0]
    pct = 100 * m["throttle_pause_s"] / (c["jobs"] * c["wall_s"])
    assert pct > 10
    assert f"{pct:.0f}%" in v.sentence
    assert f"{m['throttle_pause_s']:.2f} s" in v.sentence
    assert "dirty limit 32 MiB" in v.sentence
    assert v.evidence["throttled_share"] == pytest.approx(pct / 100, rel=1e-5)
    assert v.evidence["thresholds"] == {"throttled_share": ">= 0.1"}
    assert v.evidence["jobs"] == 2


def test_direct_write_at_its_ceiling_is_device_bound() -> None:
    r = run("direct_write")
    vs = explain(r["metrics"], r["context"])
    dev = next(v for v in vs if v.rule == "device-bound")
    assert "100% of the device's direct-I/O ceiling" in dev.sentence
    assert dev.evidence["direct_ceiling_bytes_per_s"] == r["context"]["direct_ceiling_bytes_per_s"]
    assert "writers-throttled" not in rules(vs)


def test_shared_directory_is_lock_contention_with_top_callers() -> None:
    r = run("meta_shared_dir")
    m, c = r["metrics"], r["context"]
    vs = explain(m, c, lock_rows=r["lock_rows"])
    lock = next(v for v in vs if v.rule == "lock-contention")
    top = max(r["lock_rows"], key=lambda x: x["total_wait_s"])
    assert top["caller"] in lock.sentence and top["type"] in lock.sentence
    share = m["lock_wait_total_s"] / (c["wall_s"] * c["cpus"])
    assert f"{100 * share:.0f}% of the run's" in lock.sentence
    assert lock.evidence["lock_wait_share"] == pytest.approx(share, rel=1e-5)
    # without the table the sentence still carries the top wait
    bare = next(v for v in explain(m, c) if v.rule == "lock-contention")
    assert f"the top caller waited {m['lock_top_wait_s']:.2f} s" in bare.sentence


def test_small_files_flusher_not_saturated_here() -> None:
    r = run("smallfiles")
    m = r["metrics"]
    assert 0 < m["flusher_cpu_share_max"] < 0.85 and m["throttle_pause_s"] == 0
    vs = explain(m, r["context"])
    assert not {"flusher-saturated", "writers-throttled"} & set(rules(vs))


def test_no_rule_fires_without_cpu_data() -> None:
    r = run("smallfiles")
    m = {k: v for k, v in r["metrics"].items() if not k.startswith("cpu")}
    vs = explain(m, r["context"])
    assert vs == [] and sentences(vs) == [NO_RULE_FIRED]


def test_cpu_saturated_on_the_shared_machine() -> None:
    r = run("buffered_cached")
    vs = explain(r["metrics"], r["context"])
    assert rules(vs) == ["cpu-saturated"]
    assert "the 2 CPUs were 100% busy" in vs[0].sentence


def test_kernel_cpu_bound_replaces_cpu_saturated() -> None:
    """buffered_cached with the other processes' user time given to the kernel (quiet box)."""
    r = run("buffered_cached")
    m = dict(r["metrics"], cpu_kernel_share=0.93, cpu_user_share=0.07)
    (v,) = explain(m, r["context"])
    assert v.rule == "kernel-cpu-bound"
    assert "93% of all 2 CPUs (1.86 CPUs)" in v.sentence


def test_flusher_saturated_replaces_writers_throttled() -> None:
    """buffered_throttled with the flusher's peak raised to a full CPU."""
    r = run("buffered_throttled")
    m = dict(r["metrics"], flusher_cpu_share_max=0.97)
    vs = explain(m, r["context"])
    assert rules(vs)[0] == "flusher-saturated" and "writers-throttled" not in rules(vs)
    assert "used up to 0.97 CPU" in vs[0].sentence
    assert f"({m['flusher_cpu_share']:.2f} on average)" in vs[0].sentence


def test_reclaim_rows() -> None:
    """buffered_cached with kswapd busy, then with direct reclaim instead."""
    r = run("buffered_cached")
    m = dict(r["metrics"], kswapd_cpu_share=0.62, kswapd_cpu_share_max=0.99,
             vm_pgscan_pages_per_s=90000.0, vm_pgsteal_pages_per_s=85000.0)
    v = next(v for v in explain(m, r["context"]) if v.rule == "reclaim-bound")
    assert "kswapd used 0.62 CPU" in v.sentence and "reclaiming 85000 pages/s" in v.sentence
    m2 = dict(r["metrics"], vm_allocstall_events_per_s=250.0, vm_pgsteal_pages_per_s=85000.0)
    v2 = next(v for v in explain(m2, r["context"]) if v.rule == "reclaim-bound")
    assert "direct reclaim 250 times/s" in v2.sentence
    assert sum(v.rule == "reclaim-bound" for v in explain({**m, **m2}, r["context"])) == 1


def test_memcopy_bound_and_thresholds_inclusive() -> None:
    """buffered_cached's throughput against a memory-copy ceiling set to 1.25x of it."""
    r = run("buffered_cached")
    tput = r["context"]["throughput_bytes_per_s"]
    c = dict(r["context"], memcopy_bytes_per_s=tput / 0.80)
    v = next(v for v in explain(r["metrics"], c) if v.rule == "memcopy-bound")
    assert "80% of the machine's memory-copy ceiling" in v.sentence
    c2 = dict(r["context"], memcopy_bytes_per_s=tput / 0.79)
    assert "memcopy-bound" not in rules(explain(r["metrics"], c2))


def test_device_bound_by_utilisation_without_a_ceiling() -> None:
    r = run("direct_write")
    ctx = {k: v for k, v in r["context"].items() if k != "direct_ceiling_bytes_per_s"}
    m = dict(r["metrics"], disk_util=0.95)
    v = next(v for v in explain(m, ctx) if v.rule == "device-bound")
    assert "busy 95% of the run" in v.sentence


def test_missing_context_does_not_fire() -> None:
    r = run("buffered_throttled")
    ctx = {k: v for k, v in r["context"].items() if k != "wall_s"}
    assert "writers-throttled" not in rules(explain(r["metrics"], ctx))
    assert explain({}, {}) == []


def test_table_refers_only_to_known_quantities() -> None:
    known = set(CONTEXT_KEYS) | set(DERIVED)
    for p in RUNS.glob("*.json"):
        known |= set(json.loads(p.read_text())["metrics"])
    for row in RULES:
        assert row.when, row.rule
        for cond in row.when:
            assert cond.key in known, (row.rule, cond.key)
            assert cond.op in (">=", "<=")
        fields = {f for _, f, _, _ in string.Formatter().parse(row.sentence) if f}
        assert fields <= known, (row.rule, fields - known)
        assert set(row.evidence) <= known, row.rule
        assert set(row.replaces) <= {r.rule for r in RULES}


def test_to_json_shape() -> None:
    r = run("buffered_throttled")
    vs = explain(r["metrics"], r["context"])
    doc = to_json(42, vs, [{"probe": "locks", "reason": "not requested"}])
    assert set(doc) == {"run", "verdicts", "skipped_probes"}
    assert doc["run"] == 42
    assert doc["verdicts"][0]["rule"] == "writers-throttled"
    assert set(doc["verdicts"][0]) == {"rule", "sentence", "evidence"}
    json.dumps(doc)
    assert to_json("r1", [])["verdicts"] == []
