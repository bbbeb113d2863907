"""Knobs: settings applied for a run and always restored afterwards.

Syntax (the names plans and ``--set`` use):

``sysctl:vm.dirty_ratio``
    ``/proc/sys/vm/dirty_ratio``.
``sysfs:queue/max_sectors_kb``
    relative: an attribute of the bed's block device (``/sys/class/block/<dev>/queue/…``).
``sysfs:/sys/kernel/mm/transparent_hugepage/enabled``
    absolute: any writable file under ``/sys``.
``xfs:extsize``
    the XFS extent size hint of the bed's root directory (``xfs_io -c 'extsize 4k'``); new
    files and directories below it inherit it.
``mkfs`` / ``mount``
    mkfs and mount options: they shape the bed, so the bed is provisioned with them.

Every write is journaled with the old value *before* it happens (``iowall.machine.journal``), so a
crash, even SIGKILL, is undone by the next start's ``journal.recover()``; values are read back
after writing, and a value the kernel refuses is a UserError naming the knob and the value.
Selection files (``[none] mq-deadline``) are read as their bracketed choice and restored by it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..machine import journal
from ..machine.proc import need, run
from ..machine.signals import shielded
from ..vocab.errors import IowallError, UserError
from ..vocab.knob import (
    BARE,
    KINDS,
    PAIRS,
    SYNTAX,
    XFS_KNOBS,
    Knob,
    check_value,
    looks_like_knob,
    parse_knob,
)
from ..vocab.units import parse_size

if TYPE_CHECKING:
    from ..beds import Bed

#: Knob syntax (kinds, names, parsing) is in ``iowall.vocab.knob``: re-exported for the runners.
__all__ = [
    "BARE",
    "KINDS",
    "PAIRS",
    "SYNTAX",
    "XFS_KNOBS",
    "Knob",
    "KnobSession",
    "check_exists",
    "looks_like_knob",
    "parse_knob",
    "read_value",
    "device_sysfs_dir",
]


def check_exists(knob: Knob, values: Sequence[Any] = ()) -> None:
    """A UserError, before anything runs, for a global knob this kernel does not have or
    cannot write, and for any of ``values`` it would not take (``check_value``,
    ``check_against``)."""
    for v in values:
        check_value(knob, v)
    if knob.kind == "sysctl" or (knob.kind == "sysfs" and not knob.needs_bed):
        p = knob.path()
        if not os.path.isfile(p):
            raise UserError(f"unknown knob {knob}: {p} does not exist on this kernel")
        if not os.stat(p).st_mode & 0o222:
            raise UserError(f"knob {knob} is read-only ({p})")
        try:
            now = _read(p)
        except OSError as e:
            raise UserError(f"cannot read knob {knob} ({p}): {e.strerror}") from None
        for v in values:
            check_against(knob, now, v)


def check_against(knob: Knob, current: str, value: Any) -> None:
    """A UserError when ``value`` is not a choice of a selection file (``[none] mq-deadline``)
    or not a whole number for a file that holds one; ``current`` is the file's text."""
    choices = _choices(current)
    text = _text(value).strip()
    if choices and text not in choices:
        raise UserError(f"knob {knob} = {value!r}: not one of its choices ({', '.join(choices)})")
    if not choices and re.fullmatch(r"-?\d+", current.strip()) and not re.fullmatch(r"-?\d+", text):
        raise UserError(f"knob {knob} = {value!r}: give a whole number (it reads {current.strip()})")


def _choices(text: str) -> list[str]:
    """The words of a selection file, bracketed one included; [] for any other file."""
    if not re.search(r"\[[^\]]+\]", text):
        return []
    return [w.strip("[]") for w in text.split()]


def selected(text: str) -> str:
    """The value a knob file is in: its bracketed choice (``[none] mq-deadline`` → ``none``)
    or its whitespace-normalised text."""
    m = re.search(r"\[([^\]]+)\]", text)
    if m:
        return m.group(1).strip()
    return " ".join(text.split())


def device_sysfs_dir(bed: Bed | None, knob: Knob | str = "") -> str:
    """``/sys/class/block/<dev>`` of the bed's block device (its parent for a ``queue/``
    attribute of a partition)."""
    if bed is None or not bed.device:
        raise UserError(f"knob {knob} needs a bed with a block device (ram or loop)")
    name = os.path.basename(os.path.realpath(bed.device))
    d = Path("/sys/class/block") / name
    if str(getattr(knob, "name", "")).startswith("queue/") and not (d / "queue").is_dir():
        d = d.resolve().parent
    return str(d)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class _Applied:
    knob: Knob
    restore: dict[str, Any]  # a journal action: {"undo": "write", "path", "value"} or xfs
    token: Path | None


