"""perf lock contention text (recorded here, and seed 000's tables) and the base/patched join."""

from __future__ import annotations

from pathlib import Path

import pytest

from iowall.analysis.regress.locks import fmt_wait, format_locks_table, join_contention
from iowall.probes.locks import bad_sequences, parse_contention, summarize, to_seconds

FIX = Path(__file__).parents[1] / "fixtures" / "probes"
RECORDED = (FIX / "raw" / "meta_shared_dir.perf-lock.txt").read_text()
SEED_A = (FIX / "seed000_perf_lock_default.txt").read_text()
SEED_B = (FIX / "seed000_perf_lock_patched.txt").read_text()


def test_units() -> None:
    assert to_seconds("64.69", "h") == pytest.approx(64.69 * 3600)
    assert to_seconds("14.96", "m") == pytest.approx(897.6)
    assert to_seconds("1.98", "s") == 1.98
    assert to_seconds("86.95", "ms") == pytest.approx(0.08695)
    assert to_seconds("769.04", "us") == pytest.approx(769.04e-6)
    assert to_seconds("812", "ns") == pytest.approx(812e-9)


def test_seed_000_table() -> None:
    rows = parse_contention(SEED_A)
    assert len(rows) == 10
    r0 = rows[0]
    assert (r0["contended"], r0["type"], r0["caller"]) == (1337359017, "spinlock", "rwsem_wake.isra.0+0x42")
    assert r0["total_wait_s"] == pytest.approx(64.69 * 3600)
    assert r0["max_wait_s"] == pytest.approx(769.04e-6)
    assert r0["avg_wait_s"] == pytest.approx(174.14e-6)
    assert r0["stack"][0] == "native_queued_spin_lock_slowpath+0x1f3"
    assert len(r0["stack"]) == 8
    assert [r["type"] for r in rows].count("mutex") == 1
    assert rows[-1]["caller"] == "bdev_release+0x69"


def test_recorded_table_from_this_kernel() -> None:
    rows = parse_contention(RECORDED)
    assert len(rows) > 5
    assert all(r["stack"] for r in rows[:5])
    assert not any("0x" == r["caller"][:2] for r in rows)
    # perf's warnings before the table and its debug trailer are not rows
    assert "=== output for debug" in RECORDED
    bad, total = bad_sequences(RECORDED)
    assert total > 0 and 0 <= bad <= total
    ms, notes = summarize(rows)
    m = {x.name: x.value for x in ms}
    assert m["lock_wait_total_s"] == pytest.approx(sum(r["total_wait_s"] for r in rows))
    assert m["lock_callers"] == len(rows)
    top = max(rows, key=lambda r: r["total_wait_s"])
    assert notes[0].startswith(f"top caller: {top['caller']} ({top['type']})")
    # create/unlink in one shared directory: the directory's i_rwsem is the contended lock
    assert any(r["type"] == "rwsem:W" and "down_write" in " ".join(r["stack"]) for r in rows)


def test_frames_without_symbols_are_dropped() -> None:
    text = (
        "        24    199.24 ms     30.18 ms      8.30 ms      rwsem:W   do_filp_open+0xc3\n"
        "\t\t\t0xffffffff821ffadf  rwsem_down_write_slowpath+0x37f\n"
        "\t\t\t0x7fd7b26cd9f0  \n"
    )
    (r,) = parse_contention(text)
    assert r["stack"] == ["rwsem_down_write_slowpath+0x37f"]


def test_join_seed_000_base_vs_patched() -> None:
    joined = join_contention(parse_contention(SEED_A), parse_contention(SEED_B))
    by = {(j.caller, j.type): j for j in joined}
    llseek = by[("blkdev_llseek+0x31", "rwsem:W")]
    assert (llseek.a.contended, llseek.b.contended) == (2665573, 1153627)
    assert llseek.delta_contended == 1153627 - 2665573
    assert llseek.delta_wait_s == pytest.approx((40.15 - 64.38) * 3600)
    # three spinlock rows with different stacks in the base table, none in the patched one
    spin = by[("blkdev_llseek+0x31", "spinlock")]
    assert spin.a.rows == 3 and spin.b.rows == 0
    assert spin.a.contended == 2556868 + 2512627 + 908184
    assert spin.a.total_wait_s == pytest.approx((6.78 + 3.75 + 1.52) * 60)
    assert spin.b.total_wait_s == 0 and spin.wait_ratio == 0
    # only in the patched table
    lru = by[("__lru_add_drain_all+0x3a", "mutex")]
    assert lru.a.contended == 0 and lru.b.contended == 773 and lru.wait_ratio is None
    # __remove_mapping+0x5d appears twice in the patched table (two stacks)
    assert by[("__remove_mapping+0x5d", "spinlock")].b.rows == 2
    waits = [max(j.a.total_wait_s, j.b.total_wait_s) for j in joined]
    assert waits == sorted(waits, reverse=True)
    assert joined[0].caller == "rwsem_wake.isra.0+0x42"


def test_format_table_fits_100_columns() -> None:
    joined = join_contention(parse_contention(SEED_A), parse_contention(SEED_B))
    text = format_locks_table(joined)
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 100
    assert len(lines) == 3 + len(joined)
    row = next(x for x in lines if "blkdev_llseek+0x31" in x and "rwsem:W" in x)
    assert "64.38 h" in row and "40.15 h" in row and "-24.23 h" in row and "-1511946" in row
    assert "folio_lruvec_lock_irqsave+0x64" in text or "folio_lruvec_lock_i" in text


def test_fmt_wait() -> None:
    assert fmt_wait(64.69 * 3600) == "64.69 h"
    assert fmt_wait(-0.00076904, signed=True) == "-769.04 us"
    assert fmt_wait(3.0, signed=True) == "+3.00 s"
    assert fmt_wait(0.0) == "0 ns"
