"""The throttle probe's parser on balance_dirty_pages events recorded on this kernel."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from iowall.probes.sampling import PAGE_SIZE
from iowall.probes.throttle import LINE, NEEDED_FIELDS, ThrottleStats, format_fields

FIX = Path(__file__).parents[1] / "fixtures" / "probes"
with gzip.open(FIX / "raw" / "buffered_throttled.trace.txt.gz", "rt") as _f:
    TRACE = _f.read().splitlines()
RUN = json.loads((FIX / "runs" / "buffered_throttled.json").read_text())


def test_format_file_of_this_kernel_has_the_fields() -> None:
    fields = format_fields((FIX / "raw" / "balance_dirty_pages.format").read_text())
    assert set(NEEDED_FIELDS) <= fields
    assert {"bdi", "paused", "period", "think", "wb_dirty", "common_pid"} <= fields


def test_every_recorded_line_parses() -> None:
    assert TRACE and all(LINE.match(x) for x in TRACE)


def test_totals_match_an_independent_count() -> None:
    st = ThrottleStats(t0=0.0, bdis=(RUN["bed"]["devno"],))
    for line in TRACE:
        st.feed(line)
    pauses = [int(p) for p in re.findall(r" pause=(-?\d+) ", "\n".join(TRACE))]
    positive = [p for p in pauses if p > 0]
    assert st.calls == len(pauses) and st.sleeps == len(positive)
    assert st.pause_ms == sum(positive)
    m = {x.name: x.value for x in st.metrics(lost=0)}
    # pause is in ms (pause * 1000 / HZ in include/trace/events/writeback.h)
    assert m["throttle_pause_s"] == pytest.approx(sum(positive) / 1000)
    assert m["throttle_events"] == len(positive)
    assert m["throttle_tasks"] == len(st.tasks) >= 1
    # the probe recorded the same numbers while the run went on
    assert m["throttle_pause_s"] == pytest.approx(RUN["metrics"]["throttle_pause_s"])
    assert m["throttle_events"] == RUN["metrics"]["throttle_events"]
    # vm.dirty_bytes was 32 MiB: limit=8192 pages
    assert m["throttle_limit_bytes"] == 32 << 20
    assert m["throttle_setpoint_bytes"] < m["throttle_limit_bytes"]
    limits = [int(x) for x in re.findall(r" limit=(\d+) ", "\n".join(TRACE))]
    setpoints = [int(x) for x in re.findall(r" setpoint=(\d+) ", "\n".join(TRACE))]
    assert m["throttle_limit_min_bytes"] == min(limits) * PAGE_SIZE
    assert m["throttle_setpoint_min_bytes"] == min(setpoints) * PAGE_SIZE
    table = st.table()
    assert sum(r["pause_s"] for r in table) == pytest.approx(m["throttle_pause_s"])  # type: ignore
    assert table[0]["comm"] == "fio"


def test_pause_share_cannot_exceed_the_writers_time() -> None:
    """A unit check: if pause were jiffies read as ms (or the reverse), this would break."""
    st = ThrottleStats()
    for line in TRACE:
        st.feed(line)
    wall = RUN["context"]["wall_s"]
    for t in st.tasks.values():
        assert t.pause_ms / 1000 <= wall
    assert st.pause_ms / 1000 / (wall * RUN["context"]["jobs"]) > 0.05


def test_series_buckets_by_interval() -> None:
    t0 = float(LINE.match(TRACE[0])["ts"]) - 0.5  # type: ignore[index]
    st = ThrottleStats(t0=t0, interval_s=1.0)
    for line in TRACE:
        st.feed(line)
    series = {s.name: s for s in st.series()}
    pause = series["throttle_pause_s_per_s"]
    assert sum(v for _, v in pause.samples) == pytest.approx(st.pause_ms / 1000)
    assert pause.samples[0][0] == 1.0
    assert sum(v for _, v in series["throttle_events_per_s"].samples) == st.sleeps
    assert all(v == 8192 * PAGE_SIZE for _, v in series["dirty_limit_bytes"].samples)


def test_other_devices_and_garbage_are_counted_not_summed() -> None:
    st = ThrottleStats(bdis=("7:99",))
    for line in TRACE:
        st.feed(line)
    st.feed("CPU:1 [LOST 12 EVENTS]")
    st.feed("   fio-1 [000] ..... 1.0: balance_dirty_pages: bdi 7:99: limit=x pause=4")
    assert st.calls == 0 and st.other_bdi == len(TRACE) and st.unparsed == 1


def test_limit_range_follows_the_events() -> None:
    st = ThrottleStats()
    for limit, setpoint in ((9000, 8000), (8192, 7000), (8500, 7500)):
        st.feed(
            f"   fio-1 [000] ..... 1.0: balance_dirty_pages: bdi 7:0: limit={limit} "
            f"setpoint={setpoint} dirty=7000 pause=0"
        )
    m = {x.name: x.value for x in st.metrics(lost=0)}
    assert (m["throttle_limit_min_bytes"], m["throttle_limit_bytes"]) == (8192 * PAGE_SIZE, 9000 * PAGE_SIZE)
    assert m["throttle_setpoint_min_bytes"] == 7000 * PAGE_SIZE
    assert {x.name: x.value for x in ThrottleStats().metrics(lost=0)}["throttle_limit_min_bytes"] == 0