class KnobSession:
    """Knobs applied for one point and restored (in reverse) when the block ends, however it
    ends. ``in_force`` maps each knob's name to the value read back from the kernel."""

    def __init__(self, bed: Bed | None = None) -> None:
        self.bed = bed
        self.in_force: dict[str, str] = {}
        self._applied: list[_Applied] = []

    def __enter__(self) -> KnobSession:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.restore()

    # -- apply ----------------------------------------------------------------------------
    def set(self, knob: Knob, value: Any) -> str:
        """Apply one knob; returns the value in force (read back). Shielded from signals so
        that a knob is never written without being on the undo stack."""
        with shielded():
            if knob.kind in ("sysctl", "sysfs"):
                v = self._set_file(knob, _text(value))
            elif knob.kind == "xfs":
                v = self._set_extsize(knob, value)
            else:
                raise IowallError(f"{knob} is applied by provisioning the bed, not by a session")
        self.in_force[str(knob)] = v
        return v

    def _set_file(self, knob: Knob, value: str) -> str:
        path = knob.path(device_sysfs_dir(self.bed, knob) if knob.needs_bed else "")
        try:
            old_raw = _read(path)
        except FileNotFoundError:
            where = " of the bed's device" if knob.needs_bed else ""
            raise UserError(f"unknown knob {knob}{where}: {path} does not exist") from None
        except OSError as e:
            raise UserError(f"cannot read knob {knob} ({path}): {e.strerror}") from None
        check_value(knob, value)
        check_against(knob, old_raw, value)
        if knob.kind == "sysfs" and knob.name == "queue/max_sectors_kb":
            _check_max_sectors(knob, path, value)
        old = selected(old_raw)
        if old == selected(value):
            return old
        restore = {"undo": "write", "path": path, "value": old}
        if knob.kind == "sysctl" and knob.name in PAIRS:
            partner = Knob("sysctl", PAIRS[knob.name])
            try:
                pv = selected(_read(partner.path()))
            except OSError:
                pv = "0"
            if old == "0" and pv not in ("", "0"):
                restore = {"undo": "write", "path": partner.path(), "value": pv}
        token = journal.add(restore)
        try:
            _write(path, value)
        except OSError as e:
            journal.undo(restore)
            journal.done(token)
            raise UserError(
                f"the kernel refused {knob} = {value}: {e.strerror or e} (writing {path})"
            ) from None
        self._applied.append(_Applied(knob, restore, token))
        now = selected(_read(path))
        if now != selected(value):
            raise UserError(f"the kernel did not take {knob} = {value}: it reads back {now!r}")
        return now

    def _set_extsize(self, knob: Knob, value: Any) -> str:
        bed = self.bed
        if bed is None or not bed.path or bed.facts.get("fs") != "xfs":
            fs = bed.facts.get("fs", bed.spec.kind) if bed is not None else "no bed"
            raise UserError(f"knob {knob} needs an xfs bed (this bed is {fs})")
        try:
            want = parse_size(value if isinstance(value, (int, str)) else str(value), what=str(knob))
        except UserError:
            raise UserError(f"knob {knob} = {value!r}: give a size such as 4k, 1m or 0") from None
        old = read_extsize(bed.path)
        if old == want:
            return str(old)
        # The hint lives in the bed's filesystem, which teardown (or recover) destroys: the
        # restore is not journaled, only kept on this session's stack.
        restore = {"undo": "xfs_extsize", "path": bed.path, "value": old}
        r = _xfs_io(f"extsize {want}", bed.path)
        if r.returncode != 0:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise UserError(f"the kernel refused {knob} = {value}: {msg[-1] if msg else 'xfs_io failed'}")
        self._applied.append(_Applied(knob, restore, None))
        now = read_extsize(bed.path)
        if now != want:
            raise UserError(f"the kernel did not take {knob} = {value}: it reads back {now}")
        return str(now)

    # -- restore --------------------------------------------------------------------------
    def restore(self) -> None:
        """Restore every applied knob in reverse, shielded; the first failure is raised last
        (its journal entry stays, so the next start retries it)."""
        first: Exception | None = None
        with shielded():
            while self._applied:
                a = self._applied.pop()
                try:
                    if a.restore["undo"] == "xfs_extsize":
                        path = str(a.restore["path"])
                        if os.path.isdir(path):
                            _xfs_io(f"extsize {a.restore['value']}", path)
                    else:
                        _write(str(a.restore["path"]), str(a.restore["value"]))
                        now = selected(_read(str(a.restore["path"])))
                        if now != selected(str(a.restore["value"])):
                            raise IowallError(
                                f"could not restore {a.knob}: it reads {now!r}, not {a.restore['value']!r}"
                            )
                    if a.token is not None:
                        journal.done(a.token)
                except OSError as e:
                    first = first or IowallError(f"could not restore {a.knob} to {a.restore['value']!r}: {e}")
                except Exception as e:
                    first = first or e
        self.in_force.clear()
        if first is not None:
            raise first


def _check_max_sectors(knob: Knob, path: str, value: Any) -> None:
    """max_sectors_kb may not exceed the device's max_hw_sectors_kb (the kernel says EINVAL)."""
    try:
        hw = int(_read(os.path.join(os.path.dirname(path), "max_hw_sectors_kb")))
    except (OSError, ValueError):
        return
    if int(_text(value)) > hw:
        raise UserError(
            f"knob {knob} = {value}: out of range (this device takes at most max_hw_sectors_kb = {hw})"
        )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _xfs_io(cmd: str, path: str) -> Any:
    return run([need("xfs_io", "xfsprogs"), "-c", cmd, path], check=False)


def read_extsize(path: str) -> int:
    """The extent size hint of a file or directory on XFS, in bytes (0: none)."""
    r = _xfs_io("extsize", path)
    m = re.search(r"\[(\d+)\]", r.stdout)
    if r.returncode != 0 or not m:
        raise UserError(f"cannot read the extent size hint of {path}: {(r.stderr or r.stdout).strip()}")
    return int(m.group(1))


def read_value(knob: Knob, bed: Bed | None = None) -> str:
    """The value a knob is in now (bracketed choice for selection files)."""
    if knob.kind == "xfs":
        if bed is None:
            raise UserError(f"knob {knob} needs a bed")
        return str(read_extsize(bed.path))
    if knob.kind in BARE:
        if bed is None:
            return ""
        return str(bed.facts.get("mkfs_opts" if knob.kind == "mkfs" else "mount_opts", ""))
    return selected(_read(knob_path(knob, bed)))


def knob_path(knob: Knob, bed: Bed | None = None) -> str:
    """The file of a sysctl or sysfs knob, on ``bed``'s device for a relative attribute."""
    return knob.path(device_sysfs_dir(bed, knob) if knob.needs_bed else "")
