"""The fleet's Ansible callback says what went wrong on a host in one line: a signal that
killed `iowall run` by its name, never the killed run's last progress line."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("ansible")

PLUGIN = Path(__file__).resolve().parents[2] / "fleet" / "callback_plugins" / "iowall_events.py"


def _plugin() -> Any:
    spec = importlib.util.spec_from_file_location("iowall_events", PLUGIN)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _msg(**result: Any) -> str:
    return str(_plugin()._msg(SimpleNamespace(_result=result)))


PROGRESS = "iowall: plan p: (fixed)  [4/6] — 50% done, 2 s in"


def test_a_killed_run_is_said_killed_with_its_last_real_line() -> None:
    said = _msg(rc=-9, stderr=f"iowall: measuring 6 runs\n{PROGRESS}\n")
    assert said == "killed by SIGKILL; its last line: iowall: measuring 6 runs"
    assert _msg(rc=-15, stderr=PROGRESS) == "killed by SIGTERM"


def test_a_failed_run_says_its_last_line_not_its_progress() -> None:
    assert _msg(rc=1, stderr=f"iowall: error: no space\n{PROGRESS}\n") == "iowall: error: no space"
    assert _msg(rc=2, msg="non-zero return code") == "non-zero return code"
