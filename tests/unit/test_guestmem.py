"""The guest-memory touch: spread over threads, and an interrupt mid-touch ends it cleanly
(the workers stop before the mapping goes: no BufferError, no write into unmapped memory)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowall.tuning import guestmem
from iowall.tuning.guestmem import CHUNK, GuestMemory, split, touch
from iowall.tuning.knob_session import KnobSession
from iowall.vocab.units import GIB


def test_touch_rounds_to_chunks_with_any_thread_count() -> None:
    assert touch(CHUNK - 1) == 0.0
    assert touch(5 * CHUNK, threads=3) > 0.0  # 5 chunks over 3 threads: 2, 2, 1


@pytest.mark.parametrize("chunks,n", [(5, 3), (1, 2), (8, 2), (7, 1), (2, 4)])
def test_the_workers_share_every_chunk_once(chunks: int, n: int) -> None:
    shares = split(chunks * CHUNK, n)
    offsets = sorted(o for s in shares for o in s)
    assert offsets == [i * CHUNK for i in range(chunks)]
    assert max(map(len, shares)) - min(map(len, shares)) <= 1  # evenly dealt


def test_an_interrupt_mid_touch_is_a_plain_keyboard_interrupt() -> None:
    # SIGINT raises KeyboardInterrupt as under iowall's CLI, also when this suite runs in a
    # background job, which starts everything with SIGINT ignored (CI did)
    code = (
        "import signal, sys; from iowall.tuning.guestmem import touch\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "print('go', flush=True)\n"
        "try:\n    touch(12 << 30, threads=2)\n"
        "except KeyboardInterrupt:\n    print('interrupted', flush=True); sys.exit(7)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline() == "go\n"
    time.sleep(0.3)  # 12 GiB take 2 s or more here
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 7 and out == "interrupted\n", (p.returncode, out, err)


def test_the_note_says_whether_iowall_held_reporting_or_found_it_held() -> None:
    held = GuestMemory("9", 20 * GIB, 40.0, 4 * GIB).note()
    assert "order 9" in held and "held off during the run (restored after)" in held
    assert "20.0 GiB of free memory touched once first, at 0.5 GiB/s" in held
    found = GuestMemory("11", 20 * GIB, 5.0).note()
    assert "reporting already held off" in found and "restored" not in found


def test_hold_memory_step_shows_its_step_and_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`limits`, `run` and `gate` hold guest memory through one helper: a step on the
    caller's progress, ended even when the touch fails."""
    from iowall.measure import session
    from iowall.tuning.knob_session import KnobSession
    from iowall.vocab.progress import Progress

    seen: list[str] = []

    class Shown(Progress):
        def begin(self, total: float) -> None:
            seen.append("begin")

        def step(self, description: str) -> None:
            seen.append(description)

        def end(self) -> None:
            seen.append("end")

    held = GuestMemory("6", 4 * GIB, 2.0)
    monkeypatch.setattr(session, "hold_guest_memory", lambda ks, need=None: held)
    with KnobSession() as ks:
        assert session.hold_memory_step(ks, Shown()) is held
    assert seen == ["begin", "end"]  # no step line: it would precede a run's one-line errors

    def fails(ks: KnobSession, need: int | None = None) -> None:
        raise OSError("no memory")

    monkeypatch.setattr(session, "hold_guest_memory", fails)
    seen.clear()
    with KnobSession() as ks, pytest.raises(OSError):
        session.hold_memory_step(ks, Shown())
    assert seen[-1] == "end"


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The touch record in a private file, the reporting order and the pending holds faked:
    ``state["order"]`` reads as the knob, ``state["holds"]`` as the journal's pending holds."""
    state: dict[str, object] = {"order": "11", "holds": {"E1"}}
    monkeypatch.setattr(guestmem, "TOUCHED", tmp_path / "guest-memory.json")
    monkeypatch.setattr(guestmem, "reporting_order", lambda: state["order"])
    monkeypatch.setattr(guestmem, "_holds", lambda: set(state["holds"]))  # type: ignore[call-overload]
    return state


