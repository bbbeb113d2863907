"""The guest-memory touch: spread over threads, and an interrupt mid-touch ends it cleanly
(the workers stop before the mapping goes: no BufferError, no write into unmapped memory)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from iowall.guestmem import CHUNK, GuestMemory, split, touch
from iowall.units import GIB


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
        "import signal, sys; from iowall.guestmem import touch\n"
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
    """`limits` and `run --hold-memory` hold guest memory through one helper: a step on the
    caller's progress, ended even when the touch fails."""
    from iowall import session
    from iowall.knob_session import KnobSession
    from iowall.runner import Progress

    seen: list[str] = []

    class Shown(Progress):
        def begin(self, total: float) -> None:
            seen.append("begin")

        def step(self, description: str) -> None:
            seen.append(description)

        def end(self) -> None:
            seen.append("end")

    held = GuestMemory("6", 4 * GIB, 2.0)
    monkeypatch.setattr(session, "hold_guest_memory", lambda ks: held)
    with KnobSession() as ks:
        assert session.hold_memory_step(ks, Shown()) is held
    assert seen == ["begin", "guest memory: touching the free memory once", "end"]

    def fails(ks: KnobSession) -> None:
        raise OSError("no memory")

    monkeypatch.setattr(session, "hold_guest_memory", fails)
    seen.clear()
    with KnobSession() as ks, pytest.raises(OSError):
        session.hold_memory_step(ks, Shown())
    assert seen[-1] == "end"
