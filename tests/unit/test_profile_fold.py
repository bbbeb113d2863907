"""Folding for the profile probe: perf script text through inferno-collapse-perf, the
[unknown] clean-up, the compressed artifact, perf's own sample count."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from iowall.analysis.explain.kernel_paths import decode_folded
from iowall.probes.profile import COLLAPSE, encode_folded, inferno_tool, recorded_samples, tidy_folded

FIX = Path(__file__).parents[1] / "fixtures" / "profile"


def test_tidy_merges_unknown_runs_and_sums() -> None:
    text = (
        "fio;[unknown];[unknown];[unknown];write;vfs_write_[k] 3\n"
        "fio;[unknown];write;vfs_write_[k] 2\n"
        "fio;get_io_u 1\n"
        "garbage line\n\n"
    )
    assert tidy_folded(text) == {"fio;[unknown];write;vfs_write_[k]": 5, "fio;get_io_u": 1}


def test_artifact_is_small_and_decodes() -> None:
    stacks = tidy_folded((FIX / "xfs_create_shared_dir.folded").read_text())
    body = encode_folded(stacks)
    assert decode_folded(body) == stacks
    assert len(body) < len((FIX / "xfs_create_shared_dir.folded").read_text()) / 3


def test_recorded_samples() -> None:
    log = (
        "[ perf record: Woken up 1 times to write data ]\n"
        "[ perf record: Captured and wrote 0.099 MB /tmp/x.data (164 samples) ]\n"
    )
    assert recorded_samples(log) == 164
    assert recorded_samples("perf: nothing") is None


@pytest.mark.skipif(inferno_tool(COLLAPSE) is None, reason="inferno not installed (make setup)")
def test_collapse_of_real_perf_script_output() -> None:
    text = (FIX / "perf_script_excerpt.txt").read_text()
    collapse = inferno_tool(COLLAPSE)
    assert collapse
    out = subprocess.run(
        [collapse, "--all", "--quiet"], input=text, capture_output=True, text=True, check=True
    ).stdout
    stacks = tidy_folded(out)
    samples = len(re.findall(r"cpu-clock:", text))
    assert sum(stacks.values()) == samples  # one count per sample, not nanoseconds
    for s in stacks:
        comm, *frames = s.split(";")
        assert comm in ("fio", "swapper")
        assert ";[unknown];[unknown]" not in s
    idle = [s for s in stacks if s.startswith("swapper;")]
    assert idle and all(s.endswith("pv_native_safe_halt_[k]") for s in idle)


def test_differential_pairs_threads_of_the_same_kind() -> None:
    from iowall.report.flame import by_thread_kind

    a = by_thread_kind(
        {
            "iou-wrk-2487;io_wq_worker_[k] 5": 0,
            "iou-wrk-2487;x_[k]": 3,
            "iou-wrk-99;x_[k]": 2,
            "kworker/u8:1-loop0;lo_rw_aio_[k]": 4,
        }
    )
    assert a == {
        "iou-wrk-N;io_wq_worker_[k] 5": 0,
        "iou-wrk-N;x_[k]": 5,
        "kworker/uN:N-loopN;lo_rw_aio_[k]": 4,
    }
