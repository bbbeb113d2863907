"""An undo journal on disk: every mount, loop device, image, knob and long-running child iowall
sets up is written down before it exists and crossed out after it is gone, so a crash (even
SIGKILL) is undone by the next start (``recover``).

Entries live in the user's state directory; as root every such directory is also listed in a
machine-wide index (``/run/iowall/journals``), so recovery finds what any iowall process left,
whatever state directory it ran with (a test, a CI job, a fleet agent). Each entry carries the
boot it was made in: after a reboot the kernel has already dropped mounts, loop devices, knob
values and processes, so only files (images, work directories) are removed."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .atomic import write_text
from .dirs import state_dir

_counter = itertools.count()
#: The machine-wide index of journal directories (root only).
INDEX = Path("/run/iowall/journals")
#: Undo actions that only remove files: the only ones still due after a reboot.
FILE_ACTIONS = ("unlink", "rmdir", "rmtree")
_registered: set[str] = set()
_self: tuple[int, int] = (0, -1)  # (pid, start time) of this process, read once per pid


def journal_dir() -> Path:
    """This process's journal directory (``$XDG_STATE_HOME/iowall/journal``), created and, as
    root, listed in the machine-wide index."""
    d = state_dir() / "journal"
    d.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and str(d) not in _registered:
        INDEX.mkdir(parents=True, exist_ok=True)
        entry = INDEX / hashlib.sha1(str(d).encode()).hexdigest()[:16]
        if not entry.exists():
            write_text(entry, str(d), what="journal index entry")
        _registered.add(str(d))
    return d


def boot_id() -> str:
    """This boot's id (``/proc/sys/kernel/random/boot_id``)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def add(action: dict[str, Any]) -> Path:
    """Record an undo action (``{"undo": "umount", "path": ...}``) and return its token. Names
    sort by time, so recovery undoes the newest first across processes."""
    global _self
    if _self[0] != os.getpid():
        _self = (os.getpid(), start_time(os.getpid()))
    p = journal_dir() / f"{time.time_ns():020d}-{os.getpid()}-{next(_counter):06d}.json"
    write_text(
        p,
        json.dumps({"pid": _self[0], "pid_start": _self[1], "boot": boot_id(), **action}),
        what="journal entry",
    )
    return p


def done(token: Path) -> None:
    """Cross out an undo action once the thing is gone."""
    try:
        token.unlink()
    except FileNotFoundError:
        pass


@contextmanager
def scratch_dir(prefix: str) -> Iterator[str]:
    """A private temporary directory (``$TMPDIR/<prefix><random>``, mode 0700), journaled
    before it exists and removed on the way out: a process killed while using it (fio's job
    file, JSON and logs) leaves nothing the next ``recover`` does not remove, where a plain
    ``TemporaryDirectory`` was left behind by every SIGKILL."""
    path = os.path.join(tempfile.gettempdir(), f"{prefix}{secrets.token_hex(6)}")
    token = add({"undo": "rmtree", "path": path})
    try:
        os.mkdir(path, 0o700)
    except OSError:
        done(token)
        raise
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        done(token)


#: The environment variable that marks a child (and everything it forks) as iowall's.
MARK = "IOWALL_CHILD"


def child(what: str) -> tuple[Path, dict[str, str]]:
    """Journal a child **before** it is started, to be killed if iowall dies first: returns
    the token and the environment to start it with, whose mark (``MARK``) every process it
    forks inherits. Recovery kills the processes carrying the mark, so there is no moment
    between the start and the journal entry in which a SIGKILL could orphan it."""
    mark = f"{os.getpid()}-{time.time_ns()}-{next(_counter)}"
    token = add({"undo": "kill", "mark": mark, "what": what})
    return token, {**os.environ, MARK: mark}


