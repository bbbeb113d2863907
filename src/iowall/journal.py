"""An undo journal on disk: every mount, loop device, image and knob iowall sets up is written
down before it exists and crossed out after it is gone, so a crash (even SIGKILL) can be undone
by the next start (``recover``)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .paths import state_dir

_counter = itertools.count()


def _dir() -> Path:
    d = state_dir() / "journal"
    d.mkdir(parents=True, exist_ok=True)
    return d


def add(action: dict[str, Any]) -> Path:
    """Record an undo action (``{"undo": "umount", "path": ...}``) and return its token."""
    p = _dir() / f"{os.getpid()}-{next(_counter):06d}.json"
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **action}))
    os.replace(tmp, p)
    return p


def done(token: Path) -> None:
    """Cross out an undo action once the thing is gone."""
    try:
        token.unlink()
    except FileNotFoundError:
        pass


def undo(action: dict[str, Any]) -> None:
    """Carry out one undo action; missing targets are fine (already gone)."""
    kind = action.get("undo")
    if kind == "umount":
        path = str(action["path"])
        if _is_mounted(path):
            r = subprocess.run(["umount", path], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", path], capture_output=True)
    elif kind == "losetup":
        dev, backing = str(action["device"]), str(action.get("backing", ""))
        if backing and _loop_backing(dev) != backing:
            return  # the device was reused by someone else
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    elif kind == "unlink":
        try:
            os.unlink(str(action["path"]))
        except FileNotFoundError:
            pass
    elif kind == "rmdir":
        try:
            os.rmdir(str(action["path"]))
        except (FileNotFoundError, OSError):
            pass
    elif kind == "rmtree":
        shutil.rmtree(str(action["path"]), ignore_errors=True)
    elif kind == "write":
        try:
            Path(str(action["path"])).write_text(str(action["value"]))
        except OSError:
            pass


def recover() -> list[dict[str, Any]]:
    """Undo, newest first, what processes that no longer exist left behind; returns what was undone."""
    undone: list[dict[str, Any]] = []
    for p in sorted(_dir().glob("*.json"), reverse=True):
        try:
            action = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            p.unlink(missing_ok=True)
            continue
        if _alive(int(action.get("pid", 0))):
            continue
        undo(action)
        undone.append(action)
        p.unlink(missing_ok=True)
    return undone


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_mounted(path: str) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == real for line in f)


def _loop_backing(dev: str) -> str:
    name = os.path.basename(dev)
    try:
        return Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    except OSError:
        return ""
