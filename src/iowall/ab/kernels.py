"""Where a kernel to boot comes from: an image path, a release under /boot, or a Debian
package fetched with ``apt-get download`` and unpacked (with its modules) into a cache
directory, so nothing is installed on the host."""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from ..machine import dirs
from ..vocab.errors import UserError


@dataclass(frozen=True)
class Kernel:
    """A bootable image and where its modules are (None: the image carries none we know of),
    and what is appended to the guest kernel's command line (``vng --append``)."""

    spec: str
    image: str
    release: str
    moddir: str | None
    source: str  # "path", "boot" or "deb"
    append: str = ""

    @property
    def name(self) -> str:
        """The release, and the appended options when there are any (``R+init_on_alloc=1``):
        the same image booted with and without them is two kernels, two labels."""
        return f"{self.release}+{'+'.join(self.append.split())}" if self.append else self.release


def split_spec(text: str) -> tuple[str, str]:
    """A kernel as ``ab --kernel`` and ``bisect`` take it, ``SPEC [OPTION...]``: the image
    path, release or Debian package, then (after white space) options appended to the guest
    kernel's command line. A UserError when there is no SPEC."""
    parts = text.split(None, 1)
    if not parts:
        raise UserError("an empty kernel: give IMAGE|RELEASE|DEB [KERNEL-OPTION...]")
    return parts[0], " ".join(parts[1].split()) if len(parts) > 1 else ""


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/iowall/ab`` (default ``~/.cache/iowall/ab``): unpacked kernels and
    each run's shared directories and consoles."""
    path = dirs.cache_dir() / "ab"
    path.mkdir(exist_ok=True)
    return str(path)


def is_bzimage(path: str) -> bool:
    """Whether ``path`` carries the x86 boot protocol's ``HdrS`` magic at offset 0x202."""
    try:
        with open(path, "rb") as f:
            f.seek(0x202)
            return f.read(4) == b"HdrS"
    except OSError:
        return False


def _release_of(image: str) -> str:
    """The release in a ``vmlinuz-RELEASE`` name, else the image's file name."""
    name = os.path.basename(image)
    for prefix in ("vmlinuz-", "bzImage-", "vmlinux-"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _moddir(root: str, release: str) -> str | None:
    for d in (f"{root}/lib/modules/{release}", f"{root}/usr/lib/modules/{release}"):
        if os.path.isdir(d):
            return d
    return None


@contextmanager
def _cache_locked(cache: str) -> Iterator[None]:
    """The kernel cache to this process alone: two `iowall ab` started together would
    otherwise both download a missing package and unpack it over each other."""
    fd = os.open(os.path.join(cache, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _deb_kernel(spec: str, cache: str) -> Kernel:
    """Fetch and unpack Debian package ``spec`` into ``cache/spec`` once; depmod there."""
    with _cache_locked(cache):
        return _fetched(spec, cache)


def _fetched(spec: str, cache: str) -> Kernel:
    root = os.path.join(cache, spec)
    images = glob.glob(f"{root}/boot/vmlinuz-*")
    if not images:
        missing = [t for t in ("apt-get", "dpkg-deb", "depmod") if shutil.which(t) is None]
        if missing:  # checked before the download, which would end unusable
            raise UserError(
                f"kernel {spec!r}: not a file nor a release under /boot, and "
                f"{'/'.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                "missing to fetch it as a Debian package"
                + (" (apt-get install kmod for depmod)" if "depmod" in missing else "")
            )
        dl = os.path.join(cache, ".download")
        os.makedirs(dl, exist_ok=True)
        got = subprocess.run(
            ["apt-get", "download", spec], cwd=dl, capture_output=True, text=True, check=False
        )
        debs = sorted(glob.glob(f"{dl}/{spec}_*.deb"))
        if got.returncode != 0 or not debs:
            last = (got.stderr.strip().splitlines() or ["no .deb written"])[-1]
            raise UserError(
                f"kernel {spec!r}: not a file nor a release under /boot, and "
                f"`apt-get download {spec}` failed: {last}"
            )
        tmp = root + ".part"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", debs[-1], tmp], check=True)
        os.replace(tmp, root)
        os.unlink(debs[-1])
        images = glob.glob(f"{root}/boot/vmlinuz-*")
        if not images:
            raise UserError(f"kernel {spec!r}: package holds no /boot/vmlinuz-*")
    image = sorted(images)[0]
    release = _release_of(image)
    moddir = _moddir(root, release)
    if moddir is not None and not os.path.exists(os.path.join(moddir, "modules.dep")):
        # Debian packages ship no modules.dep; built here, inside the cache only.
        if shutil.which("depmod") is None:
            raise UserError(
                f"kernel {spec!r}: its modules need indexing by depmod, which is "
                "missing (apt-get install kmod)"
            )
        subprocess.run(
            ["depmod", "-b", os.path.dirname(os.path.dirname(os.path.dirname(moddir))), release],
            check=False,
            capture_output=True,
        )
    return Kernel(spec, image, release, moddir, "deb")


def resolve(text: str, cache: str) -> Kernel:
    """A kernel from ``text``, ``SPEC [OPTION...]`` (``split_spec``): SPEC an image file (its
    modules next to it, as virtme-ng finds them), ``/boot/vmlinuz-SPEC``, or a Debian package
    name fetched into ``cache``; the options are appended to its command line."""
    spec, append = split_spec(text)
    return replace(_resolve(spec, cache), append=append)


def _resolve(spec: str, cache: str) -> Kernel:
    if os.path.isfile(spec):
        image = os.path.abspath(spec)
        release = _release_of(image)
        root = os.path.dirname(os.path.dirname(image))
        return Kernel(spec, image, release, _moddir(root, release), "path")
    boot = f"/boot/vmlinuz-{spec}"
    if os.path.isfile(boot):
        return Kernel(spec, boot, spec, _moddir("", spec), "boot")
    if "/" in spec:
        raise UserError(f"kernel {spec!r}: no such file")
    return _deb_kernel(spec, cache)
