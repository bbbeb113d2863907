"""The ``df`` probe: the bed's filesystems at their fullest (statvfs), on recorded looks and
on a real directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iowall.probes import ProbeContext, ProbeSet, resolve
from iowall.probes.df import DfProbe, space, summarize

GIB = 2**30


def test_the_fullest_filesystem_at_its_fullest_look() -> None:
    # /b fills to 97% and is emptied again; /a stays half full; btrfs-like /c has no inodes
    looks = [
        (0.0, {"/a": (GIB, GIB // 2, 1000, 500), "/b": (GIB, GIB // 2, 2000, 1900)}),
        (1.0, {"/a": (GIB, GIB // 2, 1000, 500), "/b": (GIB, 32 * 2**20, 2000, 800)}),
        (2.0, {"/a": (GIB, GIB // 2, 1000, 500), "/b": (GIB, GIB // 4, 2000, 1200)}),
    ]
    series, metrics = summarize(looks)
    m = {x.name: x.value for x in metrics}
    assert m["df_used_share_max"] == pytest.approx(1 - 1 / 32)
    assert m["df_free_bytes_min"] == 32 * 2**20 and m["df_capacity_bytes"] == GIB
    assert m["df_free_bytes"] == GIB // 4  # /b's at the last look
    assert m["df_inodes_free_min"] == 800 and m["df_inodes_used_share_max"] == pytest.approx(0.6)
    (s,) = series
    assert [v for _, v in s.samples] == [GIB // 2, 32 * 2**20, GIB // 4]
    _, none = summarize([(0.0, {"/c": (GIB, GIB // 2, 0, 0)})])
    assert "df_inodes_used_share_max" not in {x.name for x in none}
    assert summarize([]) == ([], [])


def test_reads_a_real_directory(tmp_path: Path) -> None:
    cap, free, files, ffree = space(str(tmp_path))
    sv = os.statvfs(tmp_path)
    assert cap == sv.f_blocks * sv.f_frsize and 0 <= free <= cap and ffree <= files
    assert DfProbe(ProbeContext()).unavailable() == "no bed filesystem to watch"
    ps = ProbeSet(resolve("df"), ProbeContext(interval_s=0.05, mounts=(str(tmp_path),)))
    ps.start()
    (tmp_path / "f").write_bytes(b"x" * 2**20)
    (res,) = ps.stop()
    names = {m.name for m in res.metrics}
    assert not res.skipped and {"df_used_share_max", "df_free_bytes_min", "df_capacity_bytes"} <= names
    assert "df" in [c.name for c in resolve("default")]
