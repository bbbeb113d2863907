"""Ansible stdout callback for `iowall fleet run`: one JSON line per host and task outcome.

The driver reads these lines as they come (a progress line per host, the error of a failed
or unreachable host) instead of parsing Ansible's human output. Every line is an object with
``event`` (task, ok, changed, failed, unreachable, skipped, end), ``host``, ``task`` and, for
failures, ``msg``: the most telling line of what went wrong (``stdout`` for successes, cut at
2000 characters: the fingerprint task prints the host's facts).
"""

from __future__ import annotations

import json
import signal
import sys

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: iowall_events
    type: stdout
    short_description: one JSON line per host and task, for iowall fleet run
    description: the event stream `iowall fleet run` reads
"""


def _lines(value):
    """Non-empty lines of a result field (a string or a list of strings)."""
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    return [s.strip() for s in str(value or "").splitlines() if s.strip()]


def _said(lines):
    """The lines a command said, without iowall's progress lines ("… — 50% done, 2 s in"):
    the last line of a killed run is its progress, which says nothing of what went wrong."""
    return [s for s in lines if "% done" not in s]


def _msg(result):
    """What went wrong, in one line: a signal that killed the command (with its last line),
    else the command's last stderr line, else Ansible's msg."""
    r = result._result
    rc = r.get("rc")
    if isinstance(rc, int) and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        last = _said(_lines(r.get("stderr")))
        return f"killed by {name}" + (f"; its last line: {last[-1]}" if last else "")
    for key in ("stderr", "module_stderr", "stdout"):
        lines = _said(_lines(r.get(key)))
        if lines and (key != "stdout" or rc):
            return lines[-1]
    for item in r.get("results", []) or []:
        if isinstance(item, dict) and item.get("failed"):
            return str(item.get("msg") or item.get("stderr") or "an item failed")
    return " ".join(_lines(r.get("msg"))) or "failed"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "iowall_events"

    def _emit(self, event, host="", task="", **extra):
        sys.stdout.write(json.dumps({"event": event, "host": host, "task": task, **extra}) + "\n")
        sys.stdout.flush()

    def _result(self, event, result, **extra):
        # the task's own name: get_name() prefixes the role ("run : iowall: run")
        self._emit(event, result._host.get_name(), result._task.name or result._task.get_name(),
                   **extra)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._emit("task", task=task.name or task.get_name())

    def v2_runner_on_ok(self, result):
        out = str(result._result.get("stdout") or "")[:2000]
        self._result("changed" if result._result.get("changed") else "ok", result, stdout=out)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result("failed", result, msg=_msg(result), ignored=bool(ignore_errors))

    def v2_runner_on_unreachable(self, result):
        self._result("unreachable", result, msg=_msg(result))

    def v2_runner_on_skipped(self, result):
        self._result("skipped", result)

    def v2_playbook_on_stats(self, stats):
        self._emit("end")