def test_a_touch_serves_while_its_hold_lasts(record: dict[str, object]) -> None:
    assert guestmem.earlier_touch("11") is None  # nothing touched yet
    guestmem.mark_touch("E1", 20 * GIB)
    mark = guestmem.earlier_touch("11")
    assert mark is not None and mark["bytes"] == 20 * GIB and mark["hold"] == "E1"
    assert guestmem.earlier_touch("9") is None  # reporting was on when this command started
    record["order"] = "9"  # turned back on since (by hand): pages may have been reported
    assert guestmem.earlier_touch("11") is None
    record["order"] = "11"
    record["holds"] = {"E2"}  # the hold was restored and another one began: touch again
    assert guestmem.earlier_touch("11") is None
    record["holds"] = {"E1", "E2"}
    assert guestmem.earlier_touch("11") is not None


def test_a_record_of_another_boot_or_unreadable_serves_nothing(record: dict[str, object]) -> None:
    guestmem.TOUCHED.write_text(json.dumps({"boot": "not-this-boot", "hold": "E1", "bytes": 1, "at": 0}))
    assert guestmem.earlier_touch("11") is None
    guestmem.TOUCHED.write_text("{")
    assert guestmem.earlier_touch("11") is None


def test_hold_skips_the_touch_under_the_same_hold_and_says_so(
    record: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(guestmem, "touchable", lambda free: (4 * CHUNK, ""))
    touched: list[int] = []
    monkeypatch.setattr(guestmem, "touch", lambda n, threads=None: touched.append(n) or 1.0)
    monkeypatch.setattr(guestmem, "_hold_entry", lambda: "E1")
    ks = KnobSession()
    first = guestmem.hold_guest_memory(ks)
    assert first is not None and first.earlier_s is None and touched == [4 * CHUNK, 4 * CHUNK]
    again = guestmem.hold_guest_memory(ks)
    assert again is not None and again.earlier_s is not None and touched == [4 * CHUNK, 4 * CHUNK]
    assert "not touched again" in again.note() and "under the same hold" in again.note()
    record["holds"] = set()  # the hold ended: the next command touches
    assert guestmem.hold_guest_memory(ks).earlier_s is None  # type: ignore[union-attr]
    assert len(touched) == 4


def test_a_capped_touch_is_not_recorded(record: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(guestmem, "touchable", lambda free: (CHUNK, "touched only 64 MiB: memory cgroup"))
    monkeypatch.setattr(guestmem, "touch", lambda n, threads=None: 1.0)
    monkeypatch.setattr(guestmem, "_hold_entry", lambda: "E1")
    guestmem.hold_guest_memory(KnobSession())
    assert not guestmem.TOUCHED.exists()


def test_a_run_that_knows_its_need_touches_only_that(
    record: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`limits` says what it can allocate: only that is touched (pages freed under the hold
    are handed out before the reported ones); the record says the touch was partial, so a
    command that needs more, or does not know, touches again."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(guestmem, "meminfo", lambda: {"MemFree": 20 * GIB})
    monkeypatch.setattr(guestmem, "touchable", lambda free: (free, ""))
    touched: list[int] = []
    monkeypatch.setattr(guestmem, "touch", lambda n, threads=None: touched.append(n) or 1.0)
    monkeypatch.setattr(guestmem, "_hold_entry", lambda: "E1")
    ks = KnobSession()
    gm = guestmem.hold_guest_memory(ks, need=8 * GIB)
    assert gm is not None and touched[0] == 8 * GIB and gm.touched_bytes == 8 * GIB
    assert "what this run can allocate" in gm.note()
    mark = json.loads(guestmem.TOUCHED.read_text())
    assert mark["complete"] is False and mark["bytes"] == 8 * GIB
    assert guestmem.hold_guest_memory(ks, need=6 * GIB).earlier_s is not None  # type: ignore[union-attr]
    assert len(touched) == 2  # served by the 8 GiB touch
    assert guestmem.hold_guest_memory(ks, need=12 * GIB).earlier_s is None  # type: ignore[union-attr]
    assert touched[2] == 12 * GIB
    full = guestmem.hold_guest_memory(ks)  # does not know: all free memory but the margin
    assert full is not None and full.earlier_s is None and full.need == 0
    assert touched[4] == 20 * GIB - guestmem.KEEP_FREE
    assert "what this run can allocate" not in full.note()
    assert guestmem.hold_guest_memory(ks, need=30 * GIB).need == 0  # type: ignore[union-attr]
