"""SIGTERM during a shielded teardown with another thread alive: the kernel delivers it to the
thread that does not block it, Python runs the handler in the main thread anyway, inside the
teardown; it must not be swallowed there (a `limits` under `timeout 60` ran 9 minutes more),
but raised once the shield ends."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from iowall.machine.signals import interruptible, shielded
from iowall.vocab.errors import Interrupted


def test_a_signal_in_a_shielded_teardown_is_raised_when_it_ends() -> None:
    def later() -> None:  # a probe's thread: the signal is sent, and delivered, there
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    other = threading.Thread(target=later, daemon=True)
    swallowed = []
    with pytest.raises(Interrupted, match="SIGTERM"), interruptible():
        with shielded():
            other.start()
            try:  # teardown code that catches everything, waiting when the signal comes
                time.sleep(0.3)
            except Exception as e:  # noqa: BLE001
                swallowed.append(e)
        pytest.fail(f"the shield ended without the signal (swallowed: {swallowed})")
    other.join()
    assert swallowed == []


def test_an_error_leaving_the_shield_is_not_replaced() -> None:
    with pytest.raises(RuntimeError), interruptible(), shielded():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        raise RuntimeError("the teardown's own failure")
