"""Whether KVM really runs a guest here. /dev/kvm can exist and even create a VM on a CPU
without vmx/svm (a nested sandbox) while the first VEX instruction of a kernel's
decompressor stops it with "KVM internal error": only a real boot tells."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

from ..machine.atomic import write_text
from ..vocab.errors import UserError

#: What qemu prints when KVM cannot be used or cannot run the guest.
BROKEN = (
    "KVM internal error",
    "failed to initialize kvm",
    "Could not access KVM",
    "emulation failure",
    "kvm: No such file",
)
#: What a kernel prints once it runs (then it panics: no root, by design; panic=-1 ends qemu).
RAN = ("Linux version", "Kernel panic")
#: Answers kept until the host reboots (/run is a tmpfs): the check boots a kernel for 20 s
#: when KVM does not run guests, at every `ab`. Only answers that hold until then are kept
#: (``KvmCheck.keep``).
CACHE = "/run/iowall/kvm-check.json"


@dataclass(frozen=True)
class KvmCheck:
    """The answer and the evidence, one line each."""

    works: bool
    why: str
    #: the answer holds until reboot: a kernel booted under KVM, or did not on a CPU without
    #: vmx/svm. A failure on a CPU with them (KVM held by another hypervisor, a qemu error)
    #: may pass, and a missing /dev/kvm or qemu is cheap to see again: neither is kept.
    keep: bool = False


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _key(image: str) -> str:
    """What an answer holds for: this boot of the host, this image file as it is now."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        st = os.stat(image)
    except OSError:
        return ""
    return f"{boot} {os.path.realpath(image)} {st.st_size} {st.st_mtime_ns}"


def cached_check(image: str, timeout_s: float = 20.0, cache: str = CACHE) -> KvmCheck:
    """``check``, remembered per image until the host reboots; a cache that cannot be read
    or written is no cache."""
    key = _key(image)
    try:
        with open(cache) as f:
            known = json.load(f)
        hit = known.get(key) if key else None
        if isinstance(hit, dict):
            return KvmCheck(bool(hit["works"]), f"{hit['why']} (checked earlier since boot)")
    except (OSError, ValueError, KeyError, AttributeError):
        known = {}
    res = check(image, timeout_s)
    if res.keep and key and isinstance(known, dict):
        try:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            write_text(
                cache,
                json.dumps({**known, key: {"works": res.works, "why": res.why}}),
                what="KVM check cache",
            )
        except (OSError, UserError):
            pass
    return res


def check(image: str, timeout_s: float = 20.0) -> KvmCheck:
    """Boot ``image`` under ``qemu -accel kvm`` to its root-mount panic and watch the
    console: KVM works when the kernel printed its banner and qemu reported no KVM error."""
    virt = "vmx" in _cpu_flags() or "svm" in _cpu_flags()
    cpu = "CPU has vmx/svm" if virt else "CPU flags show no vmx/svm"
    if not os.path.exists("/dev/kvm"):
        return KvmCheck(False, f"no /dev/kvm ({cpu})")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return KvmCheck(False, f"/dev/kvm is not readable and writable by this user ({cpu})")
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        return KvmCheck(False, "qemu-system-x86_64 is not installed (scripts/setup-debs.sh)")
    argv = [
        qemu,
        "-accel",
        "kvm",
        "-cpu",
        "host",
        "-m",
        "256",
        "-smp",
        "1",
        "-net",
        "none",
        "-vga",
        "none",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        "stdio",
        "-monitor",
        "none",
        "-kernel",
        image,
        "-append",
        "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 root=/dev/nonexistent",
    ]
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        p = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            while p.poll() is None and time.monotonic() - t0 < timeout_s:
                time.sleep(0.25)
                out.seek(0)
                text = out.read().decode(errors="replace")
                if any(b in text for b in BROKEN) or "Kernel panic" in text:
                    break
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out.seek(0)
        text = out.read().decode(errors="replace")
    took = time.monotonic() - t0
    broken = next((b for b in BROKEN if b in text), None)
    if broken is not None:
        return KvmCheck(False, f"qemu -accel kvm: {broken!r} while booting {image} ({cpu})", keep=not virt)
    if any(r in text for r in RAN):
        return KvmCheck(True, f"a kernel booted under qemu -accel kvm in {took:.1f} s ({cpu})", keep=True)
    return KvmCheck(
        False,
        f"under qemu -accel kvm, {os.path.basename(image)} printed no "
        f"kernel banner in {took:.0f} s: the guest does not run ({cpu})",
        keep=not virt,
    )
