"""`iowall recover`: undo what crashed iowall processes left behind, machine-wide, now.

Every measuring command does this first; this command does it alone, for a box whose last
run was killed (a CI job timed out, a fleet host lost its controller) and that should be
clean before anything else uses it."""

from __future__ import annotations

from typing import Any

from ..machine import journal
from ..machine.machine_lock import exclusive, parse_wait
from ..machine.signals import interruptible
from .options import WaitOpt


def describe(action: dict[str, Any]) -> str:
    """One undo action in plain words."""
    kind = action.get("undo")
    if kind == "kill":
        pids = action.get("killed") or []
        what = action.get("what", "child")
        if not pids:
            return f"{what}: already gone (nothing to kill)"
        return f"killed {what} and all it forked (pid {', '.join(map(str, pids))})"
    if kind == "umount":
        return f"unmounted {action.get('path')}"
    if kind == "losetup":
        devs = action.get("detached") or []
        if not devs:
            return f"loop device on {action.get('backing', '')}: already detached"
        return f"detached {', '.join(devs)} ({action.get('backing', '')})"
    if kind == "write":
        return f"restored {action.get('path')} to {action.get('value')!r}"
    if kind in ("unlink", "rmdir", "rmtree"):
        return f"removed {action.get('path')}"
    return f"{kind} {action}"


def recover_cmd(wait: WaitOpt = None) -> None:
    """Undo what crashed iowall processes left: children, mounts, loop devices, images, knobs."""
    with exclusive("recover", parse_wait(wait)), interruptible():
        undone = journal.recover()
    for a in undone:
        print(f"{describe(a)} (left by pid {a.get('pid')})")
    print(
        f"recovered {len(undone)} step{'s' * (len(undone) != 1)}"
        if undone
        else "nothing to recover: no crashed iowall left anything behind"
    )
