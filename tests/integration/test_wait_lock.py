"""``--wait``: a measuring command queues behind the machine lock instead of refusing, says
who holds it, and gives up after its limit with one line (exit 2)."""

from __future__ import annotations

import fcntl
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iowall.cli.main import optional_values
from iowall.machine.machine_lock import lock_path, parse_wait
from iowall.vocab.errors import UserError
from tests.conftest import needs_root

pytestmark = [needs_root]
HOLDER = "pid 4242, iowall limits, since 2026-11-22 10:00:00"


def hold() -> int:
    """Take the machine lock as another measurement would, and write a holder line."""
    fd = os.open(lock_path(), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.ftruncate(fd, 0)
    os.pwrite(fd, HOLDER.encode(), 0)
    return fd


def recover(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "iowall")
    return subprocess.Popen(
        [exe, "recover", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_parse_wait() -> None:
    assert parse_wait(None) is None and math.isinf(parse_wait("forever") or 0)
    assert parse_wait("90") == 90 and parse_wait("5m") == 300 and parse_wait("1h") == 3600
    for bad in ("soon", "-1", "nan", "inf5", "5d"):
        with pytest.raises(UserError, match="--wait"):
            parse_wait(bad)
    assert optional_values(["run", "x", "--wait"]) == ["run", "x", "--wait=forever"]
    assert optional_values(["run", "--wait", "--quick", "x"])[1] == "--wait=forever"
    assert optional_values(["run", "--wait", "30", "x"]) == ["run", "--wait", "30", "x"]
    assert optional_values(["run", "--wait=2m"]) == ["run", "--wait=2m"]


def test_wait_refuse_give_up_and_queue(iowall_env: dict[str, str], tmp_path: Path) -> None:
    fd = hold()
    try:
        p = recover(iowall_env)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2 and len(err.strip().splitlines()) == 1, err
        assert HOLDER in err and "pass --wait" in err

        t0 = time.monotonic()
        p = recover(iowall_env, "--wait=1")
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2, err
        assert time.monotonic() - t0 >= 1.0
        assert f"waiting for the machine lock (at most 1 s): held by {HOLDER}" in err
        assert err.strip().splitlines()[-1].startswith("iowall: error: gave up waiting")

        p = recover(iowall_env, "--wait")
        threading.Timer(1.5, os.close, [fd]).start()
        fd = -1
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert f"waiting for the machine lock: held by {HOLDER}" in err
        assert "got the machine lock after" in err
    finally:
        if fd >= 0:
            os.close(fd)
    cp = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "iowall"), "run", "nope.toml", "--wait=soon"],
        env=iowall_env,
        capture_output=True,
        text=True,
    )
    assert cp.returncode == 2 and "--wait=soon" in cp.stderr
