"""Why fio and the engine disagree on a point (analysis.explain.generators): each side's buffer from its
job file or record, its CPU per GiB from its metrics, and the sentence under the agreement
table naming the measured cause, or saying the run cannot tell."""

from __future__ import annotations

import dataclasses
import json

import pytest

from iowall.analysis.explain.generators import (
    GeneratorCost,
    disagreement,
    engine_buffer,
    fio_buffer,
    generator_cost,
)
from iowall.analysis.scaling.limits import summarise
from iowall.model import Artifact, Metric, Run
from iowall.vocab.units import GIB

from .test_limits_analysis import _point_runs

JOB = "[global]\nioengine=pvsync2\nbs=2m\nrw=read\ndirect=0\n{extra}\n[r0]\nfilename=a:b\n"


@pytest.mark.parametrize(
    ("extra", "on_page", "says"),
    [
        ("", False, "malloc'd: its job sets no iomem_align"),
        ("iomem_align=4096", True, "iomem_align=4096 in its job"),
        ("iomem_align=4k", True, "iomem_align=4k in its job"),
        ("iomem_align=64", False, "iomem_align=64 in its job"),
        ("mem_align=8192", True, "iomem_align=8192 in its job"),
        ("iomem=mmap", True, "iomem=mmap"),
        ("iomem=malloc", False, "malloc'd: its job sets no iomem_align"),
    ],
)
def test_fio_buffer_from_the_job_file(extra: str, on_page: bool, says: str) -> None:
    assert fio_buffer(JOB.format(extra=extra)) == (on_page, says)


def test_fio_buffer_direct_and_engine_buffer() -> None:
    assert fio_buffer(JOB.format(extra="").replace("direct=0", "direct=1")) == (True, "direct=1")
    assert engine_buffer({"mode": "stream"}) == (True, "page-aligned")
    assert engine_buffer({"buf_offset": 16}) == (False, "16 bytes past a page (--buf-offset)")


def _cost(gen: str, gib_s: float, user: float, kernel: float, **kw: object) -> GeneratorCost:
    """A side that moved 4 GiB with 2 jobs at ``gib_s``, with CPU seconds per GiB given."""
    return GeneratorCost(gen, 2, 4 * GIB, gib_s * GIB, user * 4, kernel * 4, cpu_source="metrics", **kw)  # type: ignore[arg-type]


def test_the_kernel_s_extra_work_and_the_buffer_are_named() -> None:
    fio = _cost("fio", 3.0, 0.05, 0.61, on_page=False, buffer="malloc'd: its job sets no iomem_align")
    eng = _cost("engine", 13.6, 0.0, 0.14, on_page=True, buffer="page-aligned")
    text = disagreement(fio, eng, "read 2 jobs")
    assert text.startswith("read 2 jobs: fio is the slower; per GiB fio's jobs spent 0.61 s in the kernel")
    assert "the kernel worked 0.47 s more per GiB on fio's behalf (90% of fio's extra 0.52 s" in text
    assert "not fio's own code" in text
    assert "fio's buffer does not start on a page (malloc'd: its job sets no iomem_align)" in text
    assert "the engine's does (page-aligned)" in text
    # with the copy's seconds from the profile: the rate while copying, each side
    fio2 = dataclasses.replace(fio, copy_s=4 * 0.55)
    eng2 = dataclasses.replace(eng, copy_s=4 * 0.11)
    copied = "it copied into fio's buffer at 1862MiB/s while copying, into the engine's at 9309MiB/s"
    assert copied in disagreement(fio2, eng2, "read 2 jobs")
    # both on a page: the kernel's extra work stays, its reason is not guessed
    same = disagreement(dataclasses.replace(fio, on_page=True), eng, "read 2 jobs")
    assert "both buffers start on a page, so the run cannot tell why the kernel's work differed" in same


def test_own_work_nothing_or_no_cpu_cannot_tell() -> None:
    eng = _cost("engine", 4.0, 0.0, 0.2)
    own = disagreement(_cost("fio", 3.0, 0.25, 0.2), eng, "read 2 jobs")
    assert "the extra is fio's own user-space work (0.25 s per GiB" in own and "not the kernel's" in own
    flat = disagreement(_cost("fio", 3.0, 0.0, 0.2), eng, "read 2 jobs")
    assert "neither spent markedly more CPU per byte" in flat and "the run cannot tell why" in flat
    small = disagreement(_cost("fio", 1.0, 0.0, 0.3), eng, "read 2 jobs")
    assert "covers 7% of fio's extra 1.50 s of job time per GiB; the run cannot tell where the rest" in small
    none = disagreement(dataclasses.replace(eng, user_s=None), _cost("fio", 5.0, 0.0, 0.2), "write 1 job")
    assert (
        none
        == "write 1 job: the engine is the slower; the run cannot tell why: it has no CPU time of the engine."
    )


def _enriched(runs: list[Run]) -> list[Run]:
    """The runs of a read point with what real ones carry: fio's CPU shares, the engine's
    getrusage, fio's job file (no iomem_align) and the engine's record."""
    out = []
    for r in runs:
        rw = str(r.point.params["rw"])
        if r.point.params.get("kind") == "stream":
            m = (Metric("engine_user_s", 0.004, "s"), Metric("engine_sys_s", 0.14, "s"))
            art = (
                Artifact("engine.json", "application/json", json.dumps({"mode": "stream", "buf_offset": 0})),
            )
        else:
            bw = r.metric(f"{rw}_bw_bytes_per_s") or 1.0
            rt = GIB / bw  # 1 GiB moved: its runtime; 2 jobs
            m = (
                Metric("fio_usr_cpu_pct", 0.05 / (2 * rt) * 100, "%"),
                Metric("fio_sys_cpu_pct", 0.61 / (2 * rt) * 100, "%"),
                Metric(f"{rw}_runtime_s", rt, "s"),
            )
            art = (Artifact("job.fio", "text/plain", JOB.format(extra="")),)
        out.append(dataclasses.replace(r, metrics=r.metrics + m, artifacts=art))
    return out


def disagreeing_runs() -> list[Run]:
    """A read point at 2 jobs where the engine reads 4.5x faster than fio (the warm case of
    docs/engine.md), and a write point where they agree."""
    spec = {
        ("write", "buffered", 2, ""): [1.0, 1.1, 0.9],
        ("write", "engine", 2, ""): [1.05, 1.0, 1.02],
        ("read", "buffered", 2, ""): [3.0, 3.1, 2.9],
        ("read", "engine", 2, ""): [13.6, 13.0, 13.9],
        ("read", "direct", 2, ""): [2.5] * 3,
    }
    return _enriched(_point_runs(spec))


def test_summary_explains_only_the_point_that_disagrees() -> None:
    s = summarise(disagreeing_runs(), cpus=2)
    write, read = s.agreement
    assert write.within and write.why == "" and write.costs is None
    assert not read.within and read.costs is not None
    fio, eng = read.costs
    assert fio.cpu_source == "metrics" and fio.per_gib(fio.kernel_s or 0) == pytest.approx(0.61)
    assert eng.per_gib(eng.kernel_s or 0) == pytest.approx(0.14)
    assert read.why.startswith("read 2 jobs: fio is the slower")
    assert "fio's buffer does not start on a page" in read.why


def test_generator_cost_without_anything_recorded() -> None:
    (r,) = _point_runs({("read", "engine", 1, ""): [2.0]})
    c = generator_cost(r, "read")
    assert c.generator == "engine" and c.user_s is None and c.on_page is None and c.cpu_source == ""