def start_time(pid: int) -> int:
    """A process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with
    the pid it names one process, never a later one that reused the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[19])


def undo(action: dict[str, Any]) -> dict[str, Any]:
    """Carry out one undo action; missing targets are fine (already gone). Returns what it
    found worth saying (``{"killed": [pids]}`` for a kill, ``{"detached": [devices]}`` for a
    loop), the action left as it was."""
    kind = action.get("undo")
    if kind == "kill":
        return {"killed": _kill_marked(str(action["mark"])) if action.get("mark") else []}
    if kind == "umount":
        path = str(action["path"])
        if _is_mounted(path):
            r = subprocess.run(["umount", path], capture_output=True)
            if r.returncode != 0:
                subprocess.run(["umount", "-l", path], capture_output=True)
    elif kind == "losetup":
        backing = str(action.get("backing", ""))
        if "device" in action:
            devs = [str(action["device"])]
        else:  # journaled before losetup chose a device: the loops on this image and offset
            devs = [d for d in _loops() if backing and _loop_offset(d) == int(action.get("offset", 0))]
        mine = [d for d in devs if not backing or _loop_backing(d) == backing]  # not reused
        for dev in mine:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        return {"detached": mine}
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
    return {}


def marked(mark: str) -> list[int]:
    """Pids of the live processes whose environment carries ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0") and not _zombie(int(d.name)):
            out.append(int(d.name))
    return out


def _kill_marked(mark: str) -> list[int]:
    """SIGKILL every process carrying ``mark`` (a child and all it forked), until none is
    left (bounded), so its files and mounts are free; the pids killed, sorted."""
    killed: set[int] = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = marked(mark)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    return sorted(killed)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def journal_dirs() -> list[Path]:
    """This process's journal directory and, as root, every one in the machine-wide index
    (entries whose directory is gone are removed from the index)."""
    dirs = [journal_dir()]
    if os.geteuid() == 0 and INDEX.is_dir():
        for entry in sorted(INDEX.iterdir()):
            if entry.suffix == ".tmp":
                continue
            try:
                d = Path(entry.read_text().strip())
            except OSError:
                continue
            if not d.is_dir():
                entry.unlink(missing_ok=True)
            elif d not in dirs:
                dirs.append(d)
    return dirs


def pending() -> list[tuple[Path, dict[str, Any]]]:
    """Every journal entry machine-wide, newest first, with its action."""
    out = []
    for d in journal_dirs():
        for p in d.glob("*.json"):
            try:
                out.append((p, json.loads(p.read_text())))
            except (OSError, json.JSONDecodeError):
                p.unlink(missing_ok=True)
    out.sort(key=lambda e: e[0].name, reverse=True)
    return out


def recover() -> list[dict[str, Any]]:
    """Undo, newest first, what processes that no longer exist left behind, machine-wide;
    returns what was undone, each action with what its undo found (``undo``). Entries of an
    earlier boot only remove files."""
    undone: list[dict[str, Any]] = []
    boot = boot_id()
    for p, action in pending():
        same_boot = action.get("boot", boot) == boot
        if same_boot and alive(int(action.get("pid", 0)), int(action.get("pid_start", -1))):
            continue
        if same_boot or action.get("undo") in FILE_ACTIONS:
            undone.append({**action, **undo(action)})
        p.unlink(missing_ok=True)
    return undone


def alive(pid: int, start: int = -1) -> bool:
    """Whether the process that wrote an entry still runs (the same process: its start time
    matches when the entry recorded one)."""
    if pid <= 0:
        return False
    if start >= 0 and start_time(pid) != start:
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
    """The loop device's backing file; an unlinked one's path without " (deleted)"."""
    name = os.path.basename(dev)
    try:
        text = Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    except OSError:
        return ""
    return text.removesuffix(" (deleted)")


def _loop_offset(dev: str) -> int:
    try:
        return int(Path(f"/sys/block/{os.path.basename(dev)}/loop/offset").read_text())
    except (OSError, ValueError):
        return -1


def _loops() -> list[str]:
    """Every attached loop device (those with a backing file)."""
    return sorted(f"/dev/{p.parent.parent.name}" for p in Path("/sys/block").glob("loop*/loop/backing_file"))
