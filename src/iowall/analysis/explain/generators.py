"""Why two generators disagree on one point (pure): what each side's median run cost per byte it
moved — the CPU its own threads spent in user space and in the kernel, the kernel's copy to or
from user space among it (when the run carries the profile and threadstate probes), and whether
its I/O buffer starts on a page — and the sentence that names the measured cause, or says that
the run cannot tell. The measurements behind the rule are in docs/engine.md ("fio and the engine
on one buffered point"): fio's default buffer, 16 bytes past a page, took three to five times the
kernel's CPU per byte read out of the page cache on an AMD EPYC host."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...model import PROFILE_ARTIFACT, Run, primary_metric
from ...vocab.errors import UserError
from ...vocab.units import GIB, fmt_rate, parse_size
from .budget import compute
from .evidence import read
from .kernel_paths import decode_folded

#: One side's CPU per GiB differs from the other's when it is this much higher (relative).
DIFFERS = 0.10
#: A CPU difference is named the cause when it covers at least this share of the extra job time
#: per GiB of the slower side (the rest it waited: on 2 CPUs the kernel's extra copying also
#: takes the CPU the loop worker needs; fio's buffer off a page: 56% of its extra time in a cold
#: limits read, about 90% in a warm one).
COVERS = 0.25
#: The page size the buffers are held against.
PAGE = 4096


@dataclass(frozen=True)
class GeneratorCost:
    """One generator's median run of a point: what it moved and what that cost."""

    generator: str  # "fio" or "engine"
    jobs: int
    bytes: float
    bytes_per_s: float
    #: CPU seconds of the generator's own threads: user space and kernel (None: not recorded)
    user_s: float | None = None
    kernel_s: float | None = None
    #: of ``kernel_s``, the kernel's copy to or from user space (the profile's stacks)
    copy_s: float | None = None
    #: where user_s and kernel_s come from: "threadstate" (the I/O window) or "metrics"
    cpu_source: str = ""
    #: whether its I/O buffer starts on a page, and what says so (None: not known)
    on_page: bool | None = None
    buffer: str = ""

    def per_gib(self, secs: float) -> float:
        return secs / (self.bytes / GIB) if self.bytes else 0.0

    @property
    def job_s_per_gib(self) -> float:
        """Job time per GiB moved: the jobs' summed wall seconds for each GiB."""
        return self.jobs / self.bytes_per_s * GIB if self.bytes_per_s else 0.0

    @property
    def copy_bytes_per_s(self) -> float | None:
        return self.bytes / self.copy_s if self.copy_s else None

    def to_json(self) -> dict[str, Any]:
        gib = self.bytes / GIB if self.bytes else 0.0
        return {
            "generator": self.generator,
            "bytes": self.bytes,
            "user_s_per_gib": round(self.user_s / gib, 4) if self.user_s is not None and gib else None,
            "kernel_s_per_gib": round(self.kernel_s / gib, 4) if self.kernel_s is not None and gib else None,
            "copy_bytes_per_s": round(r) if (r := self.copy_bytes_per_s) else None,
            "cpu_source": self.cpu_source,
            "buffer_on_page": self.on_page,
            "buffer": self.buffer,
        }


def _artifact(run: Run, name: str) -> str | None:
    return next((a.body for a in run.artifacts if a.name == name), None)


def fio_buffer(jobfile: str) -> tuple[bool, str]:
    """Whether fio's I/O buffer starts on a page, from its job file: fio aligns it only for
    O_DIRECT, iomem_align (mem_align) or a mapped memory type (iomem=mmap, shm...); else it
    is malloc's, which glibc puts 16 bytes past a page for a buffer of 128 KiB and more."""
    opts: dict[str, str] = {}
    for line in jobfile.splitlines():
        k, eq, v = line.strip().partition("=")
        if eq and not k.startswith(("#", ";", "[")):
            opts[k.strip()] = v.strip()
    align_text = opts.get("iomem_align", opts.get("mem_align", "0"))
    try:
        align = parse_size(align_text)
    except UserError:
        align = 0
    if align % PAGE:
        return False, f"iomem_align={align_text} in its job"
    if align:
        return True, f"iomem_align={align_text} in its job"
    if opts.get("direct") == "1":
        return True, "direct=1"
    mem = opts.get("iomem", opts.get("mem", "malloc"))
    if mem != "malloc":
        return True, f"iomem={mem}"
    return False, "malloc'd: its job sets no iomem_align"


def engine_buffer(record: dict[str, Any]) -> tuple[bool, str]:
    """Whether the engine's buffer starts on a page, from its record (``buf_offset``)."""
    off = int(record.get("buf_offset") or 0)
    return (True, "page-aligned") if off == 0 else (False, f"{off} bytes past a page (--buf-offset)")


