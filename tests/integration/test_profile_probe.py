"""The profile probe records a real perf profile around real fio, cleans up after itself, and
reports itself skipped (never failing the run) where perf is missing or refuses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowall.analysis.explain.kernel_paths import attribute, decode_folded
from iowall.beds import BedSpec, provision
from iowall.probes import DEFAULT_PROBES, ProbeContext, ProbeSet, resolve
from iowall.probes.profile import ARTIFACT, COLLAPSE, FREQ_HZ, ProfileProbe, inferno_tool
from tests.conftest import needs_root

HAVE = os.path.exists("/usr/bin/perf") and inferno_tool(COLLAPSE) is not None


def mounts() -> set[str]:
    return {line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()}


@needs_root
@pytest.mark.slow
@pytest.mark.skipif(not HAVE, reason="perf or inferno missing (make setup)")
def test_buffered_write_on_tmpfs_is_mostly_the_copy(tmp_path: Path, no_leftovers: None) -> None:
    assert "profile" in DEFAULT_PROBES
    before = mounts()
    with provision(BedSpec.parse("tmpfs"), size_bytes=2 << 30) as bed:
        ctx = ProbeContext(1.0, (), (), str(tmp_path))
        ps = ProbeSet(resolve("profile"), ctx)
        ps.start()
        t = time.monotonic()
        try:
            subprocess.run(
                [
                    "fio",
                    "--name=w",
                    f"--directory={bed.path}",
                    "--rw=write",
                    "--bs=1M",
                    "--size=512M",
                    "--time_based",
                    "--runtime=3",
                    f"--numjobs={os.cpu_count()}",
                    "--ioengine=psync",
                    "--output-format=terse",
                ],
                check=True,
                capture_output=True,
            )
        finally:
            wall = time.monotonic() - t
            (res,) = ps.stop()
    assert not res.skipped, res.skipped
    m = {x.name: x.value for x in res.metrics}
    expected = FREQ_HZ * (os.cpu_count() or 1) * wall
    assert 0.7 * expected < m["profile_samples"] < 1.3 * expected
    (art,) = res.artifacts
    assert art.name == ARTIFACT
    stacks = decode_folded(art.body)
    assert sum(stacks.values()) == m["profile_samples"]
    assert any(s.startswith("fio;") for s in stacks)
    att = attribute(stacks)
    assert att.ranked()[0].path == "copy", [(p.path, p.share) for p in att.ranked()]
    assert att.share("copy") > 0.4
    assert list(tmp_path.iterdir()) == []  # perf.data and its log removed
    assert mounts() == before  # perf mounted nothing (no tracefs left behind)
    assert any("perf.data was" in n for n in res.notes)


@needs_root
def test_skipped_without_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    ps = ProbeSet([ProfileProbe], ProbeContext(workdir=str(tmp_path)))
    ps.start()
    (res,) = ps.stop()
    assert res.skipped.startswith("perf not found")


@needs_root
@pytest.mark.skipif(not HAVE, reason="perf or inferno missing (make setup)")
def test_skipped_when_perf_refuses(tmp_path: Path) -> None:
    level = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    if level <= 0:
        pytest.skip("perf_event_paranoid <= 0: perf does not refuse here")
    code = (
        "from iowall.probes import ProbeSet, ProbeContext, resolve\n"
        "ps = ProbeSet(resolve('profile'), ProbeContext(workdir='/tmp'))\n"
        "ps.start(); print(ps.stop()[0].skipped)\n"
    )
    r = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": "/tmp", "XDG_STATE_HOME": str(tmp_path)},
        cwd="/",
    )
    if r.returncode != 0 and "Permission denied" in r.stderr:
        pytest.skip("the virtualenv is not readable by nobody")
    assert r.returncode == 0, r.stderr
    assert f"perf_event_paranoid={level}" in r.stdout
