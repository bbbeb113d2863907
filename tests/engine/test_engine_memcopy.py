"""memcopy: the JSON is complete and sane, threads and methods are honoured."""

from __future__ import annotations

import platform

import pytest

X86 = platform.machine() in ("x86_64", "i686", "i386")


def check_method(m: dict, threads: int, per_pass: int) -> None:
    assert m["best_pass_s"] > 0
    assert len(m["per_thread_bytes_per_s"]) == threads
    assert all(x > 0 for x in m["per_thread_bytes_per_s"])
    # total = N * B * loops / wall of the slowest thread in the best pass
    assert m["total_bytes_per_s"] == pytest.approx(threads * per_pass / m["best_pass_s"], rel=1e-6)
    # no thread can be faster than the whole pass allows
    for x in m["per_thread_bytes_per_s"]:
        assert x >= per_pass / m["best_pass_s"] * (1 - 1e-6)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_best_measures_both_methods(run, threads: int) -> None:
    r = run("memcopy", "--threads", str(threads), "--bytes", "8M", "--passes", "3")
    assert r.rc == 0, r.stderr
    (rec,) = r.records
    assert rec["mode"] == "memcopy"
    assert rec["threads"] == threads
    assert rec["bytes_per_thread"] == 8 << 20
    assert rec["passes"] == 3
    assert rec["loops"] == 32  # auto: at least 256 MiB per pass
    assert rec["method"] == "best"
    per_pass = rec["bytes_per_thread"] * rec["loops"]
    methods = rec["methods"]
    assert set(methods) == ({"movsb", "memcpy"} if X86 else {"memcpy"})
    for m in methods.values():
        check_method(m, threads, per_pass)
        assert len(m["pass_s"]) == 3
        assert min(m["pass_s"]) == pytest.approx(m["best_pass_s"])
    best = max(methods, key=lambda k: methods[k]["total_bytes_per_s"])
    assert rec["best_method"] == best
    assert rec["total_bytes_per_s"] == methods[best]["total_bytes_per_s"]
    check_method(rec, threads, per_pass)
    # a copy from RAM on anything this runs on: more than 100 MB/s, less than 10 TB/s
    assert 1e8 < rec["total_bytes_per_s"] < 1e13


@pytest.mark.parametrize("method", ["movsb", "memcpy"])
def test_single_method(run, method: str) -> None:
    r = run("memcopy", "--threads", "2", "--bytes", "1M", "--passes", "2", "--loops", "4", "--method", method)
    assert r.rc == 0, r.stderr
    (rec,) = r.records
    expect = method if (X86 or method == "memcpy") else "memcpy"
    assert list(rec["methods"]) == [expect]
    assert rec["best_method"] == expect
    assert rec["loops"] == 4
    check_method(rec["methods"][expect], 2, (1 << 20) * 4)
    if not X86 and method == "movsb":
        assert "x86-only" in rec["note"]


def test_large_buffer_one_loop(run) -> None:
    r = run("memcopy", "--threads", "1", "--bytes", "256M", "--passes", "1", "--method", "movsb")
    assert r.rc == 0, r.stderr
    assert r.records[0]["loops"] == 1


def test_unallocatable_buffer_is_enomem(run) -> None:
    r = run("memcopy", "--threads", "1", "--bytes", "1T", "--passes", "1")
    assert r.rc == 1
    (rec,) = r.records
    assert rec["errno_name"] == "ENOMEM"
    assert rec["mode"] == "memcopy"