def generator_cost(run: Run, direction: str) -> GeneratorCost:
    """What ``run`` moved and what it cost its generator: CPU from the threadstate probe over
    the I/O window when the run has it (the copy from the profile's stacks), else from the
    generator's own accounting (fio's usr_cpu and sys_cpu are shares of its jobs' summed run
    time; the engine's user_s and sys_s are getrusage of its process)."""
    p = run.point.params
    gen = "engine" if p.get("kind") == "stream" else "fio"
    jobs = int(str(p.get("jobs", 1)))
    user = kernel = copy = None
    source = ""
    doc = _artifact(run, "threadstate.json")
    if doc is not None:
        folded = _artifact(run, PROFILE_ARTIFACT)
        try:
            stacks = decode_folded(folded) if folded is not None else None
        except (ValueError, OSError, EOFError):
            stacks = None
        ev = read(run, [run], primary_metric(run))
        b = (
            compute(ev.threadstate, ev.window, ev.window_source, stacks, ev.cpus)
            if ev.window and ev.threadstate
            else None
        )
        if b is not None:
            user, kernel, source = b.totals.get("user", 0.0), b.totals.get("kernel", 0.0), "threadstate"
            copy = b.kernel_paths.get("copy") if stacks else None
    if source == "":
        if gen == "engine":
            user, kernel = run.metric("engine_user_s"), run.metric("engine_sys_s")
        else:
            usr, sys_, rt = (
                run.metric("fio_usr_cpu_pct"),
                run.metric("fio_sys_cpu_pct"),
                run.metric(f"{direction}_runtime_s"),
            )
            if usr is not None and sys_ is not None and rt:
                user, kernel = usr / 100 * jobs * rt, sys_ / 100 * jobs * rt
        source = "metrics" if user is not None else ""
    on_page: bool | None = None
    buf = ""
    if gen == "fio":
        text = _artifact(run, "job.fio")
        if text is not None:
            on_page, buf = fio_buffer(text)
    else:
        body = _artifact(run, "engine.json")
        try:
            rec = json.loads(body) if body else None
        except ValueError:
            rec = None
        if isinstance(rec, dict):
            on_page, buf = engine_buffer(rec)
    return GeneratorCost(
        gen,
        jobs,
        run.metric(f"{direction}_io_bytes") or 0.0,
        run.metric(f"{direction}_bw_bytes_per_s") or 0.0,
        user,
        kernel,
        copy,
        source,
        on_page,
        buf,
    )


def _name(c: GeneratorCost) -> str:
    return "fio" if c.generator == "fio" else "the engine"


def _secs(x: float) -> str:
    return f"{x:.2f} s"


def disagreement(fio: GeneratorCost, engine: GeneratorCost, point: str, rw: str = "read") -> str:
    """The sentence under the agreement table for a point where the generators disagree:
    which side is slower and what its extra job time per GiB went to, as measured — the
    kernel's work on its behalf (its copy, its buffer's placement), its own user-space work —
    or that the run cannot tell."""
    slow, fast = (fio, engine) if fio.bytes_per_s < engine.bytes_per_s else (engine, fio)
    s, f = _name(slow), _name(fast)
    head = f"{point}: {s} is the slower"
    missing = [c for c in (slow, fast) if c.user_s is None or c.kernel_s is None or not c.bytes]
    if missing:
        who = " and ".join(_name(c) for c in missing)
        return f"{head}; the run cannot tell why: it has no CPU time of {who}."
    assert slow.user_s is not None and slow.kernel_s is not None
    assert fast.user_s is not None and fast.kernel_s is not None
    su, sk = slow.per_gib(slow.user_s), slow.per_gib(slow.kernel_s)
    fu, fk = fast.per_gib(fast.user_s), fast.per_gib(fast.kernel_s)
    extra = slow.job_s_per_gib - fast.job_s_per_gib
    words = "" if slow.cpu_source == fast.cpu_source == "threadstate" else " (the generators' own accounting)"
    cpu = (
        f"per GiB {s}'s jobs spent {_secs(sk)} in the kernel and {_secs(su)} in user space, "
        f"{f}'s {_secs(fk)} and {_secs(fu)}{words}"
    )
    d_kernel, d_user = sk - fk, su - fu
    if extra <= 0 or (sk + su) <= (fk + fu) * (1 + DIFFERS):
        return (
            f"{head} ({_secs(extra)} more job time per GiB); {cpu}: neither spent markedly more "
            "CPU per byte, so the difference is time off the CPU, and the run cannot tell why."
        )
    share = f"of {s}'s extra {_secs(extra)} of job time per GiB"
    if d_user >= d_kernel:
        if d_user < COVERS * extra:
            return (
                f"{head}; {cpu}: {s}'s extra {_secs(d_user)} of user CPU per GiB covers "
                f"{d_user / extra:.0%} {share}; the run cannot tell where the rest went."
            )
        return (
            f"{head}; {cpu}: the extra is {s}'s own user-space work ({_secs(d_user)} per GiB, "
            f"{d_user / extra:.0%} {share}), not the kernel's."
        )
    if d_kernel < COVERS * extra:
        return (
            f"{head}; {cpu}: the kernel's extra {_secs(d_kernel)} per GiB on {s}'s behalf covers "
            f"{d_kernel / extra:.0%} {share}; the run cannot tell where the rest went."
        )
    out = (
        f"{head}; {cpu}: the kernel worked {_secs(d_kernel)} more per GiB on {s}'s behalf "
        f"({d_kernel / extra:.0%} {share}), not {s}'s own code"
    )
    sr, fr = slow.copy_bytes_per_s, fast.copy_bytes_per_s
    if sr and fr:
        where = "into" if rw == "read" else "out of"
        out += (
            f"; it copied {where} {s}'s buffer at {fmt_rate(sr)} while copying, "
            f"{where} {f}'s at {fmt_rate(fr)}"
        )
    if slow.on_page is False and fast.on_page is True:
        out += (
            f"; {s}'s buffer does not start on a page ({slow.buffer}), {f}'s does ({fast.buffer}): "
            "see docs/engine.md, 'fio and the engine on one buffered point'"
        )
    elif slow.on_page is not None and slow.on_page == fast.on_page:
        where = "on a page" if slow.on_page else "off a page"
        out += f"; both buffers start {where}, so the run cannot tell why the kernel's work differed"
    return out + "."
