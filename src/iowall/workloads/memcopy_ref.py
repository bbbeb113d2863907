"""This machine's one-thread memory-copy rate, measured once per boot and kept until reboot.

`explain` calls a point's wall the memory copy only when its threads move bytes near the
rate this machine copies at (bytes per on-CPU second against the ceiling). `limits` measures
that ceiling beside its points; a plan or recipe run does not, so every run records this
reference instead: ``iowall-engine memcopy`` at one thread (the engine's best method, the
kernel's ``rep movsb`` among them), the best of three passes over 64 MiB, about 0.1 s here.
/run is a tmpfs: the figure is measured again after a reboot, never carried across kernels.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..machine.atomic import write_text
from ..vocab.errors import IowallError
from .engine import run_memcopy

CACHE = "/run/iowall/memcopy-ref.json"
BYTES = 64 << 20
PASSES = 3


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def reference(cache: str = CACHE) -> dict[str, Any] | None:
    """``{"threads": 1, "bytes_per_s", "bytes_per_thread", "passes", "method"}``, from the
    cache when it was measured since this boot, else measured now (and cached where /run is
    writable); None when the engine cannot run."""
    boot = _boot_id()
    try:
        with open(cache) as f:
            known = json.load(f)
        if boot and known.get("boot_id") == boot and isinstance(known.get("ref"), dict):
            return dict(known["ref"])
    except (OSError, ValueError, AttributeError):
        pass
    try:
        rec = run_memcopy(1, BYTES, passes=PASSES)
    except (IowallError, OSError):
        return None
    rate = rec.get("total_bytes_per_s")
    if not isinstance(rate, int | float) or rate <= 0:
        return None
    ref = {
        "threads": 1,
        "bytes_per_s": float(rate),
        "bytes_per_thread": BYTES,
        "passes": PASSES,
        "method": str(rec.get("best_method") or rec.get("method", "")),
    }
    if boot:
        try:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            write_text(cache, json.dumps({"boot_id": boot, "ref": ref}), what="memcopy cache")
        except (OSError, IowallError):
            pass
    return ref
